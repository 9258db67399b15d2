"""The plugin pipeline: every plugin of a run, on every page, on the crawl's hot path.

:class:`PluginPipeline` is the ``ArtifactProcessor`` a page attempt calls. Per page it parses
the HTML at most once (lazily, in :class:`ParsedPage`) and shares the tree between plugins,
runs each plugin, and turns a plugin's exception into an error line on that page: a plugin
can cost a page its own records, never the crawl. Output of third-party plugins is checked
(records well-formed, data JSON-serializable and at most ``max_record_bytes``, links
normalized) before it reaches the store, where one bad value would fail a whole batch of
reports; built-ins are trusted to be right.

Every plugin that awaits runs under ``plugin_timeout_seconds``. A third-party plugin whose
``process`` is not ``async`` runs on a daemon thread (under the same timeout), so that one that
blocks costs its page, not the event loop with every lease and heartbeat on it. Built-ins
that are not ``async`` run inline on a small page (the hot path has no room for a thread hop),
and within the page's budget (``parse_timeout_seconds``, sitesync.plugins.offloop) on a large one:
its ``ParseTimeout`` ends the page, it is not one plugin's failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import inspect
import json
import logging
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any

from sitesync.errors import ConfigError, NotConfigured
from sitesync.fetch.text import safe_text
from sitesync.models import AssetRecord, CrawlArtifact, ProcessedArtifact, Run, canonical_json
from sitesync.plugins.base import ParsedPage, Plugin, PluginContext, PluginOutput, PoliteFetch
from sitesync.plugins.loader import LoadedPlugin, discover, plugin_configs
from sitesync.plugins.offloop import PageBudget, ParseTimeout
from sitesync.plugins.threads import DaemonThreads
from sitesync.urls import resolve_link

if TYPE_CHECKING:
    from sitesync.config import Settings

log = logging.getLogger(__name__)

_NOTHING = ProcessedArtifact()
#: Threads for blocking third-party plugins; beyond them calls queue (and time out).
_PLUGIN_THREADS = 8
#: Longest error line one plugin leaves on a page.
_MAX_ERROR_CHARS = 500


@dataclass(frozen=True, slots=True)
class RunPlugin:
    """One plugin built for a run, with what the pipeline needs to know to call it."""

    name: str
    plugin: Plugin
    trusted: bool = False  # a built-in: its output is not re-checked
    sees_failed_roots: bool = False
    off_loop: bool = False  # a third-party plugin that is not async (nor nonblocking): a thread

    @classmethod
    def of(cls, name: str, plugin: Plugin, *, trusted: bool = False) -> RunPlugin:
        sees = bool(getattr(plugin, "sees_failed_roots", False))
        inline = trusted or bool(getattr(plugin, "nonblocking", False))
        off_loop = not inline and not inspect.iscoroutinefunction(plugin.process)
        return cls(
            name=name, plugin=plugin, trusted=trusted, sees_failed_roots=sees, off_loop=off_loop
        )


class PluginPipeline:
    """Runs a run's plugins on each artifact; implements ``engine.pluginstep.ArtifactProcessor``."""

    def __init__(
        self,
        plugins: Sequence[RunPlugin],
        *,
        timeout: float = 30.0,
        max_record_bytes: int | None = 1024 * 1024,
    ) -> None:
        self.plugins = tuple(plugins)
        self._for_failures = tuple(p for p in self.plugins if p.sees_failed_roots)
        self.timeout = timeout
        self.max_record_bytes = max_record_bytes
        self._threads = DaemonThreads(_PLUGIN_THREADS, name="plugin")

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.plugins]

    async def process(
        self, artifact: CrawlArtifact, *, tree: Any = None, budget: PageBudget | None = None
    ) -> ProcessedArtifact:
        """What the plugins make of one page; ``tree``: its HTML, if already parsed;
        ``budget``: the page's, which the synchronous built-ins run within."""
        plugins = self.plugins if artifact.status > 0 else self._for_failures
        if not plugins:
            return _NOTHING
        page = ParsedPage(artifact, tree)
        records: list[AssetRecord] = []
        links: list[str] = []
        errors: list[str] = []
        for run_plugin in plugins:
            try:
                output = await self._call(run_plugin, artifact, page, budget)
                soft = _collect(run_plugin, artifact, output, records, links, self.max_record_bytes)
            except ParseTimeout:
                raise  # the page's budget, not this plugin's fault alone: the page ends
            except _PluginTimeout:
                message = f"timed out after {self.timeout:g}s (plugin_timeout_seconds)"
                self._failed(run_plugin, artifact, message, errors)
                if run_plugin.off_loop:  # its thread may still be reading the tree
                    page = ParsedPage(artifact)
                continue
            except Exception as exc:  # a plugin's bug costs its own output on this page only
                self._failed(run_plugin, artifact, f"{type(exc).__name__}: {exc}", errors)
                continue
            errors.extend(f"{run_plugin.name}: {_line(error)}" for error in soft)
        if not (records or links or errors):
            return _NOTHING
        return ProcessedArtifact(records=tuple(records), links=tuple(links), errors=tuple(errors))

    async def _call(
        self,
        run_plugin: RunPlugin,
        artifact: CrawlArtifact,
        page: ParsedPage,
        budget: PageBudget | None = None,
    ) -> Any:
        """One plugin's output on one page, within the timeout wherever one can act."""
        process = run_plugin.plugin.process
        if run_plugin.off_loop:
            async with _timeout(self.timeout):
                output = await self._threads.run(process, artifact, page)
                return await output if inspect.isawaitable(output) else output
        if budget is not None and not budget.inline:  # a large page: off the loop
            output = await budget.run(process, artifact, page)
        else:
            output = process(artifact, page)  # sync built-ins: inline, nothing could stop them
        if inspect.isawaitable(output):
            async with _timeout(self.timeout):
                return await output
        return output

    @staticmethod
    def _failed(
        run_plugin: RunPlugin, artifact: CrawlArtifact, message: str, errors: list[str]
    ) -> None:
        message = _line(message)
        log.warning("plugin %s failed on %s: %s", run_plugin.name, artifact.final_url, message)
        errors.append(f"{run_plugin.name}: {message}")

    async def close(self) -> None:
        """Close every plugin that has a ``close``; a failure is logged, never raised, and an
        ``async`` close gets the plugin timeout too (the run's end must not wait for ever)."""
        self._threads.close()
        for run_plugin in self.plugins:
            closer = getattr(run_plugin.plugin, "close", None)
            if closer is None:
                continue
            try:
                result = closer()
                if inspect.isawaitable(result):
                    async with _timeout(self.timeout):
                        await result
            except _PluginTimeout:
                log.warning("plugin %s: close timed out after %gs", run_plugin.name, self.timeout)
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


