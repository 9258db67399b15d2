"""The plugin pipeline: every plugin of a run, on every page, on the crawl's hot path.

:class:`PluginPipeline` is the ``ArtifactProcessor`` a page attempt calls. Per page it parses
the HTML at most once (lazily, in :class:`ParsedPage`) and shares the tree between plugins,
runs each plugin, and turns a plugin's exception into an error line on that page: a plugin
can cost a page its own records, never the crawl. Output of third-party plugins is checked
(records well-formed, data JSON-serializable, links normalized) before it reaches the store,
where one bad value would fail a whole batch of reports; built-ins are trusted to be right.
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any

from sitesync.errors import ConfigError, NotConfigured
from sitesync.models import AssetRecord, CrawlArtifact, ProcessedArtifact, Run
from sitesync.plugins.base import ParsedPage, Plugin, PluginContext, PluginOutput
from sitesync.plugins.loader import LoadedPlugin, discover
from sitesync.urls import resolve_link

if TYPE_CHECKING:
    from sitesync.config import Settings

log = logging.getLogger(__name__)

_NOTHING = ProcessedArtifact()


@dataclass(frozen=True, slots=True)
class RunPlugin:
    """One plugin built for a run, with what the pipeline needs to know to call it."""

    name: str
    plugin: Plugin
    trusted: bool = False  # a built-in: its output is not re-checked
    sees_failed_roots: bool = False

    @classmethod
    def of(cls, name: str, plugin: Plugin, *, trusted: bool = False) -> RunPlugin:
        sees = bool(getattr(plugin, "sees_failed_roots", False))
        return cls(name=name, plugin=plugin, trusted=trusted, sees_failed_roots=sees)


class PluginPipeline:
    """Runs a run's plugins on each artifact; implements ``runs.page.ArtifactProcessor``."""

    def __init__(self, plugins: Sequence[RunPlugin]) -> None:
        self.plugins = tuple(plugins)
        self._for_failures = tuple(p for p in self.plugins if p.sees_failed_roots)

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.plugins]

    async def process(self, artifact: CrawlArtifact, *, tree: Any = None) -> ProcessedArtifact:
        """What the plugins make of one page; ``tree``: its HTML, if already parsed."""
        plugins = self.plugins if artifact.status > 0 else self._for_failures
        if not plugins:
            return _NOTHING
        page = ParsedPage(artifact, tree)
        records: list[AssetRecord] = []
        links: list[str] = []
        errors: list[str] = []
        for run_plugin in plugins:
            try:
                output = run_plugin.plugin.process(artifact, page)
                if inspect.isawaitable(output):
                    output = await output
                soft = _collect(run_plugin, artifact, output, records, links)
            except Exception as exc:  # a plugin's bug costs its own output on this page only
                message = " ".join(f"{type(exc).__name__}: {exc}".split())
                log.warning(
                    "plugin %s failed on %s: %s", run_plugin.name, artifact.final_url, message
                )
                errors.append(f"{run_plugin.name}: {message}")
                continue
            errors.extend(f"{run_plugin.name}: {error}" for error in soft)
        if not (records or links or errors):
            return _NOTHING
        return ProcessedArtifact(records=tuple(records), links=tuple(links), errors=tuple(errors))

    async def close(self) -> None:
        """Close every plugin that has a ``close``; a failure is logged, never raised."""
        for run_plugin in self.plugins:
            closer = getattr(run_plugin.plugin, "close", None)
            if closer is None:
                continue
            try:
                result = closer()
                if inspect.isawaitable(result):
                    await result
            except Exception:
                log.exception("plugin %s failed to close", run_plugin.name)

    async def __aenter__(self) -> PluginPipeline:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()


def build_pipeline(settings: Settings, run: Run | None = None) -> PluginPipeline:
    """Discover the plugins ``settings`` select and build each one for ``run``.

    A factory raising ``NotConfigured`` leaves its plugin out of the run (logged at info);
    any other failure is skipped and logged, or a ``ConfigError`` with ``strict_plugins``.
    """
    strict = settings.strict_plugins
    found = discover(settings.plugins, strict=strict)
    context = PluginContext(settings=settings, run=run)
    built = [p for p in (_build(loaded, context, strict) for loaded in found.loaded) if p]
    return PluginPipeline(built)


def _build(loaded: LoadedPlugin, context: PluginContext, strict: bool) -> RunPlugin | None:
    name = loaded.info.name
    try:
        plugin = loaded.factory(context)
    except NotConfigured as exc:
        log.info("plugin %s is not configured for this run: %s", name, exc)
        return None
    except Exception as exc:
        error = " ".join(f"{type(exc).__name__}: {exc}".split())
        if strict:
            raise ConfigError(
                f"plugin {name} could not be built: {error} (strict_plugins is on)"
            ) from exc
        log.warning("plugin %s skipped: building it failed: %s", name, error)
        return None
    if not callable(getattr(plugin, "process", None)):
        message = f"plugin {name}: its factory returned {type(plugin).__name__}, not a plugin"
        if strict:
            raise ConfigError(message + " (strict_plugins is on)")
        log.warning("%s; skipped", message)
        return None
    return RunPlugin.of(name, plugin, trusted=loaded.info.builtin)


def _collect(
    run_plugin: RunPlugin,
    artifact: CrawlArtifact,
    output: PluginOutput,
    records: list[AssetRecord],
    links: list[str],
) -> tuple[str, ...]:
    """Add one plugin's output to the page's, and return its soft errors.

    Raises, before adding anything, if the output is malformed.
    """
    if output is None:
        return ()
    if isinstance(output, ProcessedArtifact):
        produced, extra, soft = output.records, output.links, output.errors
    else:
        produced, extra, soft = tuple(output), (), ()
    if not run_plugin.trusted:
        _check_records(produced)
        extra = tuple(_normalized_links(artifact.final_url, extra))
    records.extend(produced)
    links.extend(extra)
    return tuple(" ".join(str(error).split()) for error in soft)


def _check_records(records: Sequence[Any]) -> None:
    for record in records:
        if not isinstance(record, AssetRecord):
            raise TypeError(f"returned {type(record).__name__}, not an AssetRecord")
        for name in ("key", "kind", "url", "content_hash"):
            value = getattr(record, name)
            if not isinstance(value, str) or not value or "\x00" in value:
                raise ValueError(f"record {name} must be a non-empty string, got {value!r}")
        if record.body is not None and not isinstance(record.body, bytes):
            raise TypeError(f"record body must be bytes or None, got {type(record.body).__name__}")
        # Would fail inside the report transaction otherwise, and take the batch with it.
        json.dumps(record.data, ensure_ascii=False).encode("utf-8")


def _normalized_links(base: str, links: Iterable[Any]) -> Iterable[str]:
    for link in links:
        url = resolve_link(base, link) if isinstance(link, str) else None
        if url is not None:
            yield url
