"""Five deliberate mutations of the hot spots, each of which the suite must catch (issue 26).

Each mutation is applied to the source, the tests that should catch it run, and the source
is restored whatever happens. A mutation that survives (its tests pass) is a hole in the
suite: the script exits 1 and names it.

    make mutations                  # all five
    .venv/bin/python scripts/mutations.py fencing counter
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]


class Mutation(NamedTuple):
    path: str
    original: str
    mutant: str
    tests: tuple[str, ...]


MUTATIONS = {
    # A report under a lease another worker took over must change nothing.
    "fencing": Mutation(
        "src/sitesync/store/sqlite/frontier.sql",
        " WHERE id = :task_id AND state = 'assigned' AND lease_token = :token;",
        " WHERE id = :task_id AND state = 'assigned';",
        ("tests/acceptance/test_exclusivity.py", "tests/contract", "-k", "sqlite"),
    ),
    # No request starts once the worker knows of a pause.
    "pause-check": Mutation(
        "src/sitesync/engine/pageturns.py",
        "    def _not_halted(self) -> None:\n        if self.halted():\n            raise Halted",
        "    def _not_halted(self) -> None:\n        if False:\n            raise Halted",
        ("tests/faults/test_pause_drain.py", "tests/faults/test_pause_and_recovery.py"),
    ),
    # A host with a request of ours under way is kept until it ends, not handed over.
    "claim-handover": Mutation(
        "src/sitesync/engine/claims.py",
        "            busy_hosts=self._busy_hosts(),",
        "            busy_hosts=[],",
        ("tests/acceptance/test_many_workers.py", "tests/integration/test_claim_rebalance.py"),
    ),
    # Every connection, a redirect hop's included, is checked against the network policy.
    "socket-check": Mutation(
        "src/sitesync/fetch/netpolicy.py",
        "        self.check(ip)\n        return socket.socket(",
        "        return socket.socket(",
        ("tests/safety",),
    ),
    # The run's counters move by exactly what a report batch did.
    "counter": Mutation(
        "src/sitesync/store/sqlite/frontier.sql",
        "       completed = completed + :completed,",
        "       completed = completed + :completed + (:completed > 1),",
        ("tests/acceptance/test_many_workers.py", "tests/acceptance/test_crash_and_stop.py",
         "-k", "sqlite"),
    ),
}  # fmt: skip


def caught(name: str, mutation: Mutation) -> bool:
    path = ROOT / mutation.path
    source = path.read_text(encoding="utf-8")
    if mutation.original not in source:
        sys.exit(f"{name}: the code it mutates changed ({mutation.path}); update the script")
    # The first occurrence (the fencing check guards several reports: the first is enough).
    path.write_text(source.replace(mutation.original, mutation.mutant, 1), encoding="utf-8")
    try:
        started = time.monotonic()
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x",
                   "-n", "4", *mutation.tests]  # fmt: skip
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=os.environ)
        summary = (done.stdout.strip().splitlines() or ["(no output)"])[-1]
        print(f"{name}: {'caught' if done.returncode else 'SURVIVED'} in "
              f"{time.monotonic() - started:.0f}s: {summary}", flush=True)  # fmt: skip
        return done.returncode != 0
    finally:
        path.write_text(source, encoding="utf-8")


def main() -> int:
    names = sys.argv[1:] or list(MUTATIONS)
    unknown = [n for n in names if n not in MUTATIONS]
    if unknown:
        sys.exit(f"unknown mutation(s): {', '.join(unknown)}; known: {', '.join(MUTATIONS)}")
    survived = [name for name in names if not caught(name, MUTATIONS[name])]
    if survived:
        print(f"survived: {', '.join(survived)}")
    return 1 if survived else 0


if __name__ == "__main__":
    raise SystemExit(main())
