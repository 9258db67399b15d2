"""A real PostgreSQL server for the tests: CI's, or a throwaway one started here.

``SITESYNC_TEST_POSTGRES_DSN`` names a running server (CI sets it). Without it, the suite
starts its own server once per session from Debian's binaries (``/usr/lib/postgresql/*/bin``)
in a temporary directory, on a free port of 127.0.0.1, and deletes it at the end. Tests never
skip for want of PostgreSQL: every problem here raises :class:`PostgresUnavailable`, which
``conftest.py`` turns into a test error with this module's one-line explanation.

Each pytest worker (``pytest -n``) migrates one schema of its own (``t_<random>``) once, and
each test gets it emptied (:class:`WorkerSchema`): much faster than migrating a schema or
cloning a database per test, and as isolated, since no two workers share a schema and the
store sets ``search_path`` to it. Tests of the migrations themselves make fresh, empty schemas
with :func:`schema`.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
from psycopg import sql

ENV_DSN = "SITESYNC_TEST_POSTGRES_DSN"
_BINARIES = "/usr/lib/postgresql/*/bin"
# Durability costs time and buys nothing for a server deleted at the end of the session.
_FAST = "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"


class PostgresUnavailable(Exception):
    """The tests need PostgreSQL and cannot get one."""


@contextlib.contextmanager
def postgres_server() -> Iterator[str]:
    """Yield the DSN of a reachable server: the configured one, or a throwaway one."""
    dsn = os.environ.get(ENV_DSN)
    if dsn:
        check_reachable(dsn, f"(from {ENV_DSN})")
        yield dsn
    else:
        with throwaway_server() as started:
            check_reachable(started, "(the throwaway test server)")
            yield started


def check_reachable(dsn: str, origin: str) -> None:
    try:
        psycopg.connect(dsn, connect_timeout=5).close()
    except psycopg.Error as exc:
        where = _location(dsn)
        detail = " ".join(str(exc).split())
        raise PostgresUnavailable(
            f"cannot connect to PostgreSQL at {where} {origin}: {detail}"
        ) from exc


@contextlib.contextmanager
def throwaway_server() -> Iterator[str]:
    """initdb + pg_ctl start in a temp dir; stopped and deleted on exit."""
    initdb, pg_ctl = _binary("initdb"), _binary("pg_ctl")
    as_user = _unprivileged_prefix()
    reap_abandoned_servers(pg_ctl, as_user)
    # Not under pytest's tmp_path: that is private to root, and the server cannot run as root.
    root = Path(tempfile.mkdtemp(prefix=_PREFIX))
    data, sockets, log = root / "data", root / "sockets", root / "server.log"
    try:
        (root / _OWNER).write_text(str(os.getpid()))
        sockets.mkdir()
        if as_user:
            owner = pwd.getpwnam("postgres")
            for path in (root, sockets):
                os.chown(path, owner.pw_uid, owner.pw_gid)
        _run([*as_user, initdb, "-D", data, "-U", "postgres", "-A", "trust", "--no-sync",
              "-E", "UTF8", "--no-locale"], "initdb")  # fmt: skip
        port = _start(as_user, pg_ctl, data, sockets, log)
        try:
            yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
        finally:
            _run([*as_user, pg_ctl, "-D", data, "-m", "immediate", "-w", "stop"], "pg_ctl stop")
    finally:
        shutil.rmtree(root, ignore_errors=True)


_PREFIX = "sitesync-pg-"
_OWNER = "owner.pid"  # the test session's process: while it lives, its server is in use


def reap_abandoned_servers(pg_ctl: str, as_user: list[str]) -> list[Path]:
    """Stop and delete the throwaway servers of test sessions that were killed (a SIGKILL or
    a CI timeout skips the ``finally`` that stops them); the directories removed."""
    reaped = []
    for root in Path(tempfile.gettempdir()).glob(f"{_PREFIX}*"):
        try:
            owner = int((root / _OWNER).read_text())
        except (OSError, ValueError):
            continue  # not ours, or being created right now
        if _alive(owner):
            continue
        if (root / "data" / "postmaster.pid").exists():
            with contextlib.suppress(PostgresUnavailable):
                _run([*as_user, pg_ctl, "-D", root / "data", "-m", "immediate", "-w", "stop"],
                     "pg_ctl stop")  # fmt: skip
        shutil.rmtree(root, ignore_errors=True)
        reaped.append(root)
    return reaped


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _start(as_user: list[str], pg_ctl: str, data: Path, sockets: Path, log: Path) -> int:
    """Start the server on a free port; the port it listens on."""
    for attempt in range(3):
        # Another process may take the port between the probe and the server's bind.
        port = _free_port()
        options = f"-c listen_addresses=127.0.0.1 -p {port} -k {sockets} {_FAST}"
        command = [*as_user, pg_ctl, "-D", data, "-l", log, "-o", options, "-w", "-t", "60",
                   "start"]  # fmt: skip
        try:
            _run(command, "pg_ctl start", log)
        except PostgresUnavailable:
            if attempt == 2:
                raise
        else:
            return port
    raise AssertionError("unreachable")


def search_path(schema: str) -> sql.Composed:
    """The statement that points a connection's unqualified names at ``schema``."""
    return sql.SQL("SET search_path TO {}").format(sql.Identifier(schema))


def create_schema(dsn: str) -> str:
    name = f"t_{secrets.token_hex(6)}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
    return name


