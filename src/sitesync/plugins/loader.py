"""Finding plugins: the entry-point group ``sitesync.plugins``, built-ins included.

Discovery lists every entry point of the group; loading imports the ones selected (the
``plugins`` setting; all of them by default). An entry point that fails to import is skipped
and logged with its name and the error, or, with ``strict_plugins``, stops the crawl before it
starts with a ``ConfigError``.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from sitesync.errors import ConfigError
from sitesync.plugins.base import ENTRY_POINT_GROUP, PluginFactory

if TYPE_CHECKING:
    from sitesync.config import Settings

log = logging.getLogger(__name__)

#: The distribution whose entry points are the built-in plugins.
BUILTIN_DISTRIBUTION = "sitesync"


class PluginStatus(enum.StrEnum):
    LOADED = "loaded"  # imported; runs in crawls
    SKIPPED = "skipped"  # could not be imported (or a duplicate name): not run
    DISABLED = "disabled"  # not selected by the ``plugins`` setting: not imported


@dataclass(frozen=True, slots=True)
class PluginInfo:
    """One discovered entry point and what became of it."""

    name: str
    target: str  # "module:attribute"
    distribution: str | None
    status: PluginStatus
    error: str | None = None

    @property
    def builtin(self) -> bool:
        return self.distribution == BUILTIN_DISTRIBUTION


@dataclass(frozen=True, slots=True)
class LoadedPlugin:
    info: PluginInfo
    factory: PluginFactory


@dataclass(frozen=True, slots=True)
class Discovery:
    """Everything found in the group: the plugins to run, and a line for every entry point."""

    loaded: tuple[LoadedPlugin, ...] = ()
    infos: tuple[PluginInfo, ...] = ()


def group_entry_points(group: str = ENTRY_POINT_GROUP, found: Any = None) -> list[EntryPoint]:
    """The group's entry points: ``select`` where it exists, the dict API before it.

    ``found`` is what ``importlib.metadata.entry_points()`` returned (looked up when None):
    a ``SelectableGroups``/``EntryPoints`` with ``.select`` (Python 3.10+), or the plain
    ``{group: [EntryPoint, ...]}`` dict of older Pythons and the old backport.
    """
    found = entry_points() if found is None else found
    select: Callable[..., Any] | None = getattr(found, "select", None)
    if select is not None:
        return list(select(group=group))
    return list(found.get(group, []))


def discover(
    selection: Sequence[str] | None = None,
    *,
    strict: bool = False,
    log_skips: bool = True,
    found: Any = None,
) -> Discovery:
    """Load the selected plugins (all when ``selection`` is None), built-ins first.

    Raises ``ConfigError`` for a selected name nothing provides, and, when ``strict``, for a
    plugin that fails to import; otherwise such a plugin is skipped (and logged, unless
    ``log_skips`` is off: for callers that show the skips themselves).
    """
    points = _ordered(group_entry_points(found=found))
    if selection is not None:
        missing = sorted(set(selection) - {point.name for point in points})
        if missing:
            known = ", ".join(sorted({p.name for p in points})) or "none"
            raise ConfigError(f"plugins: no plugin named {', '.join(missing)} (found: {known})")
    loaded: list[LoadedPlugin] = []
    infos: list[PluginInfo] = []
    taken: set[str] = set()
    for point in points:
        info = _info(point, PluginStatus.LOADED)
        if selection is not None and point.name not in selection:
            infos.append(_info(point, PluginStatus.DISABLED))
            continue
        if point.name in taken:
            infos.append(_skip(info, "another plugin already has this name", strict, log_skips))
            continue
        try:
            factory = point.load()
        except Exception as exc:  # anything an import can raise: the plugin's bug, not ours
            infos.append(_skip(info, f"{type(exc).__name__}: {exc}", strict, log_skips))
            continue
        taken.add(point.name)
        loaded.append(LoadedPlugin(info=info, factory=factory))
        infos.append(info)
    return Discovery(loaded=tuple(loaded), infos=tuple(infos))


def _ordered(points: list[EntryPoint]) -> list[EntryPoint]:
    """Built-ins first, then third-party plugins by name: a stable order between machines."""
    return sorted(points, key=lambda p: (_distribution(p) != BUILTIN_DISTRIBUTION, p.name))


def _info(point: EntryPoint, status: PluginStatus) -> PluginInfo:
    return PluginInfo(point.name, point.value, _distribution(point), status)


def _distribution(point: EntryPoint) -> str | None:
    dist = getattr(point, "dist", None)  # absent on entry points of the old dict API
    return None if dist is None else str(dist.name)


def _skip(info: PluginInfo, error: str, strict: bool, log_skips: bool) -> PluginInfo:
    error = " ".join(error.split())  # one line, for logs and tables
    if strict:
        raise ConfigError(
            f"plugin {info.name} ({info.target}) could not be loaded: {error} "
            "(strict_plugins is on)"
        )
    if log_skips:
        log.warning("plugin %s (%s) skipped: %s", info.name, info.target, error)
    return PluginInfo(info.name, info.target, info.distribution, PluginStatus.SKIPPED, error)


def plugin_configs(settings: Settings, loaded: Sequence[LoadedPlugin]) -> dict[str, Any]:
    """Each loaded plugin's configuration (``plugin_config``, ``[plugins.NAME]`` tables),
    checked against the ``config_model`` its factory declares (a pydantic model): the model
    instance, or the table as it is for a plugin that declares none.

    Raises ``ConfigError`` naming the plugin and the key: a table for no plugin found, or a
    value its model refuses. Called before a run is created, and by every worker.
    """
    names = {plugin.info.name: plugin for plugin in loaded}
    unknown = sorted(set(settings.plugin_config) - set(names))
    if unknown:
        found = ", ".join(sorted(names)) or "none"
        raise ConfigError(
            f"plugin_config ([plugins.NAME] in sitesync.toml): no plugin named "
            f"{', '.join(unknown)} is loaded (loaded: {found})"
        )
    configs: dict[str, Any] = {}
    for name, plugin in names.items():
        table = settings.plugin_config.get(name, {})
        model = getattr(plugin.factory, "config_model", None)
        if model is None:
            configs[name] = dict(table)
            continue
        try:
            configs[name] = model.model_validate(table)
        except ValidationError as exc:
            error = exc.errors()[0]
            key = ".".join(str(part) for part in error["loc"]) or "(the table)"
            raise ConfigError(
                f"plugin {name}: setting {key} ([plugins.{name}] in sitesync.toml): {error['msg']}"
            ) from None
    return configs
