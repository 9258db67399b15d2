"""Run heartbeats, the watchdog and operator clean-up tools on SQLite.

SQL in ``supervision.sql``; what becomes of a stale run in :mod:`sitesync.store.rules`. Every
call is the same statements on both backends: written once, in :mod:`sitesync.store._plain`
(one query each) and :mod:`sitesync.store._scripts` (several in one transaction).
"""

from __future__ import annotations

from sitesync.store._scripts import ScriptedSupervision
from sitesync.store.sqlite._db import SqliteDb


class SqliteSupervision(ScriptedSupervision[SqliteDb]):
    """Nothing of its own: the area as both backends have it."""
