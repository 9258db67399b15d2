"""No page a site sends stalls the worker (issue 29, item 2), through the real CLI.

A loopback host serves pages that are expensive to process, all under the default caps:
deeply nested ``<div>``\\ s and a tag with tens of thousands of attributes (lexbor parses
both in time that grows with the square of their size: minutes here), or a page on which a
CPU-burning plugin (tests/plugin_packages/burning) never ends. Beside it a healthy host is
crawled with a 50 ms delay. The healthy host keeps its pace (no gap over 1 s between two of
its requests beside the parse case), the worker's claims and leases are never lost (every
page requested exactly once), the run completes, and each bad page ends with its own
outcome. And ``sitesync crawl`` leaves within seconds of a SIGTERM while it is busy on such
a page. (A 4 MB page of ordinary HTML is benchmarks/looplag.py's: its large report,
committed before the healthy host's next leases, tests the store's throughput more than
the loop.)
"""

from __future__ import annotations

import itertools
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from aiohttp import web

from sitesync.models import RunStatus, TaskState
from sitesync.testing import LoopbackSite, SiteSpec
from tests.acceptance._cli import communicate, read_run, sitesync

BURNING_PLUGIN = Path(__file__).parents[1] / "plugin_packages" / "burning"
MB = 1024 * 1024

#: What each bad page ends as, and (a part of) its error.
EXPECTED = {
    "/nested.html": ("parse_timeout", "parse_timeout_seconds"),
    "/attrs.html": ("parse_timeout", "parse_timeout_seconds"),
    "/burn.html": ("success", "burning: timed out after 2s (plugin_timeout_seconds)"),
}


