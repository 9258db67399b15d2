"""``sitesync supervise``: run queued runs, keep them alive, recover crashed ones."""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import signal
import socket
from typing import Annotated

import typer

from sitesync.cli._common import plain_console
from sitesync.cli.options import SUPERVISE, Flags, from_flags, settings_flags
from sitesync.config import Settings
from sitesync.redact import redact
from sitesync.runs.scans import start_due_scans
from sitesync.runs.supervisor import ScanStarter, Supervisor, SupervisorOptions
from sitesync.store import Store, open_store

console = plain_console(stderr=True)
log = logging.getLogger(__name__)


@settings_flags(*SUPERVISE)
def supervise_command(
    flags: Flags,
    once: Annotated[
        bool,
        typer.Option(
            help="One round for cron: watchdog, due scans, start queued runs, then wait "
            "for the workers it started to finish."
        ),
    ] = False,
) -> None:
    """Start workers for queued runs (and scheduled scans), heartbeat them, and recover
    runs whose heartbeat stopped. Several supervisors may share one store.

    SIGTERM or Ctrl-C makes its workers leave: their runs go back to the queue, and a
    paused run stays paused."""
    asyncio.run(_supervise(from_flags(**flags), once=once))


async def _supervise(settings: Settings, *, once: bool) -> None:
    store = await open_store(settings.db, **settings.store_options())
    supervisor_id = f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(2)}"
    supervisor = Supervisor(
        store,
        supervisor_id=supervisor_id,
        options=SupervisorOptions(
            workers_per_run=settings.workers_per_run,
            max_workers=settings.max_worker_processes,
            heartbeat=settings.supervisor_heartbeat_seconds,
            watchdog=settings.watchdog_seconds,
            stale_after=settings.stale_run_seconds,
            max_crash_retries=settings.max_crash_retries,
            worker_env={"SITESYNC_DB": settings.db, **_network_env(settings)},
        ),
        start_due_scans=_scan_starter(settings),
    )
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, supervisor.stop)
    console.print(f"supervisor {supervisor_id} on {redact(settings.db)}")
    try:
        await supervisor.run(once=once)
    finally:
        await store.close()


def _network_env(settings: Settings) -> dict[str, str]:
    """The networks opened to this supervisor (flags included) are opened to its workers."""
    return {
        "SITESYNC_ALLOW_PRIVATE_NETWORKS": "true" if settings.allow_private_networks else "false",
        "SITESYNC_ALLOWED_NETWORKS": ",".join(settings.allowed_networks),
    }


def _scan_starter(settings: Settings) -> ScanStarter:
    async def start(store: Store) -> object:
        return await start_due_scans(store, settings)

    return start
