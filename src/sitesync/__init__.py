"""sitesync: crawl websites politely and keep a versioned catalogue of them in sync."""

from __future__ import annotations

from sitesync.errors import (
    ConfigError,
    FetchError,
    IllegalTransition,
    InvalidURL,
    MigrationError,
    NotConfigured,
    PluginError,
    RunNotFound,
    SitesyncError,
    StoreError,
    StoreLocked,
)
from sitesync.models import (
    AssetRecord,
    CrawlArtifact,
    Lease,
    NewTask,
    ProcessedArtifact,
    RecordVersion,
    ReportVerdict,
    Run,
    RunConfig,
    RunCounters,
    RunDiff,
    RunStatus,
    Task,
    TaskReport,
    TaskState,
)
from sitesync.urls import normalize_url, resolve_link

__version__ = "0.1.0"

__all__ = [
    "AssetRecord",
    "ConfigError",
    "CrawlArtifact",
    "FetchError",
    "IllegalTransition",
    "InvalidURL",
    "Lease",
    "MigrationError",
    "NewTask",
    "NotConfigured",
    "PluginError",
    "ProcessedArtifact",
    "RecordVersion",
    "ReportVerdict",
    "Run",
    "RunConfig",
    "RunCounters",
    "RunDiff",
    "RunNotFound",
    "RunStatus",
    "SitesyncError",
    "StoreError",
    "StoreLocked",
    "Task",
    "TaskReport",
    "TaskState",
    "normalize_url",
    "resolve_link",
]
