"""Plugins: what a crawl makes of each page (docs/plugins.md).

The public surface for plugin authors is here; built-ins live in ``plugins.builtin`` and are
registered through the same entry-point group as third-party plugins.
"""

from __future__ import annotations

from sitesync.errors import NotConfigured, PluginError
from sitesync.plugins.base import (
    ENTRY_POINT_GROUP,
    ParsedPage,
    Plugin,
    PluginContext,
    PluginFactory,
    PluginOutput,
    record_key,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "NotConfigured",
    "ParsedPage",
    "Plugin",
    "PluginContext",
    "PluginError",
    "PluginFactory",
    "PluginOutput",
    "record_key",
]
