"""Operator tools: ``sitesync claims release`` and ``sitesync runs cleanup-stale``.

Both preview with ``--dry-run``, ask before changing anything (``--yes`` skips the
question), and never touch active work unless forced.
"""

from __future__ import annotations

import time
from typing import Annotated

import typer
from rich.table import Table

from sitesync.cli._common import plain_console, with_store
from sitesync.cli.help import SitesyncTyper
from sitesync.cli.options import DbOption, from_flags
from sitesync.errors import ConfigError
from sitesync.models import Claim, Run, RunStatus
from sitesync.store import Store

console = plain_console()

claims_app = SitesyncTyper(help="Host claims held by workers.", no_args_is_help=True)

DryRun = Annotated[bool, typer.Option("--dry-run", help="Show what would change; change nothing.")]
Yes = Annotated[bool, typer.Option("--yes", help="Do not ask for confirmation.")]


@claims_app.command("release")
def release_claims(
    db: DbOption = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force", help="Also release live claims (with --worker-id or --all-active)."
        ),
    ] = False,
    worker_id: Annotated[
        str | None, typer.Option("--worker-id", help="Only this worker's claims.")
    ] = None,
    all_active: Annotated[
        bool, typer.Option("--all-active", help="Every live claim of every worker (needs --force).")
    ] = False,
    dry_run: DryRun = False,
    yes: Yes = False,
) -> None:
    """Release stuck claims. By default only expired ones; live claims only with --force
    and --worker-id ID or --all-active (which also asks for confirmation)."""
    if all_active and not force:
        raise ConfigError("--all-active releases live claims: it needs --force")
    if all_active and worker_id:
        raise ConfigError("give --worker-id or --all-active, not both")
    if force and not (worker_id or all_active):
        raise ConfigError("--force needs --worker-id ID or --all-active")
    settings = from_flags(db=db)
    expired_only = not force

    async def preview(store: Store) -> list[Claim]:
        return await store.release_claims_where(
            expired_only=expired_only, worker_id=worker_id, dry_run=True
        )

    claims = with_store(settings.db, preview)
    what = "expired claims" if expired_only else "claims, live ones included,"
    _show_claims(claims, f"{len(claims)} {what} to release")
    if dry_run or not claims:
        return
    asks = (all_active or not expired_only) and not yes
    if asks and not typer.confirm(f"Release {len(claims)} claims now?", default=False):
        raise typer.Exit(1)

    async def release(store: Store) -> list[Claim]:
        return await store.release_claims_where(
            expired_only=expired_only, worker_id=worker_id, dry_run=False
        )

    released = with_store(settings.db, release)
    console.print(f"released {len(released)} claims")


def _show_claims(claims: list[Claim], title: str) -> None:
    table = Table(title=title)
    for column in ("run", "host", "worker", "expires"):
        table.add_column(column)
    now = time.time()
    for claim in claims:
        left = claim.expires_at - now
        expires = f"in {left:.0f}s" if left > 0 else f"{-left:.0f}s ago"
        table.add_row(str(claim.run_id), claim.host, claim.worker_id, expires)
    console.print(table)


#: What cleanup-stale looks at unless asked for more: paused and queued runs wait for an
#: operator or a supervisor, which is intent, not staleness.
_STALE_BY_DEFAULT = frozenset({RunStatus.RUNNING})


def cleanup_stale(
    db: DbOption = None,
    older_than_minutes: Annotated[
        float, typer.Option(help="Idle this long (no task transition, no heartbeat).")
    ] = 60,
    include_paused: Annotated[
        bool, typer.Option("--include-paused", help="Also fail idle paused runs.")
    ] = False,
    include_queued: Annotated[
        bool, typer.Option("--include-queued", help="Also fail idle queued runs.")
    ] = False,
    dry_run: DryRun = False,
    yes: Yes = False,
) -> None:
    """Mark running runs with no activity for --older-than-minutes as failed (with the
    reason). Paused and queued runs are left alone unless asked; runs with recent activity
    are never touched."""
    settings = from_flags(db=db)
    idle = older_than_minutes * 60
    asked = {RunStatus.PAUSED: include_paused, RunStatus.QUEUED: include_queued}
    statuses = _STALE_BY_DEFAULT | {status for status, wanted in asked.items() if wanted}

    async def find(store: Store) -> list[Run]:
        inactive = await store.find_inactive_runs(idle_seconds=idle)
        return [run for run in inactive if run.status in statuses]

    runs = with_store(settings.db, find)
    console.print(_stale_table(runs, older_than_minutes))
    if dry_run or not runs:
        return
    if not yes and not typer.confirm(f"Mark {len(runs)} runs failed?", default=False):
        raise typer.Exit(1)
    reason = f"stale: no activity for over {older_than_minutes:g} minutes (cleanup-stale)"

    async def fail(store: Store) -> int:
        done = 0
        for run in runs:
            # Re-checked at the last moment: a run that woke up (or was paused) meanwhile
            # is left alone.
            if any(r.id == run.id for r in await find(store)):
                await store.transition_run(run.id, RunStatus.FAILED, reason=reason)
                done += 1
        return done

    console.print(f"marked {with_store(settings.db, fail)} runs failed")


def _stale_table(runs: list[Run], older_than_minutes: float) -> Table:
    table = Table(title=f"{len(runs)} runs idle for more than {older_than_minutes:g} minutes")
    for column in ("run", "status", "last activity", "pending"):
        table.add_column(column)
    for run in runs:
        last = max(run.last_activity_at or 0, run.heartbeat_at or 0, run.created_at)
        table.add_row(
            str(run.id),
            run.status.value,
            time.strftime("%Y-%m-%d %H:%M", time.localtime(last)),
            str(run.counters.pending + run.counters.assigned),
        )
    return table
