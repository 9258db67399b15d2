"""``sitesync pause|resume|stop|cancel RUN_ID``: steer a run from any process.

The command only changes the run's status in the store; every worker of the run notices
within ``status_poll_seconds`` (0.5 s) and acts: pause starts nothing more, gives leased
pages not yet started back, lets in-flight pages finish and waits; stop and cancel give
in-flight pages back to PENDING at once.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.text import Text

from sitesync.cli._common import plain_console, with_store
from sitesync.cli.options import DbOption, from_flags
from sitesync.cli.runs import status_text
from sitesync.models import Run, RunStatus
from sitesync.store import Store

console = plain_console()

RunId = Annotated[int, typer.Argument(help="The run.")]


def _move(db: str | None, run_id: int, target: RunStatus, reason: str) -> Run:
    settings = from_flags(db=db)

    async def move(store: Store) -> Run:
        return await store.transition_run(run_id, target, reason=reason)

    run = with_store(settings.db, move)
    console.print(Text.assemble(f"run {run.id} is now ", status_text(run.status)))
    return run


def pause_command(run_id: RunId, db: DbOption = None) -> None:
    """Pause a run: no new URLs are taken, in-flight ones finish, everything is kept."""
    _move(db, run_id, RunStatus.PAUSED, "paused by a user")


def resume_command(run_id: RunId, db: DbOption = None) -> None:
    """Resume a paused run (its waiting workers carry on), or hand a stopped or failed
    run back to the supervisor (queued)."""
    settings = from_flags(db=db)

    async def target(store: Store) -> RunStatus:
        run = await store.get_run(run_id)
        return RunStatus.RUNNING if run.status is RunStatus.PAUSED else RunStatus.QUEUED

    status = with_store(settings.db, target)
    run = _move(db, run_id, status, "resumed by a user")
    if run.status is RunStatus.QUEUED:
        console.print(f"'sitesync supervise' picks it up, or run 'sitesync worker --run {run.id}'")


def stop_command(run_id: RunId, db: DbOption = None) -> None:
    """Stop a run: in-flight URLs go back to pending; the run can be resumed later."""
    _move(db, run_id, RunStatus.STOPPED, "stopped by a user")


def cancel_command(
    run_id: RunId,
    db: DbOption = None,
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask for confirmation.")] = False,
) -> None:
    """Cancel a run for good: it can never be resumed."""
    if not yes and not typer.confirm(f"Cancel run {run_id} for good?", default=False):
        raise typer.Exit(1)
    _move(db, run_id, RunStatus.CANCELLED, "cancelled by a user")
