"""The plugin interface: what a plugin is given, what it gives back, and how it is built.

A plugin turns each :class:`~sitesync.models.CrawlArtifact` of a crawl into
:class:`~sitesync.models.AssetRecord`\\ s (and may contribute links to crawl). It is found
through the entry-point group ``sitesync.plugins``; the entry point names a *factory* (usually
the plugin class) that sitesync calls once per run with a :class:`PluginContext`. Built-in
plugins are declared the same way, in sitesync's own ``pyproject.toml``.

The hooks, in the order sitesync calls them::

    factory(context) -> plugin        once per run; raise NotConfigured to sit this run out
    plugin.process(artifact, page)    once per page, on the crawl's hot path
    await plugin.close()              once at the end of the run (optional method)

docs/plugins.md is the guide for plugin authors.
"""

from __future__ import annotations

from collections.abc import Awaitable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from selectolax.lexbor import LexborHTMLParser

from sitesync.fetch.base import FetchResult
from sitesync.models import AssetRecord, CrawlArtifact, ProcessedArtifact, Run
from sitesync.urls import resolve_link

if TYPE_CHECKING:
    from sitesync.config import Settings

#: The entry-point group sitesync discovers plugins in.
ENTRY_POINT_GROUP = "sitesync.plugins"

#: What ``process`` may return: records alone, records with links (and soft errors), or None.
PluginOutput: TypeAlias = ProcessedArtifact | Iterable[AssetRecord] | None


def record_key(kind: str, url: str) -> str:
    """The stable identity of a record: ``kind:normalized-url`` (e.g. ``page:https://a.org/``).

    Versions are kept per key, so a key must not depend on anything but what the record is
    *about*: never on the page it was found on, the time, or the run.
    """
    return f"{kind}:{url}"


class PoliteFetch(Protocol):
    """The crawl worker's polite client, as a plugin sees it."""

    async def fetch(self, url: str) -> FetchResult:
        """Fetch ``url`` through the worker's gate for its host: only a host the worker holds,
        only what robots.txt allows, within the host's concurrency and delay. Refused requests
        come back as ``BLOCKED`` results whose ``error`` says why; never raises."""
        ...


@dataclass(frozen=True, slots=True)
class PluginContext:
    """What a plugin factory is given, once per run."""

    settings: Settings  # every sitesync setting of this crawl (SITESYNC_*, sitesync.toml, flags)
    run: Run | None = None  # the run being crawled; None when only checking that plugins build
    #: How a plugin requests anything from a host: never with a client of its own, which
    #: would go around the host's politeness and claim. None when no crawl is running.
    client: PoliteFetch | None = None
    #: This plugin's own configuration (``[plugins.NAME]`` in sitesync.toml), checked
    #: against the factory's ``config_model`` when it declares one: then an instance of it.
    config: Any = None


class ParsedPage:
    """An artifact's HTML, parsed at most once per page and shared by every plugin.

    Parsing is lazy: a page no plugin looks into is never parsed. ``tree`` is a selectolax
    ``LexborHTMLParser``; plugins must not modify it, since the plugins after them see the
    same tree. ``tags(name)`` lists elements by tag name, remembered for the page: prefer it
    to ``tree.css(...)`` on the hot path, because the first CSS query on a page costs about
    as much as parsing it (lexbor builds its selector engine per document).
    """

    __slots__ = ("_base_url", "_parsed", "_tags", "_tree", "artifact")

    def __init__(self, artifact: CrawlArtifact, tree: Any = None) -> None:
        self.artifact = artifact
        # A tree the crawl already parsed (for its link extraction) is used as it is.
        self._tree: Any = tree
        self._parsed = tree is not None
        self._base_url: str | None = None
        self._tags: dict[str, list[Any]] = {}

    @property
    def tree(self) -> Any:
        """The parsed HTML (a ``LexborHTMLParser``), or None when the artifact is not HTML."""
        if not self._parsed:
            self._parsed = True
            if self.artifact.text:
                self._tree = LexborHTMLParser(self.artifact.text)
        return self._tree

    def tags(self, name: str) -> list[Any]:
        """The page's elements named ``name`` (``"a"``, ``"img"``), in document order."""
        found = self._tags.get(name)
        if found is None:
            tree = self.tree
            found = self._tags[name] = tree.tags(name) if tree is not None else []
        return found

    @property
    def base_url(self) -> str:
        """What relative links resolve against: ``<base href>`` if any, else the final URL."""
        if self._base_url is None:
            base = self.artifact.final_url
            for node in self.tags("base"):
                href = node.attributes.get("href")
                if href:
                    base = resolve_link(base, href) or base
                    break
            self._base_url = base
        return self._base_url

    def resolve(self, href: str | None) -> str | None:
        """The normalized absolute URL of a link on this page; None if it is not http(s)."""
        return resolve_link(self.base_url, href) if href else None


class Plugin(Protocol):
    """A plugin, as the factory behind its entry point builds it (once per run).

    Optional attributes and methods, looked up with ``getattr``:

    - ``nonblocking: bool = False``: a synchronous ``process`` that never blocks (no I/O, no
      sleeps, bounded work): called on the event loop instead of a thread, saving a thread
      hop per page; the timeout cannot interrupt it then.
    - ``sees_failed_roots: bool = False``: also receive a site root's artifact when the root
      could not be fetched (status 0: unreachable, timed out, or refused by robots.txt), so
      the plugin can record *why* a site has nothing (the navigation sampler does).
    - ``async def close(self) -> None``: called once when the run's crawl ends.
    """

    def process(
        self, artifact: CrawlArtifact, page: ParsedPage
    ) -> PluginOutput | Awaitable[PluginOutput]:
        """Turn one fetched page into records; called for every page, on the hot path.

        ``artifact`` is what the fetch produced: status (always > 0 unless
        ``sees_failed_roots``), headers, body, ``text`` (the decoded body, HTML only) and
        ``links`` (every ``<a href>``, already normalized). ``page`` is the same artifact
        with its HTML parsed once for all plugins: reuse ``page.tree``, ``artifact.text``
        and ``artifact.links`` rather than parsing again.

        Return the records (an iterable of :class:`AssetRecord`), or a
        :class:`ProcessedArtifact` to also contribute links (absolute or relative to the
        page; sitesync normalizes and scopes them) and soft errors, or None. ``process`` may
        be ``async`` when it must wait for I/O; it must not block the event loop. A synchronous
        ``process`` of a third-party plugin runs on a thread (unless ``nonblocking``); a call
        awaited or run on a thread is bounded by ``plugin_timeout_seconds``.

        An exception costs this plugin this page only: it is logged and recorded on the
        page's task (``last_error``), and the crawl goes on.
        """
        ...


class PluginFactory(Protocol):
    """What an entry point names: called once per run, returns the run's plugin."""

    def __call__(self, context: PluginContext) -> Plugin:
        """Build the plugin for this run; raise ``NotConfigured`` to stay out of it."""
        ...
