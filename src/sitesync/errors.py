"""Every error sitesync raises on purpose derives from :class:`SitesyncError`.

The tree::

    SitesyncError
    ├── ConfigError            a setting or a combination of settings is invalid
    ├── CannotJoinRun          this process cannot work on a run as the run's settings ask
    ├── InvalidURL             a URL cannot be crawled (malformed, not http(s), no host)
    ├── StoreError             the store could not do what was asked
    │   ├── StoreLocked        the database stayed locked past busy_timeout
    │   ├── StoreUnavailable   transient store faults outlasted store_retry_seconds
    │   ├── MigrationError     the schema could not be brought up to date
    │   │   └── SchemaTooNew   a newer sitesync migrated the store: refused
    │   ├── StoreNotReady      a command that only reads found no store, or an older one
    │   ├── RunNotFound        no run has that id
    │   ├── IllegalTransition  a run cannot move from its status to the one asked for
    │   └── ScanConflict       the scope already has an active run (``run_id`` says which)
    ├── OutputError            a file asked for (``export --output``) cannot be written
    ├── FetchError             a fetcher could not even produce an outcome (a bug, not a bad server)
    └── PluginError            a plugin could not be loaded or built
        └── NotConfigured      raised by a plugin factory: "not for this run" (not a failure)

Expected outcomes of a fetch (timeouts, refusals, 404s) are values (``FetchOutcome``), not
exceptions. A completion reported under a lease that has been taken over is a verdict
(``ReportVerdict.LEASE_LOST``), not an exception either: a late worker is expected, not exceptional.
"""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    """What each exit code of the ``sitesync`` command means (docs/operating.md's table is
    generated from these comments)."""

    OK = 0  # done (crawl: its run completed; worker: it completed, or the worker left)
    ERROR = 1  # one line on stderr names the problem (crawl: its run failed or was cancelled)
    USAGE = 2  # the command line itself is wrong (an unknown flag, a missing argument)
    SCAN_CONFLICT = 3  # scan: the scope already has an active run, named on stderr
    ATTENTION = 4  # status --check: an active run is stalled, failing or overdue
    STORE_UNAVAILABLE = 75  # the store stayed unreachable past store_retry_seconds; try later
    CANNOT_JOIN = 78  # this process cannot work on the run as its settings ask
    STOPPED = 130  # crawl: Ctrl-C stopped the run (resumable with crawl --resume)
    LEFT_RUN = 143  # crawl: SIGTERM; this process left, the run goes on without it


class SitesyncError(Exception):
    """sitesync failed."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or (self.__doc__ or "").strip())


class ConfigError(SitesyncError):
    """A setting is invalid."""


class CannotJoinRun(SitesyncError):
    """This process cannot work on the run as the run's settings ask: a flag contradicts a
    setting the run was created with, or a plugin or fetcher the run uses is missing here.
    The process exits with :data:`EXIT_CANNOT_JOIN` and the run is left as it was."""


#: Exit code of a process refused by a run's settings (sysexits' EX_CONFIG).
EXIT_CANNOT_JOIN = ExitCode.CANNOT_JOIN


class InvalidURL(SitesyncError):
    """The URL cannot be crawled."""


class StoreError(SitesyncError):
    """The store failed."""


class StoreLocked(StoreError):
    """The database stayed locked longer than busy_timeout allows."""


class StoreUnavailable(StoreError):
    """The store stayed unreachable (or locked) for longer than ``store_retry_seconds``.

    Not the run's fault: a worker that gets this exits with :data:`EXIT_STORE_UNAVAILABLE`
    and leaves its run ``running`` for the watchdog to re-queue.
    """


#: Exit code of a process that gave up on an unavailable store (sysexits' EX_TEMPFAIL:
#: "try again later").
EXIT_STORE_UNAVAILABLE = ExitCode.STORE_UNAVAILABLE


class MigrationError(StoreError):
    """The database schema could not be brought up to date."""


class SchemaTooNew(MigrationError):
    """The store was migrated by a newer sitesync."""


class StoreNotReady(StoreError):
    """A command that only reads found no store at the place given, or one whose schema is
    older than this sitesync's: reading never creates or migrates a store."""


class RunNotFound(StoreError):
    """No run has that id."""


class IllegalTransition(StoreError):
    """The run cannot move to that status from the one it is in."""


class OutputError(SitesyncError):
    """The output file cannot be written."""


class FetchError(SitesyncError):
    """The fetcher failed without producing an outcome."""


class PluginError(SitesyncError):
    """A plugin could not be loaded or built."""


class NotConfigured(PluginError):
    """The plugin opts out of this run (its factory raises this; the run goes on without it)."""


class ScanConflict(StoreError):
    """The scope already has an active run."""

    def __init__(self, scope: str, run_id: int) -> None:
        super().__init__(f"scope {scope!r} already has an active run: {run_id}")
        self.scope = scope
        self.run_id = run_id
