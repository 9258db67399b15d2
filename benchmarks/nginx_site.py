"""``run.py``'s generated site served by nginx as static files, so that the server is not
what limits: the Python site (``sitesync.testing``) costs a core of its own at the rates two
crawl processes reach on two cores.

Every page is written out, one directory per host; nginx listens on each host's loopback
address on one port, as the Python site does, so the pages' absolute links stay right. Its
configuration, pid file, logs and pages live in a temporary directory, removed on stop.
Needs nginx on PATH (``apt-get install nginx-light``).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import psutil

from sitesync.testing import SiteSpec
from sitesync.testing.pages import Pages
from sitesync.testing.spec import page_path


def export_site(spec: SiteSpec, port: int, root: Path) -> None:
    """Every page of every host as a file: ``root/h<H>/index.html``, ``root/h<H>/p/<N>.html``."""
    pages = Pages(spec, port)
    for h in range(spec.hosts):
        host_dir = root / f"h{h}"
        (host_dir / "p").mkdir(parents=True)
        for i in range(spec.pages_per_host):
            path = page_path(i)
            name = "index.html" if path == "/" else path.lstrip("/")
            (host_dir / name).write_bytes(pages.render(h, i))


def nginx_config(spec: SiteSpec, port: int, root: Path, prefix: Path) -> str:
    servers = "\n".join(
        f"  server {{ listen {spec.ip(h)}:{port}; root {root / f'h{h}'}; index index.html; }}"
        for h in range(spec.hosts)
    )
    temp = " ".join(
        f"{kind}_temp_path {prefix / kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    return f"""user root;
worker_processes 1;
daemon off;
pid {prefix / "nginx.pid"};
error_log {prefix / "error.log"} warn;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  sendfile on;
  keepalive_requests 1000000;
  types {{ text/html html; }}
  default_type text/html;
  {temp}
{servers}
}}
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.2", 0))
        return int(sock.getsockname()[1])


def start_nginx(config: Path, prefix: Path, spec: SiteSpec, port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(["nginx", "-c", str(config), "-p", str(prefix)])
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection((spec.ip(spec.hosts - 1), port), timeout=1).close()
            return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"nginx did not start: {(prefix / 'error.log').read_text()[-2000:]}")


class NginxSite:
    """The site on nginx, for ``run.py``: its roots, its port and the CPU it used."""

    def __init__(self, spec: SiteSpec) -> None:
        if shutil.which("nginx") is None:
            raise RuntimeError("no nginx on PATH: apt-get install nginx-light, or --server python")
        self._dir = Path(tempfile.mkdtemp(prefix="sitesync-bench-nginx-"))
        self.port = free_port()
        self.root_urls = [f"http://{spec.ip(h)}:{self.port}/" for h in range(spec.hosts)]
        try:
            export_site(spec, self.port, self._dir / "site")
            prefix = self._dir / "nginx"
            prefix.mkdir()
            config = prefix / "nginx.conf"
            config.write_text(nginx_config(spec, self.port, self._dir / "site", prefix))
            self.proc = start_nginx(config, prefix, spec, self.port)
        except BaseException:
            shutil.rmtree(self._dir, ignore_errors=True)
            raise
        self._ps = psutil.Process(self.proc.pid)

    def cpu_seconds(self) -> float:
        """User + sys CPU of nginx, its master and its worker."""
        total = 0.0
        for proc in (self._ps, *self._ps.children(recursive=True)):
            times = proc.cpu_times()
            total += times.user + times.system
        return total

    def stop(self) -> None:
        stop_process(self.proc)
        shutil.rmtree(self._dir, ignore_errors=True)


def stop_process(proc: subprocess.Popen[bytes] | subprocess.Popen[str]) -> None:
    """Terminate a server the harness started, killing it after 10 s if it lingers."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
