"""Rescans at the cost of what changed (issue 30): a static site served by nginx (ETag and
Last-Modified from the files), crawled three times into one store.

    python benchmarks/resync.py [--hosts 20] [--pages 1000] [--page-bytes 30000]
                                [--changed 0.1] [--out benchmarks/results/resync.json]

1. first scan: every page downloaded in full (the same-run baseline);
2. second scan, nothing changed: every page should answer 304 Not Modified;
3. third scan, after rewriting ``--changed`` of the pages of every host.

Measured at the server (nginx's access log: requests, ``$body_bytes_sent``) and in the store
(new page versions and sightings per scan, checked against the pages that changed). nginx
runs from a temporary prefix on 127.0.0.2.. (one address per host, one free port), started
and stopped by this script; nothing is written outside the temporary directory.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

BASE = ["--no-progress", "--allow-network", "127.0.0.0/8"]
#: ``--sitemaps``: each host has a sitemap with every page's date, and a page it dates
#: before the store's last check of it is not requested at all.
SITEMAP_MODE = ["--sitemaps", "--sitemap-skips-unchanged"]
FANOUT = 10  # links from a page to the pages below it: page i links to 10i+1 .. 10i+10
FILLER = "The quick brown fox jumps over the lazy dog while the catalogue stays in sync. "


@dataclass
class Scan:
    name: str
    seconds: float
    cpu_seconds: float  # the crawler process's user + system time
    requests: int
    body_bytes: int
    statuses: dict[str, int]
    pages_reached: int
    new_versions: int
    sightings: int


def page_name(index: int) -> str:
    return "index.html" if index == 0 else f"p/{index}.html"


def page_href(index: int) -> str:
    return "/" if index == 0 else f"/p/{index}.html"


def page_html(host: int, index: int, pages: int, size: int, revision: int) -> str:
    children = range(FANOUT * index + 1, min(FANOUT * index + FANOUT, pages - 1) + 1)
    links = "".join(f'<li><a href="{page_href(c)}">page {c}</a></li>' for c in children)
    rev = f"<p>revision {revision}</p>" if revision else ""
    title = f"<title>host {host} page {index}</title>"
    head = (f"<!doctype html><html><head>{title}</head><body><h1>Page {index}</h1>{rev}"
            f'<ul><li><a href="/">home</a></li>{links}</ul><p>')  # fmt: skip
    filler = (FILLER * (size // len(FILLER) + 1))[: max(0, size - len(head))]
    return f"{head}{filler}</p></body></html>"


def write_site(root: Path, hosts: int, pages: int, size: int) -> None:
    for host in range(hosts):
        (root / f"h{host}" / "p").mkdir(parents=True)
        for index in range(pages):
            path = root / f"h{host}" / page_name(index)
            path.write_text(page_html(host, index, pages, size, 0))


def write_sitemaps(root: Path, hosts: int, pages: int, port: int) -> None:
    """Each host's /sitemap.xml, every page with its file's mtime as ``<lastmod>`` (as a
    CMS writes it), rewritten after pages change."""
    for host in range(hosts):
        entries = []
        for index in range(pages):
            mtime = (root / f"h{host}" / page_name(index)).stat().st_mtime
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(mtime))
            loc = f"http://127.0.0.{host + 2}:{port}{page_href(index)}"
            entries.append(f"<url><loc>{loc}</loc><lastmod>{stamp}</lastmod></url>")
        xml = ('<?xml version="1.0" encoding="UTF-8"?>'
               '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
               + "".join(entries) + "</urlset>")  # fmt: skip
        (root / f"h{host}" / "sitemap.xml").write_text(xml)


def change_pages(root: Path, hosts: int, pages: int, size: int, share: float) -> set[str]:
    """Rewrite ``share`` of every host's pages (a revision line: new bytes, new mtime)."""
    rng = random.Random(30)
    changed: set[str] = set()
    later = time.time() + 5  # a Last-Modified unlike the first one, whatever the clock
    for host in range(hosts):
        for index in rng.sample(range(pages), round(pages * share)):
            path = root / f"h{host}" / page_name(index)
            path.write_text(page_html(host, index, pages, size, 1))
            os.utime(path, (later, later))
            changed.add(f"{host}:{page_href(index)}")
    return changed


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def nginx_config(prefix: Path, root: Path, hosts: int, port: int) -> str:
    servers = "\n".join(
        f"  server {{ listen 127.0.0.{host + 2}:{port}; root {root}/h{host}; index index.html; }}"
        for host in range(hosts)
    )
    return f"""
worker_processes 1;
daemon off;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 1024; }}
http {{
  log_format bench '$server_addr $status $body_bytes_sent "$request"';
  access_log {prefix}/access.log bench;
  client_body_temp_path {prefix}/tmp; proxy_temp_path {prefix}/tmp;
  fastcgi_temp_path {prefix}/tmp; uwsgi_temp_path {prefix}/tmp; scgi_temp_path {prefix}/tmp;
  default_type text/html;
  types {{ text/html html; application/xml xml; }}
  etag on;
  if_modified_since exact;
  keepalive_requests 100000;
{servers}
}}
"""


