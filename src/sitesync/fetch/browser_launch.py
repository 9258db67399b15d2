"""Which Chromium the browser fetcher starts, and how: the system's own executable, its
flags, its sandbox, and the checks made before a run is created.

Playwright's own browser download is never used: it cannot work on machines without
general internet access.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

from sitesync.errors import ConfigError

if TYPE_CHECKING:
    from types import ModuleType

log = logging.getLogger("sitesync.fetch.browser")

DEFAULT_CHROMIUM = "/usr/bin/chromium"

#: No connections of Chromium's own: only the pages' requests leave it (and only through the
#: guard proxy, see fetch/guard_proxy.py). Sandboxed unless run as root (``use_sandbox``).
CHROMIUM_ARGS: tuple[str, ...] = (
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)

_ROOT_WARNING = (
    "running as root: Chromium's sandbox cannot run as root, so the browser fetcher runs it "
    "with --no-sandbox and page JavaScript is confined by the renderer alone; run sitesync as "
    "an unprivileged user to keep the sandbox"
)


def use_sandbox(euid: int | None = None) -> bool:
    """Whether Chromium runs sandboxed: always, unless this process runs as root (Chromium
    refuses to start sandboxed as root), which a warning then says.

    Playwright launches Chromium with ``--no-sandbox`` unless told ``chromium_sandbox``: the
    launch passes this."""
    if (os.geteuid() if euid is None else euid) != 0:
        return True
    log.warning(_ROOT_WARNING)
    return False


_MISSING_EXTRA = "the browser fetcher needs the 'browser' extra: pip install 'sitesync[browser]'"


def load_playwright() -> ModuleType:
    """``playwright.async_api``, imported only when a browser fetcher is actually made."""
    try:
        import playwright.async_api as api
    except ImportError as exc:
        raise ConfigError(_MISSING_EXTRA) from exc
    return api


def check_browser(executable_path: str) -> None:
    """``ConfigError`` naming what is missing when the browser fetcher cannot start here
    (the ``browser`` extra, or the Chromium executable): checked before a run is created."""
    load_playwright()
    if not os.access(executable_path, os.X_OK):
        raise ConfigError(no_chromium(executable_path))


def no_chromium(executable_path: str) -> str:
    return (
        f"no Chromium at {executable_path}: install Debian's 'chromium' package "
        "(scripts/ensure-system-deps.sh does) or set browser_executable"
    )
