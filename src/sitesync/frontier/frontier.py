"""The frontier of one run: scoping and dedup in front of the store's task state machine.

Candidates move DISCOVERED → PENDING only through :meth:`Frontier.admit`: a seed and a
link found in a page take the same path (scope, depth, dedup). The frontier never fetches
and never parses content; it is handed URLs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sitesync.errors import InvalidURL
from sitesync.frontier.scope import Scope
from sitesync.models import NewTask, Run
from sitesync.store.base import FrontierStore
from sitesync.urls import normalize_url, url_host

#: URLs remembered as in the run, per generation (two are kept): bounded memory however
#: long the crawl, and most links of a page point at pages discovered not long before.
KNOWN_URLS_PER_GENERATION = 20_000


class Frontier:
    def __init__(self, store: FrontierStore, run: Run) -> None:
        self.store = store
        self.run_id = run.id
        seeds = [normalize_url(seed) for seed in run.config.seeds]
        self.seeds = tuple(dict.fromkeys(seeds))
        self.scope = _scope_of(run, self.seeds)
        # Under max_pages a new URL can be turned away by the cap, so it is not known to be
        # in the run: only uncapped runs skip what they already admitted.
        self._known = KnownUrls() if run.config.max_pages is None else None

    def refresh(self, run: Run) -> None:
        """Pick up hosts another worker (or this one) added to the run's scope."""
        if run.config.extra_hosts and not set(run.config.extra_hosts) <= self.scope.seed_hosts:
            self.scope = _scope_of(run, self.seeds)

    def candidates(
        self, urls: Iterable[str], *, depth: int, found_from: int | None = None
    ) -> list[NewTask]:
        """Scope already-normalized URLs found at ``depth`` (on the page of task
        ``found_from``); duplicates in the batch dropped."""
        tasks: list[NewTask] = []
        seen: set[str] = set()
        known = self._known
        for url in urls:
            if url in seen or (known is not None and url in known):
                continue
            seen.add(url)
            host = url_host(url)
            if self.scope.admits(url, host, depth):
                tasks.append(NewTask(url=url, host=host, depth=depth, found_from=found_from))
        return tasks

    def admitted(self, tasks: Sequence[NewTask]) -> None:
        """``tasks`` are in the run now (a report carrying them was accepted): links to them
        are dropped here from now on instead of being sent to the store to be dropped there."""
        if self._known is not None:
            self._known.add_all(task.url for task in tasks)

    async def admit(self, urls: Iterable[str], *, depth: int) -> int:
        """Scope and admit URLs as PENDING; return how many were new to the run."""
        return await self.store.add_tasks(self.run_id, self.candidates(urls, depth=depth))

    async def seed(self) -> int:
        """Admit the run's seeds at depth 0 (a no-op for seeds already in the run)."""
        return await self.admit(self.seeds, depth=0)


class KnownUrls:
    """A bounded set of URLs: the newest of two generations is filled, then the older one
    is dropped. A URL forgotten is only sent to the store again, which drops it there."""

    __slots__ = ("_new", "_old")

    def __init__(self) -> None:
        self._new: set[str] = set()
        self._old: set[str] = set()

    def __contains__(self, url: str) -> bool:
        return url in self._new or url in self._old

    def add_all(self, urls: Iterable[str]) -> None:
        self._new.update(urls)
        if len(self._new) >= KNOWN_URLS_PER_GENERATION:
            self._old, self._new = self._new, set()


def _scope_of(run: Run, seeds: tuple[str, ...]) -> Scope:
    hosts = frozenset(url_host(s) for s in seeds) | frozenset(run.config.extra_hosts)
    return Scope.from_config(run.config, hosts)


def normalize_seeds(seeds: Iterable[str]) -> list[str]:
    """Normalize user-given seeds, raising ``InvalidURL`` naming the first bad one."""
    normalized = []
    for seed in seeds:
        try:
            normalized.append(normalize_url(seed.strip()))
        except InvalidURL as exc:
            raise InvalidURL(f"seed {seed!r} is not a crawlable URL: {exc}") from exc
    return normalized
