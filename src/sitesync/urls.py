"""URL normalization: the canonical string that identifies a page in the frontier.

Two URLs that a server would answer identically should normalize to the same string, and two
that it may answer differently must not. So the rules only ever apply RFC 3986 equivalences
(case of scheme and host, default ports, dot segments, percent-encoding of unreserved and of
illegal characters) plus two deliberate lossy steps: tracking parameters are dropped, because they
never select content and would otherwise multiply every page by every campaign that links to it;
and session identifiers (``?sid=…``, ``;jsessionid=…``) are dropped, because a site that mints a
fresh one for every link would otherwise turn each of its pages into endless copies (a crawler
trap). The session names are a setting (``session_params``); :func:`set_session_params` applies it.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from urllib.parse import quote

import idna

from sitesync.errors import InvalidURL

__all__ = [
    "DEFAULT_SESSION_PARAMS",
    "MAX_URL_LENGTH",
    "TRACKING_PARAMS",
    "TRACKING_PREFIXES",
    "LinkResolver",
    "normalize_url",
    "origin_of",
    "resolve_link",
    "same_site",
    "session_params",
    "set_session_params",
    "url_host",
]

#: Longer URLs are refused: servers commonly reject them anyway, and they bloat the store.
MAX_URL_LENGTH = 8192

TRACKING_PARAMS = frozenset(
    {"gclid", "fbclid", "dclid", "msclkid", "mc_cid", "mc_eid", "_ga", "_gl", "yclid", "igshid"}
)
TRACKING_PREFIXES = ("utm_",)

#: Query and path-parameter names that carry a session id (compared case-insensitively).
DEFAULT_SESSION_PARAMS = (
    "jsessionid",
    "phpsessid",
    "sid",
    "sessionid",
    "session_id",
    "aspsessionid",
    "cfid",
    "cftoken",
    "zenid",
    "oscsid",
)
_session_params: frozenset[str] = frozenset(DEFAULT_SESSION_PARAMS)
# ";name=value" inside a path segment (Java servlets' ";jsessionid=…").
_PATH_PARAM_RE = re.compile(r";([^/;=?#]+)=[^/;?#]*")

_DEFAULT_PORTS = {"http": 80, "https": 443}

# RFC 3986 appendix B, except that a scheme must look like one (so "1:2" stays a relative path,
# as in browsers). Every group is optional, so this matches any string.
_SPLIT_RE = re.compile(
    r"(?:([A-Za-z][A-Za-z0-9+.\-]*):)?(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#.*)?", re.DOTALL
)
_ESCAPE_RE = re.compile(r"%([0-9A-Fa-f]{2})")
_LONE_PERCENT_RE = re.compile(r"%(?![0-9A-Fa-f]{2})")
_BAD_HOST_CHAR_RE = re.compile(r"[\x00-\x20\x7f-\x9f\s]")
_ASCII_HOST_RE = re.compile(r"[a-z0-9_\-]+(?:\.[a-z0-9_\-]+)*")

# WHATWG strips exactly these from both ends of any URL, and drops tab/newline anywhere.
_C0_AND_SPACE = "".join(map(chr, range(0x21)))
_DROP_TAB_NEWLINE = str.maketrans("", "", "\t\n\r")

# pchar minus unreserved (quote() always keeps those): sub-delims change meaning when encoded,
# so they stay literal; everything else is either an escape already or must become one.
_PATH_SAFE = "/:@!$&'()*+,;=%"
_QUERY_SAFE = _PATH_SAFE + "?"
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def _clip(url: str) -> str:
    return repr(url if len(url) <= 200 else url[:200] + "…")


def _invalid(problem: str, url: str) -> InvalidURL:
    return InvalidURL(f"{problem}: {_clip(url)}")


def _fix_escape(match: re.Match[str]) -> str:
    char = chr(int(match.group(1), 16))
    return char if char in _UNRESERVED else "%" + match.group(1).upper()


def _normalize_component(text: str, safe: str) -> str:
    if "%" in text:
        # A "%" that starts no escape is a literal percent sign; encoding it first keeps the
        # escape pass from reading it together with whatever follows.
        text = _LONE_PERCENT_RE.sub("%25", text)
        text = _ESCAPE_RE.sub(_fix_escape, text)
    return quote(text, safe=safe)


def _remove_dot_segments(path: str) -> str:
    if "/." not in path:
        return path
    segments = path.split("/")[1:]
    out: list[str] = []
    for segment in segments:
        if segment == "..":
            if out:
                out.pop()
        elif segment != ".":
            out.append(segment)
    if segments[-1] in (".", ".."):
        out.append("")  # "/a/b/.." names the directory "/a/", not the file "/a"
    return "/" + "/".join(out)


def session_params() -> frozenset[str]:
    """The session-id parameter names normalization drops now (lowercase)."""
    return _session_params


def set_session_params(names: tuple[str, ...] | list[str] | frozenset[str]) -> None:
    """Drop these query and path parameters from every URL normalized from now on.

    A process-wide choice, made once from the settings before a crawl starts: the frontier
    compares normalized URLs, so every worker of a run must use the same list.
    """
    global _session_params
    wanted = frozenset(name.strip().lower() for name in names if name.strip())
    if wanted != _session_params:
        _session_params = wanted
        _normalize_cached.cache_clear()


def _is_tracking(key: str) -> bool:
    key = key.lower()
    return key in TRACKING_PARAMS or key.startswith(TRACKING_PREFIXES) or key in _session_params


def _drop_session_path_params(path: str) -> str:
    def keep_unless_session(match: re.Match[str]) -> str:
        return "" if match.group(1).lower() in _session_params else match.group(0)

    return _PATH_PARAM_RE.sub(keep_unless_session, path)


def _normalize_query(query: str) -> str:
    params: list[tuple[str, str, str]] = []
    for part in query.split("&"):
        if not part:
            continue
        key, sep, value = part.partition("=")
        # Normalize before testing so "utm%5Fsource" is recognised too.
        key = _normalize_component(key, _QUERY_SAFE)
        if not _is_tracking(key):
            # sep is kept so "?a" and "?a=" stay distinct: some servers tell them apart.
            params.append((key, sep, _normalize_component(value, _QUERY_SAFE)))
    params.sort()
    return "&".join(key + sep + value for key, sep, value in params)


def _to_ascii_host(host: str) -> str:
    try:
        return idna.encode(host, uts46=True).decode("ascii")
    except ValueError:
        pass
    # IDNA 2008 rejects a whole host for one label it dislikes (an underscore, an emoji) that
    # browsers still resolve; retry label by label, with IDNA 2003 as the lenient last resort.
    labels = []
    for label in idna.uts46_remap(host, std3_rules=False, transitional=False).split("."):
        if not label.isascii():
            try:
                label = idna.alabel(label).decode("ascii")
            except ValueError:
                label = label.encode("idna").decode("ascii")
        labels.append(label)
    return ".".join(labels)


@functools.lru_cache(maxsize=16384)
def _normalize_host(host: str) -> str:
    """The ASCII, lowercase form of a registered name or IP literal; ValueError names the fault."""
    if _BAD_HOST_CHAR_RE.search(host):
        raise ValueError("control character or whitespace in host")
    if host.startswith("["):
        literal = host[1:-1]
        if "%" in literal:  # a zone id means nothing off the machine that wrote it
            raise ValueError("invalid IPv6 host")
        try:
            return "[" + ipaddress.IPv6Address(literal).compressed + "]"
        except ValueError:
            raise ValueError("invalid IPv6 host") from None
    if not host.isascii():
        try:
            host = _to_ascii_host(host)
        except ValueError:
            raise ValueError("invalid internationalized host") from None
    host = host.lower()
    if host.endswith("."):
        host = host[:-1]
    if not _ASCII_HOST_RE.fullmatch(host) or len(host) > 253 or max(map(len, host.split("."))) > 63:
        raise ValueError("invalid host")
    return host


def _backslashes_to_slashes(url: str) -> str:
    # Browsers read "\" as "/" before the query in http(s) URLs, so links written that way
    # (old IIS sites) lead where the browser goes, not to a "%5C" path nobody serves.
    end = len(url)
    for delimiter in "?#":
        at = url.find(delimiter)
        if at != -1:
            end = min(end, at)
    return url[:end].replace("\\", "/") + url[end:]


def normalize_url(url: str) -> str:
    """The canonical form of an http(s) URL; raises InvalidURL when it cannot be crawled."""
    return _normalize_cached(url)


def _normalize_url(url: str) -> str:
    if len(url) > MAX_URL_LENGTH:
        raise _invalid(f"URL longer than {MAX_URL_LENGTH} characters", url)
    raw = url.strip(_C0_AND_SPACE)
    if "\\" in raw:
        raw = _backslashes_to_slashes(raw)
    match = _SPLIT_RE.match(raw)
    assert match is not None  # every group is optional
    scheme, authority, path, query = match.groups()
    scheme = (scheme or "").lower()
    if scheme not in _DEFAULT_PORTS:
        raise _invalid(f"unsupported scheme {scheme!r} (only http and https)", url)
    if not authority:
        raise _invalid("missing host", url)
    # Credentials must never become part of a page's identity (nor reach the store or logs).
    hostport = authority.rpartition("@")[2]
    if hostport.startswith("["):
        end = hostport.find("]") + 1
        if not end or (end < len(hostport) and hostport[end] != ":"):
            raise _invalid("invalid IPv6 host", url)
        host, port_text = hostport[:end], hostport[end + 1 :]
    else:
        host, _, port_text = hostport.partition(":")
    if not host:
        raise _invalid("missing host", url)
    try:
        host = _normalize_host(host)
    except ValueError as exc:
        raise _invalid(str(exc), url) from None
    if port_text:
        if not (port_text.isascii() and port_text.isdigit() and len(port_text) <= 5):
            raise _invalid("invalid port", url)
        port = int(port_text)
        if not 0 < port <= 65535:
            raise _invalid("invalid port", url)
        if port != _DEFAULT_PORTS[scheme]:
            host = f"{host}:{port}"
    if ";" in path and _session_params:
        path = _drop_session_path_params(path)
    try:
        path = _remove_dot_segments(_normalize_component(path, _PATH_SAFE)) or "/"
        query = _normalize_query(query) if query else ""
    except UnicodeEncodeError:
        raise _invalid("URL is not encodable as UTF-8", url) from None
    result = f"{scheme}://{host}{path}?{query}" if query else f"{scheme}://{host}{path}"
    if len(result) > MAX_URL_LENGTH:
        raise _invalid(f"URL longer than {MAX_URL_LENGTH} characters once encoded", url)
    return result


# Wrapped rather than decorated so callers keep a checked (str) -> str signature: an lru_cache
# object accepts any hashable, so mypy would let bytes or None through.
_normalize_cached = functools.lru_cache(maxsize=65536)(_normalize_url)


def resolve_link(base_url: str, href: str) -> str | None:
    """The normalized target of ``href`` found on ``base_url``, or None if it is not crawlable."""
    return LinkResolver(base_url).resolve(href)


class LinkResolver:
    """:func:`resolve_link` for the many links of one page: the base is normalized and split
    once, not once per link (link resolution is most of a page's extraction cost)."""

    __slots__ = ("_base", "_dir", "_origin", "_path", "_scheme")

    def __init__(self, base_url: str) -> None:
        try:
            base = _normalize_cached(base_url)
        # ValueError too: idna and ipaddress report with it (see resolve).
        except (InvalidURL, ValueError):
            self._base = None  # only absolute links resolve on this page
            return
        match = _SPLIT_RE.match(base)
        assert match is not None
        scheme, authority, path, _query = match.groups()
        self._base = base
        self._scheme = scheme
        self._origin = f"{scheme}://{authority}"
        self._path = path
        self._dir = path[: path.rfind("/") + 1]

    def resolve(self, href: str) -> str | None:
        """The normalized target of ``href``, or None if it is not crawlable."""
        try:
            return self._resolve(href)
        # ValueError too: idna and ipaddress report with it, and one that slipped past the
        # conversions must cost this link, not the whole page's links.
        except (InvalidURL, ValueError):
            return None

    def _resolve(self, href: str) -> str | None:
        href = href.strip(_C0_AND_SPACE)
        if "\t" in href or "\n" in href or "\r" in href:
            href = href.translate(_DROP_TAB_NEWLINE)
        if not href:
            return None
        if "\\" in href:
            href = _backslashes_to_slashes(href)
        if href[0] == "/" and href[1:2] != "/" and self._base is not None:
            # The common case, a path from the root: RFC 3986 section 5.2.2 leaves nothing
            # of the base but its origin; dot segments are normalize_url's. The fragment goes
            # first, so that "#section-2" links share the cached normalization of the page.
            return _normalize_cached(self._origin + href.partition("#")[0])
        match = _SPLIT_RE.match(href)
        assert match is not None
        scheme, authority, path, query = match.groups()
        if scheme is not None:
            # mailto:, javascript:, tel:, data:, ftp: ... are common; skip the exception.
            return _normalize_cached(href) if scheme.lower() in _DEFAULT_PORTS else None
        if self._base is None:
            raise InvalidURL("relative link on a page whose URL is not crawlable")
        if authority is not None:
            return _normalize_cached(f"{self._scheme}:{href}")
        # RFC 3986 section 5.2.2; dot segments are left to normalize_url.
        if not path:
            if query is None:
                return self._base  # a fragment alone: the page itself
            path = self._path
        elif not path.startswith("/"):
            path = self._dir + path
        target = self._origin + path
        return _normalize_cached(target if query is None else f"{target}?{query}")


def url_host(normalized_url: str) -> str:
    """The ``host[:port]`` of a URL that ``normalize_url`` produced: the politeness key."""
    start = normalized_url.find("//") + 2
    end = normalized_url.find("/", start)
    return normalized_url[start:] if end == -1 else normalized_url[start:end]


def origin_of(normalized_url: str) -> str:
    """``scheme://host[:port]`` of a URL that ``normalize_url`` produced."""
    return normalized_url[: normalized_url.index("/", normalized_url.index("//") + 2)]


def same_site(host: str, other: str) -> bool:
    """Whether two hosts are one site: equal but for ``www.``, or one under the other.

    Ports are ignored (``http://a`` and ``https://a:8443`` are one site).
    """
    a = _without_port(host).removeprefix("www.")
    b = _without_port(other).removeprefix("www.")
    if _is_ip_literal(a) or _is_ip_literal(b):
        return a == b  # addresses have no subdomains
    return a == b or a.endswith("." + b) or b.endswith("." + a)


def _is_ip_literal(host: str) -> bool:
    return host.startswith("[") or host.rsplit(".", 1)[-1].isdigit()


def _without_port(host: str) -> str:
    return host if host.endswith("]") else host.rsplit(":", 1)[0]