def start_nginx(prefix: Path, root: Path, hosts: int, port: int) -> subprocess.Popen[bytes]:
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    (prefix / "tmp").mkdir()
    conf = prefix / "nginx.conf"
    conf.write_text(nginx_config(prefix, root, hosts, port))
    proc = subprocess.Popen([nginx, "-p", str(prefix), "-c", str(conf)])
    for _ in range(100):
        try:
            socket.create_connection((f"127.0.0.{hosts + 1}", port), timeout=0.2).close()
            return proc
        except OSError:
            time.sleep(0.05)
    proc.terminate()
    raise RuntimeError(f"nginx did not start: {(prefix / 'error.log').read_text()}")


def read_log(log: Path, offset: int) -> tuple[int, int, dict[str, int], int]:
    """(requests, body bytes, requests by status, new offset) of the log past ``offset``."""
    with log.open("rb") as handle:
        handle.seek(offset)
        lines = handle.read().decode().splitlines()
        end = handle.tell()
    statuses: dict[str, int] = {}
    sent = 0
    for line in lines:
        _, status, size, *_ = line.split(" ")
        statuses[status] = statuses.get(status, 0) + 1
        sent += int(size)
    return len(lines), sent, statuses, end


def crawl(seeds: list[str], db: Path, args: argparse.Namespace) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one ``sitesync crawl`` process: the CPU time says
    what the crawl cost when other work shares the machine (the wall time then varies)."""
    env = {**os.environ, "SITESYNC_DELAY": "0", "SITESYNC_CONCURRENCY": str(args.concurrency),
           "SITESYNC_PER_HOST_CONCURRENCY": str(args.per_host)}  # fmt: skip
    if args.processes:  # else the crawl's default: one process per core
        env["SITESYNC_PROCESSES"] = str(args.processes)
    started = time.monotonic()
    mode = SITEMAP_MODE if args.sitemaps else ["--no-sitemaps"]
    proc = subprocess.Popen([sys.executable, "-m", "sitesync", "crawl", *seeds, "--db", str(db),
                             *BASE, *mode], env=env, stdout=subprocess.DEVNULL)  # fmt: skip
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"crawl exited with {os.waitstatus_to_exitcode(status)}")
    return time.monotonic() - started, usage.ru_utime + usage.ru_stime


def store_figures(db: Path, run_id: int) -> tuple[int, int, int, set[str]]:
    """(pages reached, new page versions, page sightings, URLs with a new version)."""
    with sqlite3.connect(db) as conn:
        reached = conn.execute(
            "SELECT COUNT(*) FROM tasks WHERE run_id = ? AND state = 'completed' AND outcome"
            " IN ('success', 'not_modified', 'unchanged_per_sitemap')", (run_id,)
        ).fetchone()[0]  # fmt: skip
        versions = [row[0] for row in conn.execute(
            "SELECT r.url FROM record_versions v JOIN records r ON r.id = v.record_id "
            "WHERE v.run_id = ? AND r.kind = 'page'", (run_id,))]  # fmt: skip
        seen = conn.execute(
            "SELECT COUNT(*) FROM record_seen s JOIN records r ON r.id = s.record_id "
            "WHERE s.run_id = ? AND r.kind = 'page'", (run_id,)).fetchone()[0]  # fmt: skip
    return reached, len(versions), seen - len(versions), set(versions)


def as_key(url: str, port: int) -> str:
    """``http://127.0.0.H:PORT/path`` as the ``host:path`` :func:`change_pages` names."""
    address, _, path = url.removeprefix("http://").partition("/")
    host = int(address.removesuffix(f":{port}").rsplit(".", 1)[1]) - 2
    return f"{host}:/{path}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=20)
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--page-bytes", type=int, default=30_000)
    parser.add_argument("--changed", type=float, default=0.1)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--per-host", type=int, default=4)
    parser.add_argument("--processes", type=int, default=0, help="crawl processes (0: default)")
    parser.add_argument(
        "--sitemaps", action="store_true", help="serve dated sitemaps; skip pages they date"
    )
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/resync.json"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sitesync-resync-") as tmp:
        work = Path(tmp)
        work.chmod(0o755)  # nginx's worker may run as another user
        root = work / "site"
        write_site(root, args.hosts, args.pages, args.page_bytes)
        prefix = work / "nginx"
        prefix.mkdir()
        port = free_port()
        nginx = start_nginx(prefix, root, args.hosts, port)
        try:
            results = three_scans(work, root, port, args)
        finally:
            nginx.terminate()
            nginx.wait(10)
    report(results, args)


