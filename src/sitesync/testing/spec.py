"""What a generated loopback site is: its shape, its addresses and the URL of every page."""

from __future__ import annotations

from dataclasses import dataclass

from sitesync.fetch.netpolicy import NetworkPolicy

#: Loopback, which crawls refuse by default: tests and benchmarks crawling a LoopbackSite open it
#: (``allowed_networks`` / ``SITESYNC_ALLOWED_NETWORKS``, or ``OPEN_LOOPBACK`` for a fetcher).
LOOPBACK_NETWORKS: tuple[str, ...] = ("127.0.0.0/8", "::1/128")
OPEN_LOOPBACK = NetworkPolicy.opening(*LOOPBACK_NETWORKS)

#: Loopback addresses the site links to but never listens on: a scoped crawler must not fetch them.
OUT_OF_SCOPE_IPS: tuple[str, ...] = tuple(f"127.0.0.{i}" for i in range(250, 255))


@dataclass(frozen=True)
class SiteSpec:
    """The shape of a generated site. Equal specs (and ports) give byte-identical sites."""

    hosts: int = 3
    pages_per_host: int = 50
    links_per_page: int = 25  # total <a> elements per page, special links included
    page_bytes: int = 20_000  # approximate body size; filler text pads pages up to it
    first_ip: int = 2  # hosts are 127.0.0.{first_ip} .. 127.0.0.{first_ip + hosts - 1}
    cross_host_links: bool = True
    variant_links: bool = True
    out_of_scope_links: bool = True
    delay: float = 0.0  # seconds every response is held back
    seed: int = 0
    # Validators (testing/validators.py): what pages send, and how the server honours them.
    etag: bool = False  # a strong ETag (of the body) on every page; If-None-Match honoured
    weak_etag: bool = False  # the same, weak (W/"...")
    last_modified: bool = False  # a fixed past Last-Modified; If-Modified-Since honoured
    future_last_modified: bool = False  # a Last-Modified a year ahead (a wrong clock)
    ignore_validators: bool = False  # never a 304: every request answered in full
    spurious_304: bool = False  # a 304 to each page's first request that asked nothing

    def __post_init__(self) -> None:
        if self.hosts < 1 or self.pages_per_host < 1:
            raise ValueError("a site needs at least one host with at least one page")
        # The site must stay clear of 127.0.0.250+, which are the out-of-scope addresses.
        if self.first_ip < 1 or self.first_ip + self.hosts - 1 >= 250:
            raise ValueError("hosts must fit in 127.0.0.1 .. 127.0.0.249")
        if self.links_per_page < 0 or self.page_bytes < 0 or self.delay < 0:
            raise ValueError("links_per_page, page_bytes and delay must not be negative")

    def ip(self, host_index: int) -> str:
        return f"127.0.0.{self.first_ip + host_index}"


@dataclass(frozen=True)
class RequestRecord:
    """One request the site received."""

    host: str  # the Host header, or the local socket's host:port when there was none
    path: str  # path and query exactly as received
    started: float  # time.monotonic() when the handler started
    finished: float  # time.monotonic() when the handler returned
    user_agent: str
    worker: str = ""  # the X-Sitesync-Worker header (sent with worker_id_header on)
    if_none_match: str = ""  # the conditional request's headers, as received
    if_modified_since: str = ""
    status: int = 0  # the status answered
    body_bytes: int = 0  # the body's bytes sent (0 for a 304)


def page_path(index: int) -> str:
    """The path of page ``index`` of any host: the root is page 0."""
    return "/" if index == 0 else f"/p/{index}.html"


def page_urls(spec: SiteSpec, port: int) -> list[str]:
    """Every in-scope page URL of the site, in normalized form (lowercase, explicit port)."""
    return [
        f"http://{spec.ip(h)}:{port}{page_path(i)}"
        for h in range(spec.hosts)
        for i in range(spec.pages_per_host)
    ]


def remove_dot_segments(path: str) -> str:
    # RFC 3986 section 5.2.4, so that "/p/../p/5.html" counts as the page it names.
    out: list[str] = []
    segments = path.split("/")
    for seg in segments[1:]:
        if seg == "..":
            if out:
                out.pop()
        elif seg != ".":
            out.append(seg)
    result = "/" + "/".join(out)
    if segments[-1] in (".", "..") and not result.endswith("/"):
        result += "/"
    return result


def page_index(path: str, pages_per_host: int) -> int | None:
    if path == "/":
        return 0
    if not (path.startswith("/p/") and path.endswith(".html")):
        return None
    digits = path[3:-5]
    # isdecimal rejects signs and spaces; the leading-zero check keeps one URL per page.
    if not digits.isdecimal() or (len(digits) > 1 and digits[0] == "0"):
        return None
    index = int(digits)
    return index if 0 < index < pages_per_host else None
