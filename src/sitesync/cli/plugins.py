"""``sitesync plugins``: what the entry-point group ``sitesync.plugins`` holds, and its state."""

from __future__ import annotations

from rich.table import Table

from sitesync.cli._common import plain_console, styled
from sitesync.cli.options import from_flags
from sitesync.cli.output import AsJson, PluginRow, emit
from sitesync.plugins.loader import PluginStatus, discover

console = plain_console()

_STYLE = {
    PluginStatus.LOADED: "green",
    PluginStatus.SKIPPED: "red",
    PluginStatus.DISABLED: "yellow",
}


def plugins_command(as_json: AsJson = False) -> None:
    """List the plugins found, and which are loaded, skipped or disabled.

    Loaded plugins run in crawls; skipped ones failed to load (the table says why);
    disabled ones are left out by the 'plugins' setting (SITESYNC_PLUGINS).
    """
    settings = from_flags()
    found = discover(settings.plugins, log_skips=False)
    if as_json:
        rows = tuple(
            PluginRow(
                info.name,
                info.target,
                info.distribution,
                info.builtin,
                info.status.value,
                info.error,
            )
            for info in found.infos
        )
        emit("plugins", rows)
        return
    table = Table(title="plugins (entry-point group sitesync.plugins)")
    for column in ("name", "status", "from", "entry point", "detail"):
        table.add_column(column, overflow="fold")
    for info in found.infos:
        origin = "built-in" if info.builtin else (info.distribution or "?")
        status = styled(info.status.value, _STYLE[info.status])
        table.add_row(info.name, status, origin, info.target, info.error or "")
    if not found.infos:
        console.print("no plugins found: is sitesync installed (pip install / uv sync)?")
        return
    console.print(table)
