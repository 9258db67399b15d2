"""Private networks are off limits unless opened (issue 11, item 1).

Real loopback servers stand in for a public site (127.0.0.1, opened) and an internal host
(127.0.0.2, closed unless a test opens it). What the internal server logs is what reached it.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from hypothesis import given
from hypothesis import settings as examples
from hypothesis import strategies as st
from typer.testing import CliRunner

from sitesync.cli import app
from sitesync.cli.supervise import _network_env
from sitesync.config import Settings, load_settings
from sitesync.engine.wiring import network_policy
from sitesync.errors import ConfigError
from sitesync.fetch.base import FetchOutcome, RedirectHop
from sitesync.fetch.browser import BrowserFetcher
from sitesync.fetch.http import HttpFetcher
from sitesync.fetch.netpolicy import ForbiddenAddress, IPAddress, NetworkPolicy, address_kind
from sitesync.fetch.redirects import take_every_hop, walk
from sitesync.models import Run, Task
from sitesync.runs.crawl import crawl
from sitesync.runs.request import CrawlRequest, prepare_run
from sitesync.store.base import Store
from sitesync.store.sqlite.store import SqliteStore
from sitesync.web import create_app
from tests.conftest import OPEN_NETWORKS_ENV
from tests.safety._standins import BOTH, INTERNAL_IP, PUBLIC_IP, PUBLIC_ONLY, StandIn, serving

FORBIDDEN = FetchOutcome.FORBIDDEN_ADDRESS.value


@pytest.fixture(autouse=True)
def default_networks(monkeypatch: pytest.MonkeyPatch) -> None:
    """The shipped default: nothing opened (the session opens loopback for other tests)."""
    monkeypatch.delenv(OPEN_NETWORKS_ENV, raising=False)
    monkeypatch.delenv("SITESYNC_ALLOW_PRIVATE_NETWORKS", raising=False)


def settings_for(tmp_path: Path, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "db": str(tmp_path / "crawl.db"),
        "delay": 0,
        "per_host_concurrency": 0,
        "retry_backoff": 0.01,
        "retry_backoff_max": 0.05,
        "total_timeout": 10,
        "plugins": "",
    }
    values.update(overrides)
    return load_settings(**values)


async def crawl_in_process(settings: Settings, request: CrawlRequest) -> tuple[Run, list[Task]]:
    store = await SqliteStore.open(settings.db)
    try:
        run, settings = await prepare_run(store, request, settings)
        ended = await crawl(store, run, settings)
        return ended, await store.list_tasks(run.id, limit=1000)
    finally:
        await store.close()


def by_url(tasks: list[Task]) -> dict[str, Task]:
    return {task.url: task for task in tasks}


def assert_refused(task: Task, address: str) -> None:
    assert task.outcome == FORBIDDEN, (task.outcome, task.last_error)
    assert task.attempt_count == 1  # never retried
    assert task.last_error is not None and address in task.last_error
    assert "allowed_networks" in task.last_error  # says how to open it


# -- the whole crawl: one public site pointing at the internal host in every way -----------


def public_site(public: StandIn, internal: StandIn) -> None:
    """robots.txt names a sitemap on the internal host, and a sitemap index on the public
    one whose child is internal; the home page has an internal image and a link that
    redirects inside."""
    public.text(
        "/robots.txt",
        "text/plain",
        f"User-agent: *\nAllow: /\nSitemap: {internal.url('/listed.xml')}\n"
        f"Sitemap: {public.url('/index.xml')}\n",
    )
    public.text(
        "/index.xml",
        "application/xml",
        '<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<sitemap><loc>{internal.url('/child.xml')}</loc></sitemap></sitemapindex>",
    )
    public.html(
        "/",
        f'<html><body><img src="{internal.url("/logo.png")}"><a href="/go">go</a></body></html>',
    )
    public.redirect("/go", lambda: internal.url("/secret"))
    internal.text("/robots.txt", "text/plain", "User-agent: *\nAllow: /\n")
    urlset = '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>{}</loc></url></urlset>'
    internal.text("/listed.xml", "application/xml", urlset.format(internal.url("/from-listed")))
    internal.text("/child.xml", "application/xml", urlset.format(internal.url("/from-child")))
    internal.text("/logo.png", "image/png", "PNG-SECRET")
    internal.html("/secret", "<html><body>SECRET-CREDENTIAL</body></html>")


def crawl_public(tmp_path: Path, public: StandIn, networks: list[str]) -> tuple[Run, list[Task]]:
    settings = settings_for(
        tmp_path,
        allowed_networks=networks,
        plugins="assets",
        download_assets=True,
        respect_robots=True,
        sitemaps=True,
    )
    # The internal host is in scope on purpose: the network policy alone must hold the line.
    request = CrawlRequest(seeds=(public.url("/"),), allowed_domains=(INTERNAL_IP,))
    return asyncio.run(crawl_in_process(settings, request))


async def asset_records(db: str, run_id: int) -> dict[str, dict[str, object]]:
    store = await SqliteStore.open(db)
    try:
        return {r.url: dict(r.data) for r in await store.records_of_run(run_id)}
    finally:
        await store.close()


def test_an_internal_address_reached_through_a_public_site_is_refused_in_every_way(
    tmp_path: Path,
) -> None:
    public, internal = StandIn(PUBLIC_IP), StandIn(INTERNAL_IP)

    async def go() -> tuple[Run, list[Task]]:
        async with serving(public, internal):
            public_site(public, internal)
            return await asyncio.to_thread(crawl_public, tmp_path, public, PUBLIC_ONLY)

    run, tasks = asyncio.run(go())
    assert internal.log == []  # not one request: robots, sitemaps, the asset, the redirect
    assert {"/robots.txt", "/", "/index.xml", "/go"} <= set(public.log)
    assert_refused(by_url(tasks)[public.url("/go")], INTERNAL_IP)
    assert by_url(tasks)[public.url("/")].outcome == "success"
    assert not any(task.url.startswith(internal.origin) for task in tasks)
    assets = asyncio.run(asset_records(str(tmp_path / "crawl.db"), run.id))
    logo = assets[internal.url("/logo.png")]
    assert logo["downloaded"] is False
    assert str(logo["download_error"]).startswith(f"{FORBIDDEN}: {INTERNAL_IP}")


def test_the_same_site_reaches_the_internal_host_when_it_is_opened(tmp_path: Path) -> None:
    public, internal = StandIn(PUBLIC_IP), StandIn(INTERNAL_IP)

    async def go() -> tuple[Run, list[Task]]:
        async with serving(public, internal):
            public_site(public, internal)
            return await asyncio.to_thread(crawl_public, tmp_path, public, BOTH)

    run, tasks = asyncio.run(go())
    assert {"/listed.xml", "/child.xml", "/logo.png", "/secret"} <= set(internal.log)
    assert by_url(tasks)[public.url("/go")].outcome == "success"
    assets = asyncio.run(asset_records(str(tmp_path / "crawl.db"), run.id))
    assert assets[internal.url("/logo.png")]["downloaded"] is True


# -- a seed on the internal host: robots.txt, sitemap, sitemap index and the page ----------


def internal_site(internal: StandIn) -> None:
    internal.text(
        "/robots.txt", "text/plain", f"User-agent: *\nSitemap: {internal.url('/index.xml')}\n"
    )
    internal.text(
        "/index.xml",
        "application/xml",
        '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<sitemap><loc>{internal.url('/child.xml')}</loc></sitemap></sitemapindex>",
    )
    internal.text(
        "/child.xml",
        "application/xml",
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<url><loc>{internal.url('/listed')}</loc></url></urlset>",
    )
    internal.html("/", "<html><body>intranet home</body></html>")
    internal.html("/listed", "<html><body>listed</body></html>")


def crawl_internal(tmp_path: Path, internal: StandIn, **network: object) -> list[Task]:
    settings = settings_for(tmp_path, respect_robots=True, sitemaps=True, **network)
    return asyncio.run(crawl_in_process(settings, CrawlRequest(seeds=(internal.url("/"),))))[1]


def test_a_seed_on_an_internal_address_is_refused_before_robots_or_sitemaps(
    tmp_path: Path,
) -> None:
    internal = StandIn(INTERNAL_IP)

    async def go() -> list[Task]:
        async with serving(internal):
            internal_site(internal)
            return await asyncio.to_thread(crawl_internal, tmp_path, internal)

    tasks = asyncio.run(go())
    assert internal.log == []
    assert [t.url for t in tasks] == [internal.url("/")]
    assert_refused(tasks[0], INTERNAL_IP)


@pytest.mark.parametrize(
    "network",
    [{"allowed_networks": [f"{INTERNAL_IP}/32"]}, {"allow_private_networks": True}],
    ids=["allowed_networks", "allow_private_networks"],
)
def test_an_opened_internal_seed_is_crawled_with_its_robots_and_sitemaps(
    tmp_path: Path, network: dict[str, object]
) -> None:
    internal = StandIn(INTERNAL_IP)

    async def go() -> list[Task]:
        async with serving(internal):
            internal_site(internal)
            return await asyncio.to_thread(crawl_internal, tmp_path, internal, **network)

    tasks = asyncio.run(go())
    assert {"/robots.txt", "/index.xml", "/child.xml", "/", "/listed"} <= set(internal.log)
    assert {t.url: t.outcome for t in tasks} == {
        internal.url("/"): "success",
        internal.url("/listed"): "success",
    }


# -- a seed that redirects inside -----------------------------------------------------------


def test_a_seed_redirect_to_an_internal_address_is_refused_and_shown(tmp_path: Path) -> None:
    public, internal = StandIn(PUBLIC_IP), StandIn(INTERNAL_IP)
    public.redirect("/", lambda: internal.url("/latest/meta-data/"))
    internal.text("/latest/meta-data/", "text/plain", "SECRET-CREDENTIAL")
    settings = settings_for(tmp_path, allowed_networks=PUBLIC_ONLY)

    async def go() -> tuple[Run, list[Task]]:
        async with serving(public, internal):
            # In scope on purpose: the network policy alone must refuse it.
            request = CrawlRequest(seeds=(public.url("/"),), allowed_domains=(INTERNAL_IP,))
            return await asyncio.to_thread(lambda: asyncio.run(crawl_in_process(settings, request)))

    run, tasks = asyncio.run(go())
    assert internal.log == []
    seed = by_url(tasks)[public.url("/")]
    assert_refused(seed, INTERNAL_IP)
    assert seed.redirects == ((public.url("/"), internal.url("/latest/meta-data/"), 302),)
    assert seed.final_url is None  # it ended where it started: nothing inside was fetched

    shown = CliRunner().invoke(
        app, ["show", str(run.id), "--db", settings.db], env={"COLUMNS": "300"}
    )
    assert shown.exit_code == 0, shown.output
    assert f"{FORBIDDEN}: {INTERNAL_IP} is a loopback address" in shown.output

    errors = asyncio.run(api_errors(settings, run.id))
    groups = {group["outcome"]: group for group in errors["groups"]}
    assert groups[FORBIDDEN]["count"] == 1
    assert INTERNAL_IP in json.dumps(groups[FORBIDDEN])


async def api_errors(settings: Settings, run_id: int) -> dict[str, object]:
    store: Store = await SqliteStore.open(settings.db)
    try:
        transport = httpx.ASGITransport(app=create_app(settings, store=store))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            response = await http.get(f"/api/runs/{run_id}/errors")
            assert response.status_code == 200
            return dict(response.json())
    finally:
        await store.close()


async def test_the_fetcher_follows_the_same_redirect_when_the_internal_host_is_opened() -> None:
    public, internal = StandIn(PUBLIC_IP), StandIn(INTERNAL_IP)
    public.redirect("/", lambda: internal.url("/latest/meta-data/"))
    internal.text("/latest/meta-data/", "text/plain", "SECRET-CREDENTIAL")
    opened = NetworkPolicy.opening(*BOTH)
    async with serving(public, internal), HttpFetcher(network=opened) as fetcher:
        result = await walk(public.url("/"), fetcher.fetch, take_every_hop, max_redirects=10)
    assert result.outcome is FetchOutcome.SUCCESS and result.body == b"SECRET-CREDENTIAL"
    assert internal.log == ["/latest/meta-data/"]


# -- literals and names, the default with nothing opened ------------------------------------


async def test_by_default_loopback_is_refused_by_name_by_literal_and_in_ipv6_forms() -> None:
    server = StandIn(PUBLIC_IP)
    server.html("/", "<p>hi</p>")
    async with serving(server), HttpFetcher() as fetcher:
        urls = [
            server.url("/"),
            f"http://localhost:{server.port}/",
            f"http://[::ffff:{PUBLIC_IP}]:{server.port}/",
            f"http://[::ffff:7f00:1]:{server.port}/",
        ]
        results = [await fetcher.fetch(url) for url in urls]
    assert [r.outcome for r in results] == [FetchOutcome.FORBIDDEN_ADDRESS] * len(urls)
    assert not results[0].retryable
    assert server.log == []


# -- settings and domains import ------------------------------------------------------------


def test_a_bad_network_is_one_line_naming_it() -> None:
    with pytest.raises(ConfigError, match=r"allowed_networks .*'10\.0\.0\.0/33' is not an IP"):
        load_settings(allowed_networks=["127.0.0.0/8", "10.0.0.0/33"])


def test_networks_from_the_environment_are_comma_separated(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(OPEN_NETWORKS_ENV, "10.1.0.0/16, fd00::/8")
    policy = network_policy(load_settings())
    assert [str(n) for n in policy.allowed] == ["10.1.0.0/16", "fd00::/8"]
    assert not policy.allow_private


def import_domains(tmp_path: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    listing = tmp_path / "domains.txt"
    listing.write_text(
        "example.com\n127.0.0.1\n169.254.169.254\n[::1]\nhttp://10.0.0.7:8080/\n"
        "[::ffff:192.168.1.1]\n8.8.8.8\n"
    )
    db = tmp_path / f"domains{len(flags)}.db"
    cmd = [sys.executable, "-m", "sitesync", "domains", "import", str(listing)]
    return subprocess.run(
        [*cmd, "--scope", "s", "--db", str(db), *flags],
        capture_output=True,
        text=True,
        timeout=60,
        env={"COLUMNS": "300", "PATH": "/usr/bin:/bin"},
    )


def test_domains_import_rejects_private_literals_one_line_each(tmp_path: Path) -> None:
    done = import_domains(tmp_path)
    assert done.returncode == 0, done.stderr
    problems = done.stderr.strip().splitlines()
    assert problems == [
        "line 2: '127.0.0.1': 127.0.0.1 is a loopback address (open it with "
        "allowed_networks or allow_private_networks)",
        "line 3: '169.254.169.254': 169.254.169.254 is a link-local address (open it with "
        "allowed_networks or allow_private_networks)",
        "line 4: '[::1]': ::1 is a loopback address (open it with allowed_networks or "
        "allow_private_networks)",
        "line 5: 'http://10.0.0.7:8080/': 10.0.0.7 is a private address (open it with "
        "allowed_networks or allow_private_networks)",
        "line 6: '[::ffff:192.168.1.1]': ::ffff:c0a8:101 is a private (IPv4 embedded in IPv6) "
        "address (open it with allowed_networks or allow_private_networks)",
    ]
    assert "imported 2 domains" in done.stdout


def test_domains_import_takes_the_opened_networks(tmp_path: Path) -> None:
    some = import_domains(tmp_path, "--allow-network", "127.0.0.0/8", "--allow-network", "::1")
    assert some.returncode == 0, some.stderr
    assert "imported 4 domains" in some.stdout
    assert "'127.0.0.1'" not in some.stderr and "'[::1]'" not in some.stderr
    everything = import_domains(tmp_path, "--allow-private-networks")
    assert everything.returncode == 0 and everything.stderr == ""
    assert "imported 7 domains" in everything.stdout


# -- the address classifier -----------------------------------------------------------------

REFUSED_RANGES = {
    "0.0.0.0/8": "unspecified",
    "127.0.0.0/8": "loopback",
    "10.0.0.0/8": "private",
    "172.16.0.0/12": "private",
    "192.168.0.0/16": "private",
    "169.254.0.0/16": "link-local",
    "100.64.0.0/10": "shared",
    "224.0.0.0/4": "multicast",
    "240.0.0.0/4": "reserved",
    "192.0.2.0/24": "reserved",  # documentation
    "198.18.0.0/15": "reserved",  # benchmarking
    "::/128": "unspecified",
    "::1/128": "loopback",
    "fc00::/7": "private",
    "fe80::/10": "link-local",
    "ff00::/8": "multicast",
    "2001:db8::/32": "reserved",
    "192.0.0.0/24": "reserved",
    "64:ff9b:1::/48": "reserved",
    "3fff::/20": "reserved",
    "::2:0/112": "reserved",  # inside the deprecated IPv4-compatible ::/96
}


def addresses_in(cidr: str) -> st.SearchStrategy[IPAddress]:
    network = ipaddress.ip_network(cidr)
    first, last = int(network.network_address), int(network.broadcast_address)
    return st.integers(first, last).map(lambda n: ipaddress.ip_address(n) if network.version == 4
                                        else ipaddress.IPv6Address(n))  # fmt: skip


@pytest.mark.parametrize(("cidr", "kind"), REFUSED_RANGES.items())
@given(data=st.data())
@examples(max_examples=30, deadline=None)
def test_every_address_of_a_refused_range_is_refused_with_its_kind(
    cidr: str, kind: str, data: st.DataObject
) -> None:
    ip = data.draw(addresses_in(cidr))
    assert address_kind(ip) == kind
    refused = NetworkPolicy().refusal(ip)
    assert refused is not None and refused.kind == kind
    assert NetworkPolicy(allow_private=True).refusal(ip) is None
    assert NetworkPolicy.opening(cidr).refusal(ip) is None


@pytest.mark.parametrize(
    "cidr",
    ["127.0.0.0/8", "10.0.0.0/8", "169.254.0.0/16", "100.64.0.0/10", "192.168.0.0/16"],
)
@given(data=st.data())
@examples(max_examples=30, deadline=None)
def test_ipv4_embedded_in_ipv6_is_refused_like_the_ipv4_address(
    cidr: str, data: st.DataObject
) -> None:
    ip = data.draw(addresses_in(cidr))
    assert isinstance(ip, ipaddress.IPv4Address)
    mapped = ipaddress.IPv6Address(f"::ffff:{ip}")
    nat64 = ipaddress.IPv6Address(int(ipaddress.IPv6Address("64:ff9b::")) | int(ip))
    sixtofour = ipaddress.IPv6Address((0x2002 << 112) | (int(ip) << 80) | 1)
    siit = ipaddress.IPv6Address(f"::ffff:0:{ip}")
    for form in (mapped, nat64, sixtofour, siit):
        assert address_kind(form) == f"{REFUSED_RANGES[cidr]} (IPv4 embedded in IPv6)", form
        assert NetworkPolicy().refusal(form) is not None
        # Opening the IPv4 network opens its embedded forms too.
        assert NetworkPolicy.opening(cidr).refusal(form) is None


@pytest.mark.parametrize(
    "public", ["8.8.8.8", "1.1.1.1", "93.184.216.34", "2606:4700:4700::1111", "::ffff:8.8.8.8",
               "64:ff9b::808:808", "2002:808:808::1"],
)  # fmt: skip
def test_public_addresses_are_never_refused(public: str) -> None:
    ip = ipaddress.ip_address(public)
    assert address_kind(ip) is None
    assert NetworkPolicy().refusal(ip) is None


def test_opening_one_network_keeps_the_others_closed() -> None:
    policy = NetworkPolicy.opening("127.0.0.1/32")
    assert policy.refusal(ipaddress.ip_address("127.0.0.1")) is None
    assert policy.refusal(ipaddress.ip_address("::ffff:127.0.0.1")) is None
    for closed in ("127.0.0.2", "::1", "10.0.0.1", "169.254.169.254"):
        assert policy.refusal(ipaddress.ip_address(closed)) is not None, closed


def test_the_socket_factory_refuses_before_any_socket_is_made() -> None:
    import socket as socket_module

    policy = NetworkPolicy()
    info = (socket_module.AF_INET, socket_module.SOCK_STREAM, 6, "", ("169.254.169.254", 80))
    with pytest.raises(ForbiddenAddress, match=r"169\.254\.169\.254 is a link-local address"):
        policy.socket_factory(info)
    sock = NetworkPolicy(allow_private=True).socket_factory(info)
    sock.close()


# -- the browser fetcher: every request of the page goes through the guard -----------------

PAGE_REACHING_INSIDE = """<!DOCTYPE html><html><body>
<img src="{internal}/img.png">
<img src="/to-inside.png">
<iframe src="{internal}/frame"></iframe>
<script>fetch("{internal}/xhr").catch(() => null);</script>
<a href="/p">p</a> <a href="/go">go</a> <a href="{internal}/">intranet</a>
</body></html>"""


def page_reaching_inside(public: StandIn, internal: StandIn) -> None:
    public.html("/", PAGE_REACHING_INSIDE.format(internal=internal.origin))
    public.redirect("/to-inside.png", lambda: internal.url("/redirected.png"))  # a hop
    public.redirect("/go", lambda: internal.url("/secret"))
    public.html("/p", "<p>p</p>")
    for path in ("/img.png", "/redirected.png"):
        internal.text(path, "image/png", "PNG")
    internal.html("/frame", "<p>frame</p>")
    internal.text("/xhr", "text/plain", "SECRET")
    internal.html("/", "<p>intranet</p>")
    internal.html("/secret", "<p>SECRET-CREDENTIAL</p>")


async def test_the_browser_reaches_nothing_internal_by_default(tmp_path: Path) -> None:
    public, internal = StandIn(PUBLIC_IP), StandIn(INTERNAL_IP)
    policy = NetworkPolicy.opening(*PUBLIC_ONLY)
    async with serving(public, internal), BrowserFetcher(network=policy, settle_ms=500) as browser:
        page_reaching_inside(public, internal)
        page = await browser.fetch(public.url("/"))
        inside = await browser.fetch(internal.url("/"))
        # One navigation per hop, walked as every chain is (sitesync.fetch.redirects).
        hop = await walk(public.url("/go"), browser.fetch, take_every_hop, max_redirects=10)
    assert page.outcome is FetchOutcome.SUCCESS  # the page itself renders
    assert internal.url("/img.png").encode() in page.body  # and does point inside
    assert internal.log == []  # not its image, frame, fetch() nor redirected image
    assert "/to-inside.png" in public.log
    assert inside.outcome is FetchOutcome.FORBIDDEN_ADDRESS
    assert inside.error is not None and f"{INTERNAL_IP} is a loopback address" in inside.error
    assert hop.outcome is FetchOutcome.FORBIDDEN_ADDRESS
    assert hop.redirects == (RedirectHop(public.url("/go"), internal.url("/secret"), 302),)
    assert not hop.retryable


async def test_the_browser_reaches_the_internal_host_when_it_is_opened() -> None:
    public, internal = StandIn(PUBLIC_IP), StandIn(INTERNAL_IP)
    policy = NetworkPolicy.opening(*BOTH)
    async with serving(public, internal), BrowserFetcher(network=policy, settle_ms=500) as browser:
        page_reaching_inside(public, internal)
        page = await browser.fetch(public.url("/"))
        # One navigation per hop, walked as every chain is (sitesync.fetch.redirects).
        hop = await walk(public.url("/go"), browser.fetch, take_every_hop, max_redirects=10)
    assert page.outcome is FetchOutcome.SUCCESS
    assert {"/img.png", "/redirected.png", "/frame", "/xhr", "/secret"} <= set(internal.log)
    assert hop.outcome is FetchOutcome.SUCCESS and b"SECRET-CREDENTIAL" in hop.body


def test_a_browser_crawl_records_the_refused_link_redirect(tmp_path: Path) -> None:
    public, internal = StandIn(PUBLIC_IP), StandIn(INTERNAL_IP)
    settings = settings_for(tmp_path, fetcher="browser", allowed_networks=PUBLIC_ONLY)

    async def go() -> list[Task]:
        async with serving(public, internal):
            page_reaching_inside(public, internal)
            request = CrawlRequest(seeds=(public.url("/"),), allowed_domains=(INTERNAL_IP,))
            return await asyncio.to_thread(
                lambda: asyncio.run(crawl_in_process(settings, request))[1]
            )

    tasks = by_url(asyncio.run(go()))
    assert internal.log == []
    assert tasks[public.url("/")].outcome == "success"
    assert tasks[public.url("/p")].outcome == "success"
    assert_refused(tasks[public.url("/go")], INTERNAL_IP)
    assert_refused(tasks[internal.url("/")], INTERNAL_IP)


# -- the flags, through the real CLI --------------------------------------------------------


async def run_cli(*args: str) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "sitesync", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, "COLUMNS": "300"},
    )  # fmt: skip
    out, _ = await asyncio.wait_for(process.communicate(), 90)
    return process.returncode or 0, out.decode()


@pytest.mark.slow
async def test_crawl_flags_open_exactly_what_they_name(tmp_path: Path) -> None:
    internal = StandIn(INTERNAL_IP)
    internal.html("/", "<p>intranet</p>")
    quick = ["--no-progress", "--no-robots", "--no-sitemaps", "--delay", "0", "--plugins", ""]
    async with serving(internal):
        closed, _ = await run_cli("crawl", internal.url("/"), "--db", str(tmp_path / "a.db"),
                                  "--allow-network", f"{PUBLIC_IP}/32", *quick)  # fmt: skip
        assert internal.log == []
        shown = await run_cli("show", "1", "--db", str(tmp_path / "a.db"))
        one, _ = await run_cli("crawl", internal.url("/"), "--db", str(tmp_path / "b.db"),
                               "--allow-network", f"{INTERNAL_IP}/32", *quick)  # fmt: skip
        every, _ = await run_cli("crawl", internal.url("/"), "--db", str(tmp_path / "c.db"),
                                 "--allow-private-networks", *quick)  # fmt: skip
    # The run completes either way; the refused URL is among its failed URLs.
    assert (closed, one, every) == (0, 0, 0)
    assert f"{FORBIDDEN}: {INTERNAL_IP} is a loopback address" in shown[1]
    assert internal.log == ["/", "/"]


def test_supervise_hands_its_opened_networks_to_its_workers() -> None:
    settings = load_settings(allowed_networks=["10.0.0.0/8", "fd00::/8"])
    env = _network_env(settings)
    assert env == {
        "SITESYNC_ALLOW_PRIVATE_NETWORKS": "false",
        "SITESYNC_ALLOWED_NETWORKS": "10.0.0.0/8,fd00::/8",
    }
    os.environ.update(env)
    try:
        assert network_policy(load_settings()) == network_policy(settings)
    finally:
        for name in env:
            del os.environ[name]
