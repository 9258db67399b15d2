"""A plugin that needs an API key it is never given: it sits every run out."""

from __future__ import annotations

from sitesync.plugins import NotConfigured, PluginContext


class KeyedPlugin:
    def __init__(self, context: PluginContext) -> None:
        raise NotConfigured("needs an API key")