def three_scans(work: Path, root: Path, port: int, args: argparse.Namespace) -> dict[str, object]:
    seeds = [f"http://127.0.0.{host + 2}:{port}/" for host in range(args.hosts)]
    db = work / "store.db"
    log = work / "nginx" / "access.log"
    offset, scans, changed = 0, [], set()
    for run_id, name in enumerate(("first", "unchanged", "10% changed"), start=1):
        if run_id == 3:
            changed = change_pages(root, args.hosts, args.pages, args.page_bytes, args.changed)
        if args.sitemaps and run_id in (1, 3):
            write_sitemaps(root, args.hosts, args.pages, port)
        seconds, cpu = crawl(seeds, db, args)
        requests, sent, statuses, offset = read_log(log, offset)
        reached, versions, sightings, versioned = store_figures(db, run_id)
        scans.append(Scan(name, round(seconds, 2), round(cpu, 2), requests, sent, statuses,
                          reached, versions, sightings))  # fmt: skip
        if run_id == 3:
            exact = {as_key(url, port) for url in versioned} == changed
    total = args.hosts * args.pages
    first, second, third = scans
    return {
        "sitemaps": args.sitemaps,
        "processes": args.processes or "default (one per core)",
        "site": {"hosts": args.hosts, "pages_per_host": args.pages, "pages": total,
                 "page_bytes": args.page_bytes, "changed_pages": len(changed)},
        "scans": [asdict(scan) for scan in scans],
        "checks": {
            "unchanged_bytes_share": second.body_bytes / first.body_bytes,
            "unchanged_speedup": first.seconds / second.seconds,
            "unchanged_cpu_speedup": first.cpu_seconds / second.cpu_seconds,
            "load_average_1min_at_end": os.getloadavg()[0],
            "third_versions_exactly_the_changed_pages": exact,
            "third_sightings_all_others": third.sightings == total - len(changed),
            "every_page_reached_every_scan": all(s.pages_reached == total for s in scans),
        },
    }  # fmt: skip


def report(results: dict[str, object], args: argparse.Namespace) -> None:
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
