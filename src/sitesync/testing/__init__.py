"""A generated multi-host website served on loopback, for tests and benchmarks.

Every host of the site is a loopback address (``127.0.0.2``, ``127.0.0.3``, ...) listening on one
shared port, so a crawler sees several distinct hosts without any DNS. Pages and links are a
pure function of :class:`SiteSpec`, so a test knows in advance every URL a correct crawler must
fetch, and the links include the traps a crawler must handle: URL variants that normalization
must collapse and links to hosts outside the site that scoping must reject.

In-process use (the server runs in a background thread with its own event loop, so a crawler
running in a subprocess, or in the test's own loop, can use it while the test waits)::

    with LoopbackSite(SiteSpec(hosts=2, pages_per_host=20)) as site:
        crawl(site.root_urls)
        assert set(site.fetch_counts()) >= set(site.page_urls())

Out-of-process use, e.g. by the benchmark, so the server has its own CPU::

    python -m sitesync.testing --hosts 20 --pages-per-host 1000 --port 0 --no-log

prints ``{"port": N, "root_urls": [...]}`` on one line once listening and serves until killed.
"""

from __future__ import annotations

from sitesync.testing.serve import serve_forever
from sitesync.testing.server import Handler, LoopbackSite
from sitesync.testing.spec import (
    LOOPBACK_NETWORKS,
    OPEN_LOOPBACK,
    OUT_OF_SCOPE_IPS,
    RequestRecord,
    SiteSpec,
    page_path,
    page_urls,
)

__all__ = [
    "LOOPBACK_NETWORKS",
    "OPEN_LOOPBACK",
    "OUT_OF_SCOPE_IPS",
    "Handler",
    "LoopbackSite",
    "RequestRecord",
    "SiteSpec",
    "page_path",
    "page_urls",
    "serve_forever",
]