def heavy_pages() -> dict[str, bytes]:
    return {
        # Far past the 2 s budget, under the 4 MB parse cap: 400,000 nested <div>s take
        # lexbor minutes; 320,000 attributes of one tag 14 s (120,000 took 0.6 s, under the
        # budget on a quiet machine, which made this case pass only under load).
        "/nested.html": b"<html><body>" + b"<div>" * (2 * MB // 5),
        "/attrs.html": b"<html><body><a " + b" ".join(b"x%d=1" % i for i in range(320_000)),
        "/burn.html": b"<html><body><p>burn</p></body></html>",
    }


def serve(site: LoopbackSite, pages: dict[str, bytes]) -> None:
    def page(body: bytes) -> Callable[[web.Request], object]:
        async def respond(request: web.Request) -> web.Response:
            return web.Response(body=body, content_type="text/html")

        return respond

    root = "".join(f'<a href="{path}">{path}</a>' for path in pages).encode()
    site.set_handler("/", page(b"<html><body>" + root + b"</body></html>"))  # type: ignore[arg-type]
    for path, body in pages.items():
        site.set_handler(path, page(body))  # type: ignore[arg-type]


@pytest.fixture
def bad_site() -> Iterator[LoopbackSite]:
    with LoopbackSite(SiteSpec(hosts=1, pages_per_host=1, first_ip=3)) as site:
        serve(site, heavy_pages())
        yield site


def crawl_flags(db: str) -> list[str]:
    return [
        "--db", db, "--no-progress", "--no-robots", "--no-sitemaps", "--delay", "0.05",
        "--per-host-concurrency", "1", "--no-adaptive-politeness", "--processes", "1",
        # Short claims and leases: a loop stalled for 7 s (10 s less a request's 3 s)
        # would lose them, and the pages be requested again by the next claim.
        "--timeout", "2", "--claim-seconds", "10", "--heartbeat-seconds", "0.5",
    ]  # fmt: skip


SETTINGS = {
    "parse_timeout_seconds": "2",
    "plugin_timeout_seconds": "2",
    "plugins": "page,links,assets,navigation,burning",
    "lease_seconds": "10",
}


def largest_gap(site: LoopbackSite) -> tuple[float, float]:
    """The longest wait between two requests of ``site``, and when it began."""
    times = sorted(request.started for request in site.requests)
    return max(((b - a, a) for a, b in itertools.pairwise(times)), default=(0.0, 0.0))


#: The bad pages of each case: pages the parse budget ends, and a plugin that never ends.
CASES = {"parse": ("/nested.html", "/attrs.html"), "plugin": ("/burn.html",)}


@pytest.mark.timeout(240)
@pytest.mark.parametrize("case", sorted(CASES))
def test_heavy_pages_cost_their_own_outcome_and_nothing_else(
    db_url: str, bad_site: LoopbackSite, case: str
) -> None:
    pages = heavy_pages()
    serve(bad_site, {path: pages[path] for path in CASES[case]})  # the root links to these
    spec = SiteSpec(hosts=1, pages_per_host=120, first_ip=2, links_per_page=10,
                    cross_host_links=False)  # fmt: skip
    with LoopbackSite(spec) as healthy:
        # Every healthy page a seed: its pace then depends on no report (the links of its
        # pages are admitted when their reports commit, after the bad pages' large ones).
        seeds = [bad_site.root_urls[0], *healthy.page_urls()]
        proc = sitesync(
            "crawl", *seeds, *crawl_flags(db_url), settings=SETTINGS,
            env={"PYTHONPATH": str(BURNING_PLUGIN), "BURNING_PLUGIN_SECONDS": "600"},
        )  # fmt: skip
        _, err = communicate(proc, timeout=180)
        assert proc.returncode == 0, err[-5000:]
        gap, since = largest_gap(healthy)
        healthy_counts = healthy.fetch_counts()
    run, counts, tasks = read_run(db_url)
    assert run.status is RunStatus.COMPLETED
    assert counts.get(TaskState.COMPLETED) == len(tasks)
    # The healthy host kept its pace: every page once, never more than a second apart.
    assert len(healthy_counts) == 120 and set(healthy_counts.values()) == {1}
    bad = {r.path: round(r.started - since, 2) for r in bad_site.requests}
    if case == "parse":
        assert gap < 1.0, f"the healthy host waited {gap:.2f} s, from (bad requests then) {bad}"
    # A plugin call past its timeout is not bounded so: on a loaded machine (other tests
    # beside this one) the healthy host has waited up to 4 s from the burning page's
    # request (cause not yet found; alone it keeps its pace). Only a stall is caught here.
    assert gap < 8.0, f"the healthy host waited {gap:.2f} s, from (bad requests then) {bad}"
    # No claim or lease was lost while the bad pages were processed: each requested once.
    bad_counts = bad_site.fetch_counts()
    assert set(bad_counts.values()) == {1} and len(bad_counts) == 1 + len(CASES[case])
    ended = {t.url.split("/", 3)[3]: t for t in tasks if t.host == bad_site.hosts[0]}
    for path in CASES[case]:
        outcome, error = EXPECTED[path]
        task = ended[path.lstrip("/")]
        assert task.outcome is not None and task.outcome.value == outcome, (path, task)
        if error is None:
            assert task.last_error is None, (path, task.last_error)
        else:
            assert error in (task.last_error or ""), (path, task.last_error)


@pytest.mark.timeout(120)
def test_sigterm_is_acted_on_while_a_page_is_being_parsed(
    tmp_path: Path, bad_site: LoopbackSite
) -> None:
    db = str(tmp_path / "crawl.db")
    # The default budget (10 s) and drain (10 s): the signal must not wait for either.
    proc = sitesync("crawl", bad_site.root_urls[0], *crawl_flags(db))
    deadline = time.monotonic() + 60
    while not any(r.path == "/nested.html" for r in bad_site.requests):
        assert time.monotonic() < deadline and proc.poll() is None, "never fetched the page"
        time.sleep(0.05)
    time.sleep(1.0)  # well into its parse
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _, err = communicate(proc, timeout=30)
    took = time.monotonic() - sent
    assert proc.returncode == 143, err[-5000:]
    assert took < 5.0, f"SIGTERM acted on after {took:.1f} s"
    run, _, tasks = read_run(db)
    assert run.status is RunStatus.RUNNING  # it goes on without this process
    nested = next(t for t in tasks if t.url.endswith("/nested.html"))
    assert nested.state is TaskState.PENDING  # given back, parsed by whoever resumes
