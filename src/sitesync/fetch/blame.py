"""Whose trouble a bad answer is: the host's, or only its URL's.

A 429, a 503 or a timeout may say "this host is struggling", or only "this URL is slow"
(a search page, a large download, a broken endpoint on a healthy site). Only the first
should slow the host down; the second costs the URL its retries (frontier/retry.py) and
nothing else. The host's answers tell the two apart:

- **Each URL speaks once.** A URL that answered badly before and does again (its retries)
  adds nothing: it is already known to be in trouble. Its next good answer clears it.
- **Trouble across URLs is the host's.** Among the host's last :data:`WINDOW` answers that
  speak for it, the bad ones must come from several distinct URLs (two for a 429 or 503,
  the host's own words; three for timeouts, which a few slow URLs make on a healthy host)
  and be at least half of them. Good answers from other URLs in between outvote a few
  slow URLs; a host that answers "too much" to everything gets there within two answers.
"""

from __future__ import annotations

import collections

#: The host's last answers weighed (good ones, and each URL's first bad one).
WINDOW = 4
#: Distinct URLs with a bad answer among those that make the trouble the host's.
OVERLOAD_URLS = 2  # 429 or 503: the host says it is overloaded
TIMEOUT_URLS = 3  # timeouts: a few slow URLs on a healthy host time out too
#: URLs remembered per host as being in trouble (their repeated failures do not count
#: again). A host with more failing URLs than this is not "a few slow URLs" anyway.
TROUBLED_KEPT = 1000

_GOOD = ""  # a good answer, in the window (a URL is never empty)


class Blame:
    """The evidence of one host: its recent answers, and its URLs known to be in trouble."""

    __slots__ = ("_recent", "_troubled", "_unnamed")

    def __init__(self) -> None:
        self._recent: collections.deque[str] = collections.deque(maxlen=WINDOW)
        self._troubled: collections.OrderedDict[str, None] = collections.OrderedDict()
        self._unnamed = 0  # answers of no given URL so far

    def good(self, url: str | None) -> None:
        """The host answered ``url`` well (in good time, or at least not too much)."""
        self._recent.append(_GOOD)
        if url is not None and self._troubled:
            self._troubled.pop(url, None)

    def bad(self, url: str | None, *, timed_out: bool) -> bool:
        """``url`` got a 429/503 (or timed out); True when that is the host's trouble.

        ``url`` None (a caller that does not say) counts as a URL of its own each time.
        """
        if url is not None:
            if url in self._troubled:
                self._troubled.move_to_end(url)
                return False  # its retry: the URL is known to be in trouble
            self._troubled[url] = None
            if len(self._troubled) > TROUBLED_KEPT:
                self._troubled.popitem(last=False)
        if url is None:
            self._unnamed += 1
            url = f"#{self._unnamed}"
        self._recent.append(url)
        bad = [u for u in self._recent if u != _GOOD]
        needed = TIMEOUT_URLS if timed_out else OVERLOAD_URLS
        return len(set(bad)) >= needed and 2 * len(bad) >= len(self._recent)
