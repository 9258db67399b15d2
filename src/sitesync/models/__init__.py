"""The nouns of sitesync: runs, tasks, leases and what a worker reports back.

Everything here is a frozen value. Stores build them from rows; nothing mutates them.
One module per area (``runs``, ``tasks``, ``hosts``, ``records``); import from here.
"""

from __future__ import annotations

from sitesync.models.changes import ChangeReport, HostChanges
from sitesync.models.hosts import (
    Claim,
    ClaimGrant,
    Domain,
    DomainScan,
    HostState,
    HostStatus,
    RunHost,
    ScanSummary,
    Schedule,
    WorkerInfo,
)
from sitesync.models.records import (
    HostAssets,
    HostBacklog,
    OutcomeCount,
    RecordChange,
    RecordVersion,
    RunDiff,
    WorkerLeases,
)
from sitesync.models.revisits import EarlierFetch, LastFetch, Revisit, Validators
from sitesync.models.runs import (
    Run,
    RunConfig,
    RunCounters,
    RunStatus,
    SettingChange,
)
from sitesync.models.tasks import (
    AssetRecord,
    Attempt,
    CrawlArtifact,
    FetchOutcome,
    Lease,
    NewTask,
    ProcessedArtifact,
    ReportVerdict,
    Task,
    TaskReport,
    TaskState,
    canonical_json,
)

__all__ = [
    "AssetRecord",
    "Attempt",
    "ChangeReport",
    "Claim",
    "ClaimGrant",
    "CrawlArtifact",
    "Domain",
    "DomainScan",
    "EarlierFetch",
    "FetchOutcome",
    "HostAssets",
    "HostBacklog",
    "HostChanges",
    "HostState",
    "HostStatus",
    "LastFetch",
    "Lease",
    "NewTask",
    "OutcomeCount",
    "ProcessedArtifact",
    "RecordChange",
    "RecordVersion",
    "ReportVerdict",
    "Revisit",
    "Run",
    "RunConfig",
    "RunCounters",
    "RunDiff",
    "RunHost",
    "RunStatus",
    "ScanSummary",
    "Schedule",
    "SettingChange",
    "Task",
    "TaskReport",
    "TaskState",
    "Validators",
    "WorkerInfo",
    "WorkerLeases",
    "canonical_json",
]
