"""Options and helpers shared by command groups."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

import typer
from rich.console import Console
from rich.text import Text

from sitesync import logs
from sitesync.errors import (
    EXIT_CANNOT_JOIN,
    EXIT_STORE_UNAVAILABLE,
    CannotJoinRun,
    SitesyncError,
    StoreUnavailable,
)
from sitesync.fetch.text import visible
from sitesync.redact import redact
from sitesync.store import Store, open_store

T = TypeVar("T")


# C0 and C1 controls but newline and tab: a terminal would act on them (ESC starts sequences
# that move the cursor, clear the screen, retitle the window or write to the clipboard).
class _TextConsole(Console):
    """Prints every string as the text it is (see :func:`plain_console`)."""

    def render_str(self, text: str, **options: Any) -> Text:
        return super().render_str(visible(text), **options)


class _NoticeConsole(_TextConsole):
    """Standard error's console: in ``log_format=json`` each line it prints is a JSON log
    object like every other line there, so a log shipper reads all of standard error."""

    def print(self, *objects: Any, **options: Any) -> None:
        if logs.current_format() != "json":
            super().print(*objects, **options)
            return
        if self.quiet:  # a forked helper of crawl: the foreground tells its operator
            return
        text = " ".join(item.plain if isinstance(item, Text) else str(item) for item in objects)
        level = logging.ERROR if text.startswith("error:") else logging.INFO
        logs.notice(text.removeprefix("error:").strip(), level)


def plain_console(*, stderr: bool = False) -> Console:
    """A console that prints strings as they are.

    Much of what sitesync prints came from crawled servers (URLs, error messages, titles):
    rich markup (``[/bold]``), emoji codes (``:x:``), highlighting and terminal control
    sequences (``ESC [2J``) must never apply to it, so markup is off on every console of the
    CLI and control characters are shown escaped; styling goes through :func:`styled`.
    """
    kind = _NoticeConsole if stderr else _TextConsole
    return kind(stderr=stderr, markup=False, emoji=False, highlight=False)


def styled(text: str, style: str) -> Text:
    """``text`` in ``style``, taken literally (never parsed as markup)."""
    return Text(visible(text), style=style)


def exit_code_of(work: Callable[[], object]) -> int:
    """Run a command's ``work``; its exit code, an error printed as one red line."""
    try:
        work()
    except typer.Exit as exc:
        return exc.exit_code
    except StoreUnavailable as exc:
        # Not the run's fault: its run stays for the watchdog, which re-queues it.
        _error_line(exc)
        return EXIT_STORE_UNAVAILABLE
    except CannotJoinRun as exc:
        _error_line(exc)
        return EXIT_CANNOT_JOIN
    except SitesyncError as exc:
        _error_line(exc)
        return 1
    return 0


def _error_line(exc: Exception) -> None:
    plain_console(stderr=True).print(styled("error:", "bold red"), redact(str(exc)), soft_wrap=True)


def with_store(db: str, work: Callable[[Store], Awaitable[T]], *, migrate: bool = True) -> T:
    """Open the store, run ``work`` on it, close it: the sync edge of an async core.
    ``migrate=False`` for the commands that only read: they never create or migrate a store
    (``StoreNotReady``, one line, when it is missing or older than this sitesync)."""

    async def go() -> T:
        store = await open_store(db, migrate=migrate)
        try:
            return await work(store)
        finally:
            await store.close()

    return asyncio.run(go())


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s"


def format_bytes(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"


def format_time(timestamp: float | None) -> str:
    if timestamp is None:
        return "-"
    return datetime.fromtimestamp(timestamp, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")
