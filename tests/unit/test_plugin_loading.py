"""Plugin discovery (SPEC P1): entry points, built-ins, selection, strict mode, the pipeline.

The plugins here are real distributions: sitesync's own built-ins, the example plugin
installed in the test environment (tests/plugin_packages/sitesync_example_plugin), and the
misbehaving ones of tests/plugin_packages/misbehaving, installed per test on ``sys.path``.
"""

from __future__ import annotations

import logging
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sitesync.cli import app
from sitesync.config import load_settings
from sitesync.errors import ConfigError, NotConfigured
from sitesync.fetch.base import FetchOutcome
from sitesync.models import AssetRecord, CrawlArtifact, ProcessedArtifact
from sitesync.plugins import ParsedPage, PluginContext
from sitesync.plugins.loader import (
    LoadedPlugin,
    PluginInfo,
    PluginStatus,
    discover,
    group_entry_points,
)
from sitesync.plugins.pipeline import PluginPipeline, RunPlugin, _build, build_pipeline

MISBEHAVING = Path(__file__).parents[1] / "plugin_packages" / "misbehaving"
BUILTINS = ["assets", "links", "navigation", "page"]


@pytest.fixture
def misbehaving(monkeypatch: pytest.MonkeyPatch) -> None:
    """Install the misbehaving plugins for one test (an installed layout on sys.path)."""
    monkeypatch.syspath_prepend(str(MISBEHAVING))


def artifact(url: str = "http://a.test/", *, status: int = 200, html: str = "") -> CrawlArtifact:
    return CrawlArtifact(
        run_id=1,
        task_id=1,
        requested_url=url,
        final_url=url,
        depth=0,
        status=status,
        outcome=FetchOutcome.SUCCESS if status else FetchOutcome.UNREACHABLE,
        headers={"content-type": "text/html"},
        body=html.encode(),
        text=html or None,
        redirects=(),
        elapsed=0.0,
    )


def test_builtins_and_installed_plugins_are_discovered_through_entry_points() -> None:
    found = discover()
    names = [info.name for info in found.infos]
    assert names == [*BUILTINS, "headings"]  # built-ins first, then third party by name
    assert all(info.status is PluginStatus.LOADED for info in found.infos)
    assert [info.builtin for info in found.infos] == [True] * 4 + [False]
    assert found.infos[-1].distribution == "sitesync-example-plugin"
    assert found.infos[-1].target == "sitesync_example_plugin:HeadingsPlugin"


def test_the_dict_style_entry_points_of_older_pythons_are_read_too() -> None:
    point = EntryPoint("mine", "sitesync.plugins.builtin.links:LinksPlugin", "sitesync.plugins")
    old_style = {"sitesync.plugins": [point], "console_scripts": []}  # what 3.8/3.9 returned
    assert group_entry_points(found=old_style) == [point]
    [info] = discover(found=old_style).infos
    assert (info.name, info.status, info.distribution) == ("mine", PluginStatus.LOADED, None)


def test_a_plugin_that_fails_to_import_is_skipped_and_logged(
    misbehaving: None, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="sitesync.plugins"):
        found = discover()
    [broken] = [info for info in found.infos if info.name == "broken"]
    assert broken.status is PluginStatus.SKIPPED
    assert broken.error == "ImportError: sitesync_broken_plugin needs the 'nonexistent' library"
    assert "broken" not in [loaded.info.name for loaded in found.loaded]
    assert "flaky" in [loaded.info.name for loaded in found.loaded]
    [line] = [r.getMessage() for r in caplog.records if "skipped" in r.getMessage()]
    assert line.startswith("plugin broken (sitesync_broken_plugin:BrokenPlugin) skipped: ")
    assert "needs the 'nonexistent' library" in line


def test_strict_mode_makes_a_failed_import_fatal_in_one_line(misbehaving: None) -> None:
    with pytest.raises(ConfigError) as caught:
        discover(strict=True)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("plugin broken (sitesync_broken_plugin:BrokenPlugin) could not")
    assert message.endswith("(strict_plugins is on)")
    with pytest.raises(ConfigError, match="plugin broken"):
        build_pipeline(load_settings(strict_plugins=True))
    # Left out by the selection, a broken plugin is never imported, strict or not.
    assert discover(["page", "flaky"], strict=True).loaded


def test_the_plugins_setting_selects_which_plugins_run(monkeypatch: pytest.MonkeyPatch) -> None:
    found = discover(["links", "headings"])
    assert [p.info.name for p in found.loaded] == ["links", "headings"]
    disabled = [i.name for i in found.infos if i.status is PluginStatus.DISABLED]
    assert disabled == ["assets", "navigation", "page"]
    with pytest.raises(ConfigError, match=r"no plugin named nope \(found: assets, headings"):
        discover(["links", "nope"])

    monkeypatch.setenv("SITESYNC_PLUGINS", " page, links ")
    assert load_settings().plugins == ("page", "links")
    assert build_pipeline(load_settings()).names == ["links", "page"]
    monkeypatch.setenv("SITESYNC_PLUGINS", "")
    assert build_pipeline(load_settings()).names == []  # empty: none at all
    monkeypatch.delenv("SITESYNC_PLUGINS")
    assert build_pipeline(load_settings()).names == [*BUILTINS, "headings"]


