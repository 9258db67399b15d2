"""Request profiles (issue 31, item 7): the headers, cookies, credentials and proxy a crawl's
requests carry, judged from what real loopback servers received. The crawl's profile goes
to its own sites only: a redirect to another host carries none of it, as a browser would
not send it; a ``[sites."HOST"]`` table adds that host's own; a proxy is asked for every
request, and the network policy still judges each request's target."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.acceptance._cli import run_in_process

SECRET = "s3cret-Pa55"


@dataclass
class Recorder:
    """A loopback server answering every path, keeping each request's line and headers."""

    address: str
    redirects: dict[str, str] = field(default_factory=dict)
    seen: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    base: str = ""

    def requests_to(self, path: str) -> list[dict[str, str]]:
        return [headers for line, headers in self.seen if line.split("?")[0].endswith(path)]


@pytest.fixture
def servers() -> Iterator[tuple[Recorder, Recorder, Recorder]]:
    """A crawled site, another site, and a forward proxy: three loopback addresses."""
    recorders = (Recorder("127.0.0.72"), Recorder("127.0.0.73"), Recorder("127.0.0.74"))
    running = []
    for recorder in recorders:

        class Handler(BaseHTTPRequestHandler):
            record = recorder

            def do_GET(self) -> None:
                headers = {name.lower(): value for name, value in self.headers.items()}
                self.record.seen.append((self.path, headers))
                target = self.record.redirects.get(self.path)
                if target is not None:
                    self.send_response(302)
                    self.send_header("Location", target)
                    self.end_headers()
                    return
                body = b"<html><body><p>a page</p></body></html>"
                if self.path.endswith("robots.txt"):
                    body = b"User-agent: *\nAllow: /\n"
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        server = ThreadingHTTPServer((recorder.address, 0), Handler)
        recorder.base = f"http://{recorder.address}:{server.server_address[1]}"
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        running.append(server)
    try:
        yield recorders
    finally:
        for server in running:
            server.shutdown()
            server.server_close()


def _settings_file(tmp_path: Path, text: str) -> dict[str, str]:
    path = tmp_path / "sitesync.toml"
    path.write_text(text)
    return {"SITESYNC_CONFIG": str(path)}


def test_credentials_go_to_the_crawled_site_and_not_where_it_redirects(
    servers: tuple[Recorder, Recorder, Recorder], tmp_path: Path
) -> None:
    site, other, _ = servers
    site.redirects["/start"] = f"{other.base}/landing"
    env = _settings_file(tmp_path, f"""
follow_offsite_seed_redirects = true
auth = "basic crawler:{SECRET}"
[request_headers]
X-Catalogue = "monthly"
[cookies]
consent = "yes"
""")  # fmt: skip
    db = str(tmp_path / "profiles.db")
    done = run_in_process("crawl", f"{site.base}/start", "--db", db, "--no-progress", env=env)
    assert done.returncode == 0, done.stderr

    (start,) = site.requests_to("/start")
    assert start["authorization"] == "Basic Y3Jhd2xlcjpzM2NyZXQtUGE1NQ=="  # crawler:s3cret-Pa55
    assert start["x-catalogue"] == "monthly" and start["cookie"] == "consent=yes"
    (robots,) = site.requests_to("/robots.txt")  # robots.txt is the site's too
    assert robots["authorization"] == start["authorization"]

    landing = other.requests_to("/landing")
    assert landing, other.seen  # the redirect was followed ...
    for headers in landing + other.requests_to("/robots.txt"):  # ... carrying none of it
        assert "authorization" not in headers and "cookie" not in headers
        assert "x-catalogue" not in headers

    for args in (("settings", "1"), ("show", "1", "--json"), ("settings", "1", "--json")):
        shown = run_in_process(*args, "--db", db, env={**env, "COLUMNS": "300"})
        assert shown.returncode == 0, shown.stderr
        assert SECRET not in shown.stdout + shown.stderr
    assert SECRET not in done.stdout + done.stderr


def test_a_site_table_adds_that_hosts_own_profile(
    servers: tuple[Recorder, Recorder, Recorder], tmp_path: Path
) -> None:
    site, other, _ = servers
    site.redirects["/start"] = f"{other.base}/landing"
    env = _settings_file(tmp_path, f"""
follow_offsite_seed_redirects = true
[request_headers]
X-Catalogue = "monthly"
[sites."{other.address}"]
auth = "bearer other-{SECRET}"
headers = {{ X-Partner = "42" }}
""")  # fmt: skip
    done = run_in_process("crawl", f"{site.base}/start", "--db", str(tmp_path / "sites.db"),
                          "--no-progress", env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    (landing, *_) = other.requests_to("/landing")
    assert landing["authorization"] == f"Bearer other-{SECRET}"
    assert landing["x-partner"] == "42"
    assert landing["x-catalogue"] == "monthly"  # the crawl's, under the site's own
    (start,) = site.requests_to("/start")
    assert "authorization" not in start and "x-partner" not in start


def test_every_request_goes_through_the_proxy_and_the_policy_still_judges_its_target(
    servers: tuple[Recorder, Recorder, Recorder], tmp_path: Path
) -> None:
    site, _, proxy = servers
    env = _settings_file(tmp_path, f'proxy = "{proxy.base}"\nauth = "bearer {SECRET}"\n')
    done = run_in_process("crawl", f"{site.base}/page", "--db", str(tmp_path / "proxied.db"),
                          "--no-progress", env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    asked = [line for line, _ in proxy.seen]
    assert f"{site.base}/page" in asked and f"{site.base}/robots.txt" in asked  # absolute form
    assert site.seen == []  # only the proxy was connected to
    (page,) = proxy.requests_to("/page")
    assert page["authorization"] == f"Bearer {SECRET}"

    # The proxy's own address is opened; the target's is not: the proxy is never asked.
    proxy.seen.clear()
    refused = run_in_process(
        "crawl", f"{site.base}/page", "--db", str(tmp_path / "refused.db"), "--no-progress",
        env={**env, "SITESYNC_ALLOWED_NETWORKS": f"{proxy.address}/32", "COLUMNS": "300"},
    )  # fmt: skip
    assert refused.returncode == 0, refused.stderr
    assert proxy.seen == [] and site.seen == []
    assert "forbidden_address" in refused.stdout


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ('auth = "token abc"', "auth"),
        ('[sites."a.example"]\nauthz = "basic a:b"', "sites"),
        ('[sites."a.example"]\nheaders = "X-A: 1"', "sites"),
    ],
)
def test_a_malformed_profile_is_one_line_before_any_request(
    text: str, named: str, servers: tuple[Recorder, Recorder, Recorder], tmp_path: Path
) -> None:
    site = servers[0]
    done = run_in_process("crawl", f"{site.base}/", "--db", str(tmp_path / "bad.db"),
                          "--no-progress", env=_settings_file(tmp_path, text))  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and named in lines[0], lines
    assert "abc" not in lines[0] and "a:b" not in lines[0]  # what was given is never echoed
    assert site.seen == []
