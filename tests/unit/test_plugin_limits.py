"""The plugin pipeline's limits: a timeout per plugin and page, blocking plugins off the
event loop, a maximum record size, and links capped per page."""

from __future__ import annotations

import asyncio
import hashlib
import threading
import time
from dataclasses import replace
from typing import Any

from sitesync.fetch.base import FetchOutcome
from sitesync.fetch.html import count_anchors, extract_links
from sitesync.models import AssetRecord, CrawlArtifact, canonical_json
from sitesync.plugins import ParsedPage
from sitesync.plugins.pipeline import PluginPipeline, RunPlugin

URL = "http://site.test/"
PAGE = CrawlArtifact(
    run_id=1, task_id=1, requested_url=URL, final_url=URL, depth=0, status=200,
    outcome=FetchOutcome.SUCCESS, headers={"content-type": "text/html"}, body=b"<p>x</p>",
    text="<p>x</p>", redirects=(), elapsed=0.0,
)  # fmt: skip


def record(data: dict[str, Any] | None = None) -> AssetRecord:
    return AssetRecord(key=f"t:{URL}", kind="t", url=URL, content_hash="1", data=data or {})


class Sleeper:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.thread: str | None = None

    def process(self, artifact: CrawlArtifact, page: ParsedPage) -> list[AssetRecord]:
        self.thread = threading.current_thread().name
        time.sleep(self.seconds)
        return [record()]


class Hanger:
    async def process(self, artifact: CrawlArtifact, page: ParsedPage) -> list[AssetRecord]:
        await asyncio.Event().wait()
        return []


class OwnTimeout:
    async def process(self, artifact: CrawlArtifact, page: ParsedPage) -> list[AssetRecord]:
        raise TimeoutError("upstream API")


class Bloater:
    def __init__(self, size: int) -> None:
        self.size = size

    def process(self, artifact: CrawlArtifact, page: ParsedPage) -> list[AssetRecord]:
        return [record({"blob": "x" * self.size})]


class Fine:
    def process(self, artifact: CrawlArtifact, page: ParsedPage) -> list[AssetRecord]:
        return [AssetRecord(key=f"f:{URL}", kind="f", url=URL, content_hash="1")]


def pipeline(*plugins: tuple[str, object], **limits: Any) -> PluginPipeline:
    return PluginPipeline([RunPlugin.of(name, p) for name, p in plugins], **limits)  # type: ignore[arg-type]


async def test_a_blocking_plugin_runs_off_the_loop_and_its_output_is_kept() -> None:
    sleeper = Sleeper(0.5)
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    ticker = asyncio.ensure_future(tick())
    produced = await pipeline(("sleeper", sleeper)).process(PAGE)
    ticker.cancel()
    assert [r.kind for r in produced.records] == ["t"] and not produced.errors
    assert sleeper.thread is not None and sleeper.thread.startswith("plugin-")
    assert ticks >= 10  # the loop went on while the plugin slept


async def test_a_plugin_past_its_timeout_costs_only_its_output() -> None:
    pipe = pipeline(("hanger", Hanger()), ("sleeper", Sleeper(30)), ("fine", Fine()), timeout=0.2)
    started = time.monotonic()
    produced = await pipe.process(PAGE)
    assert time.monotonic() - started < 10
    assert [r.kind for r in produced.records] == ["f"]
    assert produced.errors == (
        "hanger: timed out after 0.2s (plugin_timeout_seconds)",
        "sleeper: timed out after 0.2s (plugin_timeout_seconds)",
    )
    await pipe.close()


async def test_a_timeout_the_plugin_raises_itself_is_its_own_error() -> None:
    produced = await pipeline(("own", OwnTimeout()), timeout=5).process(PAGE)
    assert produced.errors == ("own: TimeoutError: upstream API",)


async def test_a_record_over_the_cap_is_refused_and_one_under_it_kept() -> None:
    pipe = pipeline(("big", Bloater(2000)), ("small", Bloater(10)), max_record_bytes=1000)
    produced = await pipe.process(PAGE)
    assert [r.data["blob"] for r in produced.records] == ["x" * 10]
    [error] = produced.errors
    assert error.startswith("big: ValueError: record t:http://site.test/ is 2")
    assert error.endswith("bytes, over max_record_bytes (1000)")


class Precomputed:
    """Records that bring their own body digest and canonical JSON, right or wrong."""

    def process(self, artifact: CrawlArtifact, page: ParsedPage) -> list[AssetRecord]:
        body, data = b"bytes", {"b": 1, "a": "\x00"}
        right = hashlib.sha256(body).hexdigest()
        made = [
            AssetRecord(key="ok", kind="t", url=URL, content_hash="1", data=data, body=body,
                        body_hash=right, data_json=canonical_json(data)),
            AssetRecord(key="hash", kind="t", url=URL, content_hash="1", body=body,
                        body_hash=hashlib.sha256(b"other").hexdigest()),
            AssetRecord(key="json", kind="t", url=URL, content_hash="1", data=data,
                        data_json='{"b":1,"a":"\\u0000"}'),
        ]  # fmt: skip
        return [made[int(artifact.task_id)]]


async def test_a_third_party_digest_or_json_that_is_not_the_records_own_is_refused() -> None:
    # The store keeps a body under body_hash and stores data_json as the data, unchecked.
    pipe = pipeline(("pre", Precomputed()))
    ok, wrong_hash, wrong_json = [await pipe.process(replace(PAGE, task_id=n)) for n in range(3)]
    assert [r.key for r in ok.records] == ["ok"] and not ok.errors
    assert wrong_hash.errors == (
        "pre: ValueError: record hash: body_hash is not the body's sha256",
    )
    assert wrong_json.errors == (
        "pre: ValueError: record json: data_json is not canonical_json(data)",
    )


def test_links_beyond_the_cap_are_counted_not_resolved() -> None:
    html = "".join(f'<a href="/p{n}">{n}</a>' for n in range(30)) + '<a href="/p0">again</a>'
    links = extract_links(html, URL, limit=10)
    assert list(links) == [f"{URL}p{n}" for n in range(10)]
    assert links.truncated == 20  # the repeated /p0 is not a link left out
    assert extract_links(html, URL, limit=30).truncated == 0
    assert count_anchors(b"<a href=1><A class=x HREF = 2><area href=3><a name=x>") == 2


class Declared(Sleeper):
    nonblocking = True


async def test_a_plugin_declared_nonblocking_runs_inline() -> None:
    declared = Declared(0)
    await pipeline(("declared", declared)).process(PAGE)
    assert declared.thread == threading.current_thread().name


class HangsOnClose(Fine):
    async def close(self) -> None:
        await asyncio.Event().wait()


async def test_a_close_that_hangs_is_given_up_after_the_timeout() -> None:
    started = time.monotonic()
    await pipeline(("hangs", HangsOnClose()), timeout=0.2).close()
    assert time.monotonic() - started < 10
