"""What ``sitesync status --check`` judges of the active runs: a pure function of the
overview, one line per problem, so a monitor acts on the exit code and shows the line."""

from __future__ import annotations

from dataclasses import dataclass

from sitesync.models import RunStatus
from sitesync.readmodel.idle import ago
from sitesync.readmodel.schema import RunSummary, StatusOverview

#: Finished URLs a run needs before its failure share is judged (a few early failures of
#: a young run are not a failing run).
MIN_FINISHED = 20


@dataclass(frozen=True, slots=True)
class HealthLimits:
    max_failed_share: float = 0.5  # of the finished URLs
    max_duration: float | None = None  # seconds a run may take; None: never judged


def problems(overview: StatusOverview, limits: HealthLimits) -> tuple[str, ...]:
    """One line per problem of the active runs: stalled, failing, or past its end."""
    found: list[str] = []
    for run in overview.active_runs:
        found.extend(_problems_of(run, overview.now, limits))
    return tuple(found)


def _problems_of(run: RunSummary, now: float, limits: HealthLimits) -> list[str]:
    found = []
    if run.status is RunStatus.RUNNING and run.idle_reasons:
        found.append(f"run {run.id} stalled: {run.idle_reasons[0]}")
    counters = run.counters
    finished = counters.completed + counters.failed
    if finished >= MIN_FINISHED and counters.failed > limits.max_failed_share * finished:
        share = 100 * counters.failed / finished
        found.append(f"run {run.id} failing: {share:.0f}% of {finished} finished URLs failed")
    if limits.max_duration is not None and run.started_at is not None:
        took = now - run.started_at
        if took > limits.max_duration:
            found.append(
                f"run {run.id} past its expected end: {run.status.value} for {ago(took)}, "
                f"more than {ago(limits.max_duration)}"
            )
    return found