def build_pipeline(
    settings: Settings, run: Run | None = None, *, client: PoliteFetch | None = None
) -> PluginPipeline:
    """Discover the plugins ``settings`` select and build each one for ``run``.

    A factory raising ``NotConfigured`` leaves its plugin out of the run (logged at info);
    any other failure is skipped and logged, or a ``ConfigError`` with ``strict_plugins``.
    """
    strict = settings.strict_plugins
    found = discover(settings.plugins, strict=strict)
    configs = plugin_configs(settings, found.loaded)
    built = []
    for loaded in found.loaded:
        config = configs.get(loaded.info.name)
        context = PluginContext(settings=settings, run=run, client=client, config=config)
        plugin = _build(loaded, context, strict)
        if plugin is not None:
            built.append(plugin)
    return PluginPipeline(
        built, timeout=settings.plugin_timeout_seconds, max_record_bytes=settings.max_record_bytes
    )


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
    max_record_bytes: int | None = None,
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
        _check_records(produced, max_record_bytes)
        extra = tuple(_normalized_links(artifact.final_url, extra))
    records.extend(produced)
    links.extend(extra)
    return tuple(str(error) for error in soft)


def _check_records(records: Sequence[Any], max_bytes: int | None = None) -> None:
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
        data = json.dumps(record.data, ensure_ascii=False).encode("utf-8")
        size = len(data) + len(record.key) + len(record.url)
        if max_bytes is not None and size > max_bytes:
            raise ValueError(
                f"record {record.key[:100]} is {size} bytes, over max_record_bytes ({max_bytes})"
            )
        _check_precomputed(record)


def _check_precomputed(record: AssetRecord) -> None:
    """The store trusts ``body_hash`` and ``data_json``: a wrong one would file a body
    under another's hash, or store data other than the record's."""
    body, digest = record.body, record.body_hash
    if digest is not None and body is not None and hashlib.sha256(body).hexdigest() != digest:
        raise ValueError(f"record {record.key[:100]}: body_hash is not the body's sha256")
    if record.data_json is not None and record.data_json != canonical_json(record.data):
        raise ValueError(f"record {record.key[:100]}: data_json is not canonical_json(data)")


class _PluginTimeout(Exception):
    """The plugin timeout expired (not a TimeoutError the plugin raised itself)."""


@contextlib.asynccontextmanager
async def _timeout(seconds: float) -> AsyncIterator[None]:
    """``asyncio.timeout``, its expiry told apart from a TimeoutError the plugin raised."""
    scope = asyncio.timeout(seconds)
    try:
        async with scope:
            yield
    except TimeoutError:
        if scope.expired():
            raise _PluginTimeout from None
        raise


def _line(message: str) -> str:
    """One short storable line: plugin messages may quote server data of any size or bytes."""
    line = " ".join(safe_text(message).split())
    return line if len(line) <= _MAX_ERROR_CHARS else line[: _MAX_ERROR_CHARS - 1] + "…"


def _normalized_links(base: str, links: Iterable[Any]) -> Iterable[str]:
    for link in links:
        url = resolve_link(base, link) if isinstance(link, str) else None
        if url is not None:
            yield url