def drop_schema(dsn: str, name: str) -> None:
    """Drop the schema, ending first any session that still holds locks in it: a test that
    failed or timed out mid-transaction (a store call cancelled while it waited on a lock)
    can leave one behind, and DROP would wait for it for ever, hanging the suite."""
    drop = sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name))
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SET lock_timeout = '10s'")
        for _ in range(3):
            try:
                conn.execute(drop)
                return
            except psycopg.errors.LockNotAvailable:
                conn.execute(_END_HOLDERS, {"schema": name})
        conn.execute(drop)


_END_HOLDERS = """
SELECT pg_terminate_backend(l.pid)
  FROM pg_locks AS l
  JOIN pg_class AS c ON c.oid = l.relation
  JOIN pg_namespace AS n ON n.oid = c.relnamespace
 WHERE n.nspname = %(schema)s AND l.pid <> pg_backend_pid()
"""


@contextlib.contextmanager
def schema(dsn: str) -> Iterator[str]:
    """A fresh, empty schema for one test, dropped with everything in it afterwards."""
    name = create_schema(dsn)
    try:
        yield name
    finally:
        drop_schema(dsn, name)


class WorkerSchema:
    """One migrated schema per pytest worker, handed to each test empty.

    Emptying is ``TRUNCATE ... RESTART IDENTITY`` of every table but ``schema_migrations``
    (run ids start at 1 again, as in a new store); a test that changed the schema's tables
    (DDL) gets a freshly migrated one instead of a schema that is no longer the current one.
    """

    def __init__(self, dsn: str, migrate: Callable[[str, str], None]) -> None:
        self._dsn, self._migrate = dsn, migrate
        self.name = ""
        self._tables: tuple[str, ...] = ()

    def fresh(self) -> str:
        if self.name and self._table_list() == self._tables:
            self._empty()
        else:
            self.drop()
            self.name = create_schema(self._dsn)
            self._migrate(self._dsn, self.name)
            self._tables = self._table_list()
        return self.name

    def drop(self) -> None:
        if self.name:
            drop_schema(self._dsn, self.name)
            self.name = ""

    def _table_list(self) -> tuple[str, ...]:
        with psycopg.connect(self._dsn, autocommit=True) as conn:
            rows = conn.execute(_TABLES, {"schema": self.name}).fetchall()
        return tuple(f"{table}:{columns}" for table, columns in rows)

    def _empty(self) -> None:
        tables = [entry.split(":", 1)[0] for entry in self._tables]
        names = sql.SQL(", ").join(
            sql.Identifier(self.name, table) for table in tables if table != "schema_migrations"
        )
        truncate = sql.SQL("TRUNCATE {} RESTART IDENTITY CASCADE").format(names)
        with psycopg.connect(self._dsn, autocommit=True) as conn:
            # A process the last test left behind may still hold a lock: end it, as DROP does.
            conn.execute(_END_HOLDERS, {"schema": self.name})
            conn.execute("SET lock_timeout = '10s'")
            conn.execute(truncate)


# Tables with their column lists: a test that altered one is caught by the comparison.
_TABLES = """
SELECT c.relname, string_agg(a.attname || ' ' || a.atttypid::regtype::text, ',' ORDER BY a.attnum)
  FROM pg_class AS c
  JOIN pg_namespace AS n ON n.oid = c.relnamespace
  JOIN pg_attribute AS a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
 WHERE n.nspname = %(schema)s AND c.relkind IN ('r', 'p')
 GROUP BY c.relname
 ORDER BY c.relname
"""


def _binary(name: str) -> str:
    # Newest major version first; a PATH lookup covers non-Debian layouts (Homebrew, pgdg).
    found = sorted(glob.glob(f"{_BINARIES}/{name}"), key=_major, reverse=True)
    path = found[0] if found else shutil.which(name)
    if path is None:
        raise PostgresUnavailable(
            f"PostgreSQL server binaries not found ({_BINARIES}/{name}): install Debian's "
            f"postgresql package (apt-get install -y postgresql) or set {ENV_DSN}"
        )
    return path


def _major(path: str) -> int:
    version = Path(path).parent.parent.name
    return int(version) if version.isdigit() else 0


def _unprivileged_prefix() -> list[str]:
    """PostgreSQL refuses to run as root: run it as the ``postgres`` system user instead."""
    if os.geteuid() != 0:
        return []
    try:
        pwd.getpwnam("postgres")
    except KeyError as exc:
        raise PostgresUnavailable(
            "running as root, and there is no 'postgres' system user to run the test server "
            "as: install Debian's postgresql package (apt-get install -y postgresql)"
        ) from exc
    return ["runuser", "-u", "postgres", "--"]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _run(command: list[str | Path], what: str, log: Path | None = None) -> None:
    result = subprocess.run(
        [str(part) for part in command], capture_output=True, text=True, timeout=120, check=False
    )
    if result.returncode != 0:
        output = (result.stderr or result.stdout).strip()
        if log is not None and log.exists():
            output += "\n" + log.read_text(errors="replace")[-2000:]
        raise PostgresUnavailable(f"{what} failed (exit {result.returncode}): {output}")


def _location(dsn: str) -> str:
    try:
        params = psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.Error:
        return "(unparsable DSN)"
    return (
        f"{params.get('host', 'localhost')}:{params.get('port', '5432')}/{params.get('dbname', '')}"
    )
