"""Request profiles given per domain in a ``domains import`` file (issue 31, item 7), judged
from what real loopback servers received during a real ``sitesync scan``, on both stores:
each domain's headers, cookies and credentials go to that domain's requests only; a domain's
profile lies over a ``[sites."HOST"]`` table of sitesync.toml for the same host; a bad cell
costs its line, reported by number without the value; ``domains show`` never shows a
credential."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.acceptance._cli import run_in_process

SECRET = "s3cret-Pa55"
SESSION = "sess-Z9y8x7"
SCAN = {"scan_scheme": "http", "delay": "0", "sitemaps": "false", "max_retries": "1"}


@dataclass
class Recorder:
    """A loopback site answering every path, keeping each request's path and headers."""

    address: str
    seen: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    host: str = ""  # host:port, as the registry keeps it

    def requests(self) -> list[dict[str, str]]:
        return [headers for _, headers in self.seen]


@pytest.fixture
def sites() -> Iterator[tuple[Recorder, Recorder]]:
    recorders = (Recorder("127.0.0.75"), Recorder("127.0.0.76"))
    running = []
    for recorder in recorders:

        class Handler(BaseHTTPRequestHandler):
            record = recorder

            def do_GET(self) -> None:
                headers = {name.lower(): value for name, value in self.headers.items()}
                self.record.seen.append((self.path, headers))
                body = b"<html><body><a href='/about'>about</a></body></html>"
                if self.path == "/robots.txt":
                    body = b"User-agent: *\nAllow: /\n"
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        server = ThreadingHTTPServer((recorder.address, 0), Handler)
        recorder.host = f"{recorder.address}:{server.server_address[1]}"
        threading.Thread(target=server.serve_forever, daemon=True).start()
        running.append(server)
    try:
        yield recorders
    finally:
        for server in running:
            server.shutdown()
            server.server_close()


def _cli(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    done = run_in_process(*args, settings=SCAN, env={"COLUMNS": "250", **(env or {})})
    return done.returncode, done.stdout, done.stderr


def test_each_domain_of_a_scan_sends_its_own_profile_and_no_other_host_gets_it(
    sites: tuple[Recorder, Recorder], db_url: str, tmp_path: Path
) -> None:
    shop, news = sites
    config = tmp_path / "sitesync.toml"
    config.write_text(f"""
[sites."{shop.host}"]
headers = {{ X-Env = "from-toml", X-Toml = "yes" }}
""")  # fmt: skip
    env = {"SITESYNC_CONFIG": str(config)}
    listing = tmp_path / "domains.csv"
    listing.write_text(
        "domain,headers,cookies,auth\n"
        f"http://{shop.host}/,X-Shop: 42; X-Env: from-file,session={SESSION},"
        f"basic crawler:{SECRET}\n"
        f"{news.host},,,\n"
        f"bad.example,,,token {SECRET}\n"  # not a form auth takes: the line is skipped
        f'other.example,"{{""X-A"": 1",,\n'  # broken JSON
    )  # fmt: skip
    code, out, err = _cli("domains", "import", str(listing), "--scope", "shops", "--db", db_url)
    assert code == 0, err
    assert "imported 2 domains" in out and "1 with a request profile" in out, out
    bad = [line for line in err.splitlines() if line.strip()]
    assert len(bad) == 2 and bad[0].startswith("line 4:") and "auth" in bad[0], bad
    assert bad[1].startswith("line 5:") and "headers: not valid JSON" in bad[1], bad
    assert SECRET not in err and "X-A" not in err  # a cell is never repeated

    code, out, err = _cli("scan", "shops", "--now", "--no-progress", "--db", db_url, env=env)
    assert code == 0, err

    assert {path for path, _ in shop.seen} >= {"/", "/about", "/robots.txt"}
    for headers in shop.requests():  # robots.txt included: it is the site's own
        assert headers["authorization"] == "Basic Y3Jhd2xlcjpzM2NyZXQtUGE1NQ=="
        assert headers["cookie"] == f"session={SESSION}"
        assert headers["x-shop"] == "42" and headers["x-toml"] == "yes"
        assert headers["x-env"] == "from-file"  # the domain file's over sitesync.toml's
    assert {path for path, _ in news.seen} >= {"/", "/about"}
    for headers in news.requests():  # the other domain of the scan: none of it
        assert not {"authorization", "cookie", "x-shop", "x-env", "x-toml"} & headers.keys()

    shown_by = [("domains", "show", shop.host), ("domains", "show", shop.host, "--json")]
    shown_by += [("domains", "list", "--json"), ("settings", "1"), ("show", "1", "--json")]
    for args in shown_by:
        code, out, err = _cli(*args, "--db", db_url, env=env)
        assert code == 0, err
        assert SECRET not in out + err and SESSION not in out + err, args
    code, out, _ = _cli("domains", "show", shop.host, "--db", db_url)
    [line] = [line for line in out.splitlines() if line.startswith("request profile:")]
    assert "X-Shop=42" in line and "session=***" in line and "auth ***" in line, line
    code, out, _ = _cli("domains", "show", shop.host, "--json", "--db", db_url)
    shown = json.loads(out)["data"]["domain"]["request_profile"]
    assert shown == {"headers": {"X-Shop": "42", "X-Env": "from-file"},
                     "cookies": {"session": "***"}, "auth": "***"}  # fmt: skip
    code, out, _ = _cli("domains", "show", news.host, "--db", db_url)
    assert "request profile: none" in out


def test_a_file_without_profile_columns_keeps_the_profiles_and_empty_cells_clear_one(
    db_url: str, tmp_path: Path
) -> None:
    with_profiles = tmp_path / "profiles.csv"
    with_profiles.write_text(
        'host,cookies,proxy\na.example,"{""consent"": ""yes""}",\nb.example,,http://proxy.example:3128\n'
    )  # fmt: skip
    plain = tmp_path / "plain.txt"
    plain.write_text("a.example\nb.example\n")
    cleared = tmp_path / "cleared.csv"
    cleared.write_text("host,headers\na.example,\n")

    def profile(host: str) -> object:
        code, out, err = _cli("domains", "show", host, "--json", "--db", db_url)
        assert code == 0, err
        return json.loads(out)["data"]["domain"]["request_profile"]

    for listing in (with_profiles, plain):
        code, _, err = _cli("domains", "import", str(listing), "--scope", "s", "--db", db_url)
        assert code == 0, err
        assert profile("a.example") == {"cookies": {"consent": "***"}}
        assert profile("b.example") == {"proxy": "***"}
    code, _, err = _cli("domains", "import", str(cleared), "--scope", "s", "--db", db_url)
    assert code == 0, err
    assert profile("a.example") is None and profile("b.example") == {"proxy": "***"}

    # A scheduled scan records the profiles the registry has when it starts, as one by hand.
    for args in (("schedule", "s", "--cadence", "0 3 * * *"), ("scan", "s")):
        code, _, err = _cli(*args, "--db", db_url)
        assert code == 0, err
    code, out, err = _cli("settings", "1", "--json", "--db", db_url)
    assert code == 0, err
    assert json.loads(out)["data"]["settings"]["sites"] == {"b.example": {"proxy": "***"}}
