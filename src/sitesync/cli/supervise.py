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

from sitesync.cli._common import (
    AllowNetworkOption,
    AllowPrivateNetworksOption,
    DbOption,
    network_overrides,
    plain_console,
)
from sitesync.config import Settings, load_settings
from sitesync.redact import redact
from sitesync.runs.supervisor import ScanStarter, Supervisor, SupervisorOptions
from sitesync.store import Store, open_store

console = plain_console(stderr=True)
log = logging.getLogger(__name__)


def supervise_command(
    db: DbOption = None,
    workers_per_run: Annotated[
        int | None, typer.Option(help="Workers started per run. [1]")
    ] = None,
    max_workers: Annotated[
        int | None, typer.Option(help="Worker processes at once, over all runs. [4]")
    ] = None,
    heartbeat: Annotated[float | None, typer.Option(help="Run heartbeat seconds. [10]")] = None,
    watchdog: Annotated[float | None, typer.Option(help="Watchdog interval seconds. [60]")] = None,
    stale_after: Annotated[
        float | None, typer.Option(help="No heartbeat for this long = crashed. [120]")
    ] = None,
    max_crash_retries: Annotated[
        int | None, typer.Option(help="Re-queues of a crashed run before failing it. [3]")
    ] = None,
    once: Annotated[
        bool,
        typer.Option(
            help="One round for cron: watchdog, due scans, start queued runs, then wait "
            "for the workers it started to finish."
        ),
    ] = False,
    allow_private_networks: AllowPrivateNetworksOption = None,
    allow_network: AllowNetworkOption = None,
) -> None:
    """Start workers for queued runs (and scheduled scans), heartbeat them, and recover
    runs whose heartbeat stopped. Several supervisors may share one store.

    SIGTERM or Ctrl-C makes its workers leave: their runs go back to the queue, and a
    paused run stays paused."""
    settings = load_settings(
        db=db,
        workers_per_run=workers_per_run,
        max_worker_processes=max_workers,
        supervisor_heartbeat_seconds=heartbeat,
        watchdog_seconds=watchdog,
        stale_run_seconds=stale_after,
        max_crash_retries=max_crash_retries,
        **network_overrides(allow_private_networks, allow_network),
    )
    asyncio.run(_supervise(settings, once=once))


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
    from sitesync.runs.scans import start_due_scans

    async def start(store: Store) -> object:
        return await start_due_scans(store, settings)

    return start
