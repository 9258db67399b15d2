"""A plugin that cannot even be imported: sitesync must skip it (or refuse to start, strictly)."""

from __future__ import annotations

raise ImportError("sitesync_broken_plugin needs the 'nonexistent' library")
