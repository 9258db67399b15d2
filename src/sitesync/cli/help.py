"""How ``--help`` reads: click's plain formatter, wrapped by the terminal, options in panels.

Typer's rich help cuts long flag names with an ellipsis at 80 columns and keeps the line
breaks of the docstrings it shows. Click's own formatter never cuts a name (a long one
gets its help on the next line) and rewraps each paragraph to the terminal's width, so
the help reads the same piped, at 80 columns or at 200. Options are grouped into panels
(:data:`PANELS`) by each option's ``rich_help_panel``, in the order given there.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable
from typing import Annotated, Any, TypeVar, get_type_hints

import typer

# Typer carries its own copy of click (typer._click): its commands and contexts are of it.
from typer import _click as click
from typer._click import _textwrap
from typer.core import TyperCommand, TyperGroup

from sitesync import logs


class _WholeWords(_textwrap.TextWrapper):
    """Click's text wrapper, except that a line never breaks at a hyphen inside a word:
    ``--per-host-concurrency`` or ``--all-active`` stay whole (a name cut there reads as
    two flags)."""

    def __init__(self, *args: Any, **options: Any) -> None:
        options["break_on_hyphens"] = False
        super().__init__(*args, **options)


# Click builds its wrapper from this module attribute each time it wraps help text.
_textwrap.TextWrapper = _WholeWords  # type: ignore[misc]

CommandFunction = TypeVar("CommandFunction", bound=Callable[..., Any])

#: The panels, in the order ``--help`` shows them; an option names one with
#: ``rich_help_panel`` (options without one are listed under "Options").
PANELS = (
    "Arguments",
    "What to crawl",
    "Politeness",
    "Limits",
    "Identity and plugins",
    "Network",
    "Fleet",
    "Output",
    "Options",
    "Internals",
)


class PanelledCommand(TyperCommand):
    """A command whose options ``--help`` lists panel by panel (click's plain layout), and
    which takes ``-v``/``-q`` like every other."""

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        panels: dict[str, list[tuple[str, str]]] = {}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            default = "Arguments" if param.param_type_name == "argument" else "Options"
            panel = getattr(param, "rich_help_panel", None) or default
            panels.setdefault(panel, []).append(record)
        for panel in sorted(panels, key=_panel_order):
            with formatter.section(panel):
                formatter.write_dl(panels[panel])


Verbose = Annotated[
    int,
    typer.Option("-v", "--verbose", count=True, expose_value=False, show_default=False,
                 rich_help_panel="Output",
                 callback=lambda value: _set_level(logs.level_of(value, False)),
                 help="Log more: -v info, -vv debug (log_level)."),
]  # fmt: skip
Quiet = Annotated[
    bool,
    typer.Option("-q", "--quiet", expose_value=False, rich_help_panel="Output",
                 callback=lambda value: _set_level(logs.level_of(0, value)),
                 help="Log errors only (log_level=error)."),
]  # fmt: skip


def with_verbosity(command: CommandFunction) -> CommandFunction:
    """``command`` taking ``-v``/``-vv``/``-q`` as well: the log level of this process, and
    of the workers it starts."""
    own = inspect.signature(command)
    hints = get_type_hints(command, include_extras=True)
    params = [param.replace(annotation=hints[param.name]) for param in own.parameters.values()]
    params += [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=kind)
        for name, kind, default in (("verbose", Verbose, 0), ("quiet", Quiet, False))
    ]

    @functools.wraps(command)
    def run(*args: Any, **values: Any) -> Any:
        values.pop("verbose", None)
        values.pop("quiet", None)
        return command(*args, **values)

    run.__signature__ = own.replace(parameters=params)  # type: ignore[attr-defined]
    run.__annotations__ = {param.name: param.annotation for param in params}
    return run  # type: ignore[return-value]


def _set_level(level: logs.LogLevel | None) -> None:
    if level is None:
        return
    # As a setting from the environment: it beats sitesync.toml (a flag beats both), this
    # process's settings read it, and the processes it starts inherit it.
    os.environ["SITESYNC_LOG_LEVEL"] = level
    logs.configure(level)


def _panel_order(panel: str) -> tuple[int, str]:
    return (PANELS.index(panel) if panel in PANELS else len(PANELS), panel)


class SitesyncTyper(typer.Typer):
    """A typer app whose commands and groups use the plain, panelled help above."""

    def __init__(self, **options: Any) -> None:
        options.setdefault("rich_markup_mode", None)
        options.setdefault("cls", TyperGroup)
        super().__init__(**options)

    def command(
        self, name: str | None = None, **options: Any
    ) -> Callable[[CommandFunction], CommandFunction]:
        options.setdefault("cls", PanelledCommand)
        register: Callable[[CommandFunction], CommandFunction] = super().command(name, **options)

        def decorate(command: CommandFunction) -> CommandFunction:
            register(with_verbosity(command))
            return command

        return decorate

    def callback(self, *args: Any, **options: Any) -> Callable[[CommandFunction], CommandFunction]:
        register: Callable[[CommandFunction], CommandFunction] = super().callback(*args, **options)

        def decorate(command: CommandFunction) -> CommandFunction:
            register(with_verbosity(command))  # sitesync -v COMMAND, as COMMAND -v
            return command

        return decorate
