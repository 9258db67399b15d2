"""What the attempt history costs on disk: bytes per page of the SQLite file with and without it.

Crawls a generated loopback site (the benchmark's shape, fewer pages) with the real CLI and
the default plugins, then measures the file twice, each time checkpointed and VACUUMed:
as the crawl left it, and a copy with the history removed (every ``attempts`` row deleted,
``tasks.found_from`` set to NULL), which is what the same crawl stored before migration 0007.

    .venv/bin/python benchmarks/history_storage.py --hosts 5 --pages-per-host 400
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

from sitesync.testing import LOOPBACK_NETWORKS, LoopbackSite, SiteSpec


def compact_size(db: Path) -> int:
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("VACUUM")
    conn.close()
    return db.stat().st_size


def without_history(db: Path, copy: Path) -> int:
    shutil.copy(db, copy)
    conn = sqlite3.connect(copy)
    conn.execute("DELETE FROM attempts")
    conn.execute("UPDATE tasks SET found_from = NULL")
    conn.commit()
    conn.close()
    return compact_size(copy)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=5)
    parser.add_argument("--pages-per-host", type=int, default=400)
    args = parser.parse_args()
    spec = SiteSpec(hosts=args.hosts, pages_per_host=args.pages_per_host)
    with tempfile.TemporaryDirectory() as tmp, LoopbackSite(spec) as site:
        db = Path(tmp) / "crawl.db"
        env = {**os.environ, "SITESYNC_ALLOWED_NETWORKS": ",".join(LOOPBACK_NETWORKS)}
        subprocess.run(
            [sys.executable, "-m", "sitesync", "crawl", *site.root_urls, "--db", str(db),
             "--delay", "0", "--per-host-concurrency", "0", "--no-progress"],
            check=True, env=env, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        conn = sqlite3.connect(db)
        pages = conn.execute("SELECT COUNT(*) FROM tasks").fetchone()[0]
        attempts = conn.execute("SELECT COUNT(*) FROM attempts").fetchone()[0]
        conn.close()
        with_size = compact_size(db)
        without_size = without_history(db, Path(tmp) / "without.db")
    print(f"tasks {pages}, attempts kept {attempts}")
    print(f"with history:    {with_size:>12,} bytes  {with_size / pages:8.1f} bytes/page")
    print(f"without history: {without_size:>12,} bytes  {without_size / pages:8.1f} bytes/page")
    extra = with_size - without_size
    print(f"history costs    {extra:>12,} bytes  {extra / pages:8.1f} bytes/page "
          f"({100 * extra / without_size:.1f}% of the file)")  # fmt: skip


if __name__ == "__main__":
    main()
