"""The process's log: its level, its format (text for a terminal, JSON for a fleet's log
shipper), and what each line is about (run, worker, host, URL).

One handler on the root logger writes every logger's records, sitesync's, libraries' and
uvicorn's alike, to standard error, through :func:`sitesync.redact.redact`. What a line is
about comes from context variables (:func:`about`): set where a crawl starts and where a page
is attempted, they follow the work into the tasks and threads it starts, so a line logged
deep in a plugin or the store still names its run, worker, host and URL.

JSON lines are written by python-json-logger: one object per line, with ``time`` (ISO 8601,
UTC), ``level``, ``logger``, ``message``, and ``run``, ``worker``, ``host``, ``url`` and
``exc_info`` where they apply.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
from collections.abc import Iterator
from contextvars import ContextVar
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Literal, TextIO

from pythonjsonlogger.json import JsonFormatter

from sitesync.fetch.text import visible
from sitesync.redact import redact

LogLevel = Literal["debug", "info", "warning", "error"]
LogFormat = Literal["text", "json"]
LEVELS: tuple[LogLevel, ...] = ("debug", "info", "warning", "error")
FORMATS: tuple[LogFormat, ...] = ("text", "json")

#: What the work under way is about, in the order a text line names them.
FIELDS = ("run", "worker", "host", "url")
_context: dict[str, ContextVar[Any]] = {
    name: ContextVar(f"log_{name}", default=None) for name in FIELDS
}

_TEXT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


@contextlib.contextmanager
def about(**fields: Any) -> Iterator[None]:
    """Lines logged inside are about these (``run=``, ``worker=``, ``host=``, ``url=``), in
    this task and in every task or thread started from it."""
    tokens = [(_context[name], _context[name].set(value)) for name, value in fields.items()]
    try:
        yield
    finally:
        for var, token in reversed(tokens):
            var.reset(token)


class _About(logging.Filter):
    """Adds what the work under way is about to each record (those that apply)."""

    def filter(self, record: logging.LogRecord) -> bool:
        for name, var in _context.items():
            value = var.get()
            if value is not None and not hasattr(record, name):
                setattr(record, name, value)
        return True


class TextFormatter(logging.Formatter):
    """``TIME LEVEL LOGGER: MESSAGE  run=1 worker=w-1 host=h url=u``, redacted, a server's
    control characters made visible."""

    def __init__(self) -> None:
        super().__init__(_TEXT)

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        context = " ".join(
            f"{name}={getattr(record, name)}" for name in FIELDS if hasattr(record, name)
        )
        if context:
            head, newline, rest = line.partition("\n")  # after the message, before a traceback
            line = f"{head}  {context}{newline}{rest}"
        return visible(redact(line))


class JsonLinesFormatter(JsonFormatter):
    """One JSON object per record; every text in it redacted (the message, a traceback, a
    URL) before it is serialized, so a secret is masked however JSON would escape it."""

    def __init__(self) -> None:
        super().__init__(
            ["levelname", "name", "message"],
            rename_fields={"levelname": "level", "name": "logger"},
            reserved_attrs=[*_RESERVED, "color_message"],  # uvicorn's coloured copy
        )

    def add_fields(
        self, log_data: dict[str, Any], record: logging.LogRecord, message_dict: dict[str, Any]
    ) -> None:
        log_data["time"] = datetime.fromtimestamp(record.created, UTC).isoformat(
            timespec="milliseconds"
        )
        super().add_fields(log_data, record, message_dict)

    def process_log_record(self, log_data: dict[str, Any]) -> dict[str, Any]:
        return {key: _clean(value) for key, value in log_data.items()}


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        return visible(redact(value))
    if isinstance(value, int | float | bool) or value is None:
        return value
    return visible(redact(str(value)))


_RESERVED = [name for name in logging.LogRecord("", 0, "", 0, "", None, None).__dict__] + [
    "message",
    "asctime",
    "taskName",
]


class _Stderr(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to ``sys.stderr`` as it is at each line (a test or a daemon may replace it)."""

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, value: TextIO) -> None:
        pass