def test_sitesync_plugins_lists_found_loaded_and_skipped(misbehaving: None) -> None:
    result = CliRunner().invoke(app, ["plugins"], env={"SITESYNC_PLUGINS": "page,broken"})
    assert result.exit_code == 0, result.output
    lines = {line.split()[1]: line for line in result.output.splitlines() if "│" in line}
    assert "loaded" in lines["page"] and "built-in" in lines["page"]
    assert "skipped" in lines["broken"] and "ImportError" in lines["broken"]
    assert "disabled" in lines["links"] and "disabled" in lines["headings"]


class Records:
    """A plugin that returns one record per page."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def process(self, artifact: CrawlArtifact, page: ParsedPage) -> list[AssetRecord]:
        url = artifact.final_url
        return [AssetRecord(key=f"{self.kind}:{url}", kind=self.kind, url=url, content_hash="h")]


class Fails:
    def process(self, artifact: CrawlArtifact, page: ParsedPage) -> None:
        raise ValueError("no title\nat all")


class Returns:
    def __init__(self, output: object) -> None:
        self.output = output

    async def process(self, artifact: CrawlArtifact, page: ParsedPage) -> object:
        return self.output


async def test_a_failing_plugin_costs_its_own_output_on_that_page_only(
    caplog: pytest.LogCaptureFixture,
) -> None:
    pipeline = PluginPipeline(
        [
            RunPlugin.of("first", Records("one")),
            RunPlugin.of("bad", Fails()),
            RunPlugin.of("last", Records("two")),
        ]
    )
    with caplog.at_level(logging.WARNING, logger="sitesync.plugins"):
        out = await pipeline.process(artifact(html="<p>x</p>"))
    assert [r.kind for r in out.records] == ["one", "two"]
    assert out.errors == ("bad: ValueError: no title at all",)
    assert "plugin bad failed on http://a.test/: ValueError: no title at all" in caplog.text


async def test_third_party_output_is_checked_and_its_links_normalized() -> None:
    good = AssetRecord(key="k:1", kind="k", url="http://a.test/", content_hash="h", data={})
    unserializable = AssetRecord(
        key="k:2", kind="k", url="http://a.test/", content_hash="h", data={"when": object()}
    )
    pipeline = PluginPipeline(
        [
            RunPlugin.of(
                "linker",
                Returns(
                    ProcessedArtifact(
                        records=(good,),
                        links=("/next.html", "HTTP://A.TEST:80/b#x", "mailto:x@a.test"),
                        errors=("soft\nwarning",),
                    )
                ),
            ),
            RunPlugin.of("json", Returns([unserializable])),
            RunPlugin.of("junk", Returns(["not a record"])),
        ]
    )
    out = await pipeline.process(artifact("http://a.test/dir/page"))
    assert out.records == (good,)
    assert out.links == ("http://a.test/next.html", "http://a.test/b")
    assert out.errors[0] == "linker: soft warning"
    assert out.errors[1].startswith("json: TypeError: Object of type object")
    assert out.errors[2] == "junk: TypeError: returned str, not an AssetRecord"


async def test_only_plugins_that_ask_see_a_root_that_could_not_be_fetched() -> None:
    class Watcher(Records):
        sees_failed_roots = True

    pipeline = PluginPipeline([RunPlugin.of("all", Records("a")), RunPlugin.of("w", Watcher("w"))])
    assert [r.kind for r in (await pipeline.process(artifact(status=0))).records] == ["w"]
    assert [r.kind for r in (await pipeline.process(artifact())).records] == ["a", "w"]


def test_a_factory_may_opt_out_of_a_run(caplog: pytest.LogCaptureFixture) -> None:
    def factory(context: PluginContext) -> Records:
        raise NotConfigured("needs an API key")

    info = PluginInfo("keyed", "x:y", "dist", PluginStatus.LOADED)
    with caplog.at_level(logging.INFO, logger="sitesync.plugins"):
        built = _build(LoadedPlugin(info, factory), PluginContext(load_settings()), strict=True)
    assert built is None
    assert "plugin keyed is not configured for this run: needs an API key" in caplog.text


def test_a_plugins_table_reaches_it_checked_by_its_model_from_the_file_or_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sitesync.config import load_settings
    from sitesync.plugins.loader import plugin_configs

    toml = tmp_path / "sitesync.toml"
    toml.write_text('[plugins]\nenabled = ["headings"]\n\n[plugins.headings]\nmax_headings = 3\n')
    monkeypatch.setenv("SITESYNC_CONFIG", str(toml))
    settings = load_settings()
    assert settings.plugins == ("headings",)
    [config] = plugin_configs(settings, discover(settings.plugins).loaded).values()
    assert (config.max_headings, config.levels) == (3, ["h1", "h2"])  # the model's defaults

    monkeypatch.delenv("SITESYNC_CONFIG")
    monkeypatch.setenv("SITESYNC_PLUGIN_CONFIG", '{"headings": {"levels": []}}')
    settings = load_settings(plugins="headings")
    with pytest.raises(ConfigError, match=r"^plugin headings: setting levels .*at least 1"):
        plugin_configs(settings, discover(settings.plugins).loaded)
    monkeypatch.setenv("SITESYNC_PLUGIN_CONFIG", '{"headlines": {}}')
    settings = load_settings(plugins="headings")
    with pytest.raises(ConfigError, match="no plugin named headlines is loaded"):
        plugin_configs(settings, discover(settings.plugins).loaded)
