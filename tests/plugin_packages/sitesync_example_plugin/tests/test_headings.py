"""The example plugin's own test: copy it with the package and run ``pytest``.

It crawls a site served on this machine's loopback address with the real ``sitesync``
command, reads the records back through sitesync's JSON output, and checks them. Loopback
is a private network, closed to crawls by default (so that a crawled site cannot make the
crawler reach your own network): the test opens it with ``--allow-network``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiohttp import web

from sitesync.testing import LoopbackSite, SiteSpec

PAGE = """<html><body>
<h1>Prices</h1><h2>Bikes</h2><h3>Spare parts</h3>
<div data-href="/p/1.html">more</div>
</body></html>"""


@pytest.fixture
def site() -> Iterator[LoopbackSite]:
    """A small site on 127.0.0.x whose root has headings and a data-href link."""

    async def root(request: web.Request) -> web.Response:
        return web.Response(text=PAGE, content_type="text/html")

    with LoopbackSite(SiteSpec(hosts=1, pages_per_host=3, links_per_page=0)) as served:
        served.set_handler("/", root)
        yield served


def sitesync(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sitesync", *args], cwd=cwd, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip


def test_headings_follow_the_plugins_table_in_sitesync_toml(
    site: LoopbackSite, tmp_path: Path
) -> None:
    (tmp_path / "sitesync.toml").write_text(
        '[plugins]\nenabled = ["headings"]\n\n'
        '[plugins.headings]\nlevels = ["h1", "h3"]\nmax_headings = 5\n'
    )
    crawl = sitesync(
        "crawl", site.root_urls[0], "--allow-network", "127.0.0.0/8", "--delay", "0",
        "--no-progress", "--no-robots", "--no-sitemaps", cwd=tmp_path,
    )  # fmt: skip
    assert crawl.returncode == 0, crawl.stderr
    records = sitesync("history", f"headings:{site.root_urls[0]}", "--json", cwd=tmp_path)
    [version] = json.loads(records.stdout)["data"]
    assert version["data"] == {"headings": ["Prices", "Spare parts"]}  # h1 and h3 only
    fetched = {request.path for request in site.requests}
    assert "/p/1.html" in fetched  # the data-href link was crawled


def test_a_bad_value_in_its_table_stops_the_crawl_naming_the_plugin_and_key(
    site: LoopbackSite, tmp_path: Path
) -> None:
    (tmp_path / "sitesync.toml").write_text("[plugins.headings]\nmax_headings = 0\n")
    crawl = sitesync("crawl", site.root_urls[0], "--allow-network", "127.0.0.0/8",
                     "--no-progress", cwd=tmp_path)  # fmt: skip
    assert crawl.returncode == 1
    assert crawl.stderr.startswith("error: plugin headings: setting max_headings")
    assert not (tmp_path / "sitesync.db").exists()  # checked before any run was created
