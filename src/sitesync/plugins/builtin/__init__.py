"""The built-in plugins: page metadata, links, the navigation sampler and asset discovery.

Each is declared as an entry point of the group ``sitesync.plugins`` in sitesync's own
``pyproject.toml`` and loaded exactly like a third-party plugin.
"""

from __future__ import annotations