_format: list[LogFormat] = ["text"]


def current_format() -> LogFormat:
    """The format :func:`configure` last set."""
    return _format[0]


def notice(message: str, level: int = logging.INFO) -> None:
    """A line the command itself tells its operator (what it crawls, that it stopped, an
    error), written as a log line whatever the log level: in JSON, the same object as every
    other line of standard error."""
    record = logging.getLogger("sitesync.cli").makeRecord(
        "sitesync.cli", level, "(notice)", 0, message, (), None
    )
    for handler in logging.getLogger().handlers:
        if getattr(handler, "sitesync", False):
            handler.handle(record)


def configure(level: str | None = None, fmt: str | None = None) -> None:
    """Send every logger's records at ``level`` and above to standard error in ``fmt``
    (unset: SITESYNC_LOG_LEVEL and SITESYNC_LOG_FORMAT, else warning and text). Called
    again, it replaces its own handler and leaves any other (a test's) alone."""
    level = _known(level or os.environ.get("SITESYNC_LOG_LEVEL"), LEVELS, "warning")
    fmt = _known(fmt or os.environ.get("SITESYNC_LOG_FORMAT"), FORMATS, "text")
    root = logging.getLogger()
    for handler in [h for h in root.handlers if getattr(h, "sitesync", False)]:
        root.removeHandler(handler)
    handler = _Stderr()
    handler.sitesync = True  # type: ignore[attr-defined]
    handler.addFilter(_About())
    handler.setFormatter(JsonLinesFormatter() if fmt == "json" else TextFormatter())
    root.addHandler(handler)
    root.setLevel(level.upper())
    _format[0] = "json" if fmt == "json" else "text"
    logging.captureWarnings(True)  # warnings too, through the same handler
    _route_uncaught()


def _route_uncaught() -> None:
    """What Python prints itself (an uncaught exception, in the main thread or another, and
    an exception nobody could raise, in a finalizer) is logged instead, through the same
    redacting handler: a traceback may quote a DSN."""
    sys.excepthook = _log_uncaught
    threading.excepthook = _log_thread_uncaught
    sys.unraisablehook = _log_unraisable


def _log_uncaught(
    kind: type[BaseException], value: BaseException, traceback: TracebackType | None
) -> None:
    if issubclass(kind, KeyboardInterrupt):
        sys.__excepthook__(kind, value, traceback)  # no secret in it; Python's own line
        return
    logging.getLogger("sitesync").critical("uncaught exception", exc_info=(kind, value, traceback))


def _log_thread_uncaught(args: threading.ExceptHookArgs) -> None:
    if args.exc_type is SystemExit:
        return  # as Python's own hook: a thread that exits says nothing
    name = args.thread.name if args.thread is not None else "?"
    logging.getLogger("sitesync").error(
        "uncaught exception in thread %s",
        name,
        exc_info=(args.exc_type, args.exc_value or args.exc_type(), args.exc_traceback),
    )


def _log_unraisable(unraisable: sys.UnraisableHookArgs) -> None:
    what = unraisable.err_msg or "exception ignored"
    logging.getLogger("sitesync").warning(
        "%s: %r",
        what,
        unraisable.object,
        exc_info=(
            unraisable.exc_type,
            unraisable.exc_value or unraisable.exc_type(),
            unraisable.exc_traceback,
        ),
    )


def _known(value: str | None, known: tuple[str, ...], default: str) -> str:
    # A wrong value in the environment is reported by the settings, with its name; the
    # log is never what fails first.
    value = (value or "").strip().lower()
    return value if value in known else default


def level_of(verbose: int, quiet: bool) -> LogLevel | None:
    """The level ``-v`` (info), ``-vv`` (debug) or ``-q`` (error) asks for, or None."""
    if quiet:
        return "error"
    if verbose:
        return "info" if verbose == 1 else "debug"
    return None
