"""The floor of a SQLite frontier's work per page, in bare SQL with no sitesync code.

What any crawler that keeps its frontier in one SQLite file must do for a page: lease it
(one batch of pending URLs at a time), mark it done, and offer its links for admission
(``INSERT OR IGNORE`` on a unique URL). No lease tokens, counters, records or hosts' state:
sitesync's own store can only cost more. Prints the CPU time per page.

    .venv/bin/python benchmarks/frontier_floor.py [--pages 20000] [--links 25] [--batch 64]
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=20_000)
    parser.add_argument("--links", type=int, default=25)
    parser.add_argument("--batch", type=int, default=64)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sitesync-floor-") as tmp:
        db = sqlite3.connect(Path(tmp) / "floor.db", isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute(
            "CREATE TABLE tasks (id INTEGER PRIMARY KEY, url TEXT UNIQUE NOT NULL,"
            " state TEXT NOT NULL, host TEXT)"
        )
        db.execute("CREATE INDEX tasks_state ON tasks (state, host)")
        urls = [f"http://127.0.0.{2 + i % 20}:8080/p/{i}.html" for i in range(args.pages)]
        db.execute("INSERT INTO tasks (url, state, host) VALUES (?, 'pending', 'h')", (urls[0],))
        rng = random.Random(1)
        started, done = time.process_time(), 0
        while done < args.pages:
            db.execute("BEGIN IMMEDIATE")
            rows = db.execute(
                "SELECT id FROM tasks WHERE state = 'pending' LIMIT ?", (args.batch,)
            ).fetchall()
            db.executemany("UPDATE tasks SET state = 'assigned' WHERE id = ?", rows)
            db.execute("COMMIT")
            if not rows:
                break
            db.execute("BEGIN IMMEDIATE")
            db.executemany("UPDATE tasks SET state = 'completed' WHERE id = ?", rows)
            # Links to pages already known, and to the next ones of the site (a tree).
            known = min(args.pages, done + 2_000)
            links = [(urls[rng.randrange(known)],) for _ in range(args.links * len(rows))]
            db.executemany(
                "INSERT OR IGNORE INTO tasks (url, state, host) VALUES (?, 'pending', 'h')", links
            )
            db.execute("COMMIT")
            done += len(rows)
        cpu = time.process_time() - started
        db.close()
    print(f"{done} pages, {cpu:.2f} s of CPU: {cpu / done * 1000:.3f} ms a page (bare SQL floor)")


if __name__ == "__main__":
    main()
