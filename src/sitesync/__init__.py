"""sitesync: crawl websites politely and keep a versioned catalogue of them in sync."""

from __future__ import annotations

from sitesync.errors import (
    ConfigError,
    FetchError,
    IllegalTransition,
    InvalidURL,
    MigrationError,
    RunNotFound,
    SitesyncError,
    StoreError,
    StoreLocked,
)
from sitesync.models import (
    Lease,
    NewTask,
    ReportVerdict,
    Run,
    RunConfig,
    RunCounters,
    RunStatus,
    Task,
    TaskReport,
    TaskState,
)
from sitesync.urls import normalize_url, resolve_link

__version__ = "0.1.0"

__all__ = [
    "ConfigError",
    "FetchError",
    "IllegalTransition",
    "InvalidURL",
    "Lease",
    "MigrationError",
    "NewTask",
    "ReportVerdict",
    "Run",
    "RunConfig",
    "RunCounters",
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
