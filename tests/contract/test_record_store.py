"""Versioned records (SPEC P3), written with reports and read back, on every backend.

Records reach the store the way a crawl sends them: on a TaskReport, through ``report``.
"""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
from collections.abc import Sequence
from dataclasses import replace

import psycopg
import pytest

from sitesync.models import (
    AssetRecord,
    NewTask,
    RunConfig,
    RunStatus,
    TaskReport,
    TaskState,
    canonical_json,
)
from sitesync.store.base import Store
from sitesync.store.sqlite.store import SqliteStore
from tests import _postgres

HOST = "a.test"


def page(path: str, text: str) -> AssetRecord:
    url = f"http://{HOST}{path}"
    body = f"<html><body><p>{text}</p></body></html>".encode()
    digest = hashlib.sha256(body).hexdigest()
    return AssetRecord(
        key=f"page:{url}",
        kind="page",
        url=url,
        content_hash=digest,
        data={"title": path, "status": 200},
        body=body,
    )


def asset(kind: str, name: str, body: bytes | None = None) -> AssetRecord:
    url = f"http://{HOST}/{name}"
    digest = hashlib.sha256(body if body is not None else url.encode()).hexdigest()
    return AssetRecord(
        key=f"{kind}:{url}", kind=kind, url=url, content_hash=digest, data={"url": url}, body=body
    )


def words(n: int, *, salt: str = "") -> str:
    return " ".join(f"word{i}{salt}" for i in range(n))


async def new_run(store: Store) -> int:
    run = await store.create_run(RunConfig(seeds=(f"http://{HOST}/",)))
    await store.transition_run(run.id, RunStatus.RUNNING)
    await store.mark_seeded(run.id)
    return run.id


async def report(
    store: Store,
    run_id: int,
    path: str,
    records: Sequence[AssetRecord],
    *,
    ok: bool = True,
    give_up: bool = False,
) -> TaskState:
    """Lease the URL ``path`` in the run and report it with ``records``; its new state."""
    url = f"http://{HOST}{path}"
    await store.add_tasks(run_id, [NewTask(url=url, host=HOST, depth=0)])
    [lease] = await store.acquire(run_id, worker_id="w", limit=1, lease_seconds=30)
    assert lease.url == url
    done = TaskReport(
        lease=lease,
        ok=ok,
        http_status=200 if ok else 0,
        give_up=give_up,
        error=None if ok else "unreachable: refused",
        records=tuple(records),
    )
    await store.report(run_id, [done])
    task = await store.get_task(run_id, url)
    assert task is not None
    return task.state


async def crawl(store: Store, pages: dict[str, Sequence[AssetRecord]]) -> int:
    """One run that reports each path with its records."""
    run_id = await new_run(store)
    for path, records in pages.items():
        await report(store, run_id, path, records)
    return run_id


async def test_a_version_is_written_only_when_content_changes(store: Store) -> None:
    stable, edited = page("/a", words(50)), page("/b", words(50))
    first = await crawl(store, {"/a": [stable], "/b": [edited]})
    second = await crawl(store, {"/a": [stable], "/b": [page("/b", words(50, salt="x"))]})

    [only] = await store.record_history(stable.key)
    assert (only.version, only.run_id, only.similarity) == (1, first, None)
    v1, v2 = await store.record_history(edited.key)
    assert (v1.version, v1.run_id, v2.version, v2.run_id) == (1, first, 2, second)
    assert v2.content_hash != v1.content_hash and v2.data == {"title": "/b", "status": 200}
    # The unchanged record was still seen by the second run, at its first version.
    seen = {r.key: r.version for r in await store.records_of_run(second)}
    assert seen == {stable.key: 1, edited.key: 2}
    assert await store.record_history("page:http://a.test/never") == []


async def test_similarity_is_low_for_a_rewrite_and_high_for_an_edit(store: Store) -> None:
    text = words(300)
    await crawl(store, {"/light": [page("/light", text)], "/heavy": [page("/heavy", text)]})
    lightly = text.replace("word150 ", "changed ")
    await crawl(
        store,
        {
            "/light": [page("/light", lightly)],
            "/heavy": [page("/heavy", words(300, salt="defaced"))],
        },
    )
    light = (await store.record_history("page:http://a.test/light"))[-1].similarity
    heavy = (await store.record_history("page:http://a.test/heavy"))[-1].similarity
    assert light is not None and heavy is not None
    assert light > 0.95 and heavy < 0.05


async def test_records_without_bodies_compare_their_data(store: Store) -> None:
    def links(urls: list[str]) -> AssetRecord:
        data = {"internal": urls}
        digest = hashlib.sha256(repr(data).encode()).hexdigest()
        return AssetRecord(
            key="links:http://a.test/",
            kind="links",
            url="http://a.test/",
            content_hash=digest,
            data=data,
        )

    many = [f"http://a.test/p/{n}" for n in range(40)]
    await crawl(store, {"/": [links(many)]})
    await crawl(store, {"/": [links([*many[:-1], "http://a.test/other"])]})
    [_, latest] = await store.record_history("links:http://a.test/")
    assert latest.similarity is not None and 0.8 < latest.similarity < 1.0
    assert latest.body_hash is None and latest.body_size is None


async def test_bodies_are_kept_once_per_content_compressed_and_capped(
    store: Store, request: pytest.FixtureRequest
) -> None:
    same = page("/one", words(400))
    twin = AssetRecord(
        key="page:http://a.test/two",
        kind="page",
        url="http://a.test/two",
        content_hash=same.content_hash,
        data={},
        body=same.body,
    )
    await crawl(store, {"/one": [same], "/two": [twin]})
    [one], [two] = await store.record_history(same.key), await store.record_history(twin.key)
    assert one.body_hash == two.body_hash == same.content_hash
    assert await store.get_body(same.content_hash) == same.body
    assert await store.get_body("0" * 64) is None
    bodies = raw_rows(store, request, "SELECT size, length(data) FROM record_bodies")
    assert len(bodies) == 1 and bodies[0][1] < bodies[0][0]  # one copy, compressed

    store.max_stored_body_bytes = 100
    big = page("/big", words(400, salt="big"))
    await crawl(store, {"/big": [big]})
    [kept_not] = await store.record_history(big.key)
    assert big.body is not None
    assert kept_not.body_hash is None and kept_not.body_size == len(big.body)
    assert kept_not.body_note is not None and "max_stored_body_bytes" in kept_not.body_note
    assert await store.get_body(big.content_hash) is None


async def test_a_records_own_digest_and_json_are_stored_as_if_the_store_made_them(
    store: Store,
) -> None:
    # The built-in plugins hand over the body's sha256 and the data's canonical JSON they
    # already made; what is stored must not tell the two apart (NUL included).
    def both(key: str, data: dict[str, object], body: bytes | None) -> list[AssetRecord]:
        digest = hashlib.sha256(repr((data, body)).encode()).hexdigest()
        made = AssetRecord(key=key, kind="t", url=f"http://{HOST}/{key}", content_hash=digest,
                           data=data, body=body)  # fmt: skip
        given = replace(
            made,
            key=f"{key}+",
            body_hash=None if body is None else hashlib.sha256(body).hexdigest(),
            data_json=canonical_json(data),
        )
        return [made, given]

    body = f"<p>{words(50)}</p>".encode()
    first = {"/": both("p", {"title": "a\x00b", "n": [1, 2]}, body) + both("l", {"u": ["x"]}, None)}
    second = {"/": both("p", {"title": "c"}, body + b"<p>more</p>") + both("l", {"u": ["y"]}, None)}
    await crawl(store, first)
    await crawl(store, second)
    for key in ("p", "l"):
        made, given = await store.record_history(key), await store.record_history(f"{key}+")
        assert [v.data for v in made] == [v.data for v in given]
        assert [(v.body_hash, v.body_size, v.similarity) for v in made] == [
            (v.body_hash, v.body_size, v.similarity) for v in given
        ]
    [old, new] = await store.record_history("p+")
    assert old.data["title"] == "a\ufffdb" and new.similarity is not None
    assert old.body_hash is not None and await store.get_body(old.body_hash) == body


#: Text that an array literal must quote or escape ({, comma, quote, backslash, the word
#: NULL, blanks, an empty string) and text beyond ASCII: the batch writes send it in arrays.
AWKWARD = ['a"b', "c\\d", "{e,f}", "NULL", "", " g ", "é ✓ 𝄞"]


async def test_awkward_text_and_bytes_survive_the_batched_writes(store: Store) -> None:
    records = [
        AssetRecord(
            key=f"t:{text}|{n}",
            kind="t",
            url=f"http://{HOST}/{n}?q={text}",
            content_hash=f"h{n}",
            data={"text": text, "list": [text, None], text: n},
            body=text.encode() + b'\x00\xff\\"{},' + bytes(range(256)),
        )
        for n, text in enumerate(AWKWARD)
    ]
    await crawl(store, {"/": records})
    for record in records:
        [version] = await store.record_history(record.key)
        assert version.data == record.data
        assert version.body_hash is not None
        assert await store.get_body(version.body_hash) == record.body


async def test_diff_lists_exactly_the_added_removed_and_changed_keys(store: Store) -> None:
    keep, edit, drop = page("/keep", "same"), page("/edit", "before"), page("/drop", "bye")
    new = page("/new", "hello")
    a = await crawl(store, {"/keep": [keep], "/edit": [edit], "/drop": [drop]})
    b = await crawl(store, {"/keep": [keep], "/edit": [page("/edit", "after")], "/new": [new]})

    diff = await store.diff_runs(a, b)
    assert (diff.run_a, diff.run_b) == (a, b)
    assert [(c.key, c.version_a, c.version_b) for c in diff.added] == [(new.key, None, 1)]
    assert [(c.key, c.version_a, c.version_b) for c in diff.removed] == [(drop.key, 1, None)]
    [changed] = diff.changed
    assert (changed.key, changed.version_a, changed.version_b) == (edit.key, 1, 2)
    assert changed.similarity is not None and changed.similarity < 1
    reverse = await store.diff_runs(b, a)
    assert [c.key for c in reverse.added] == [drop.key]
    assert [c.key for c in reverse.removed] == [new.key]
    assert (await store.diff_runs(a, a)) == type(diff)(run_a=a, run_b=a)


async def test_content_that_changes_back_is_not_a_change_between_those_runs(
    store: Store,
) -> None:
    a = await crawl(store, {"/": [page("/", "first")]})
    await crawl(store, {"/": [page("/", "second")]})
    c = await crawl(store, {"/": [page("/", "first")]})
    assert len(await store.record_history("page:http://a.test/")) == 3
    assert (await store.diff_runs(a, c)).changed == ()


async def test_records_of_run_filters_by_kind(store: Store) -> None:
    run_id = await crawl(store, {"/": [page("/", "x"), asset("image", "logo.png")]})
    assert [r.kind for r in await store.records_of_run(run_id)] == ["image", "page"]
    [image] = await store.records_of_run(run_id, kind="image")
    assert image.url == "http://a.test/logo.png" and image.data == {"url": image.url}


async def test_asset_counters_count_distinct_assets_once_per_run(store: Store) -> None:
    logo = asset("image", "logo.png", b"\x89PNG logo")
    manual = asset("document", "manual.pdf")  # found, not downloaded
    run_id = await crawl(
        store,
        {
            "/": [page("/", "home"), logo, manual],
            "/about": [page("/about", "about"), logo],  # the same logo again: not counted twice
        },
    )
    [counts] = await store.run_assets(run_id)
    assert (counts.host, counts.assets_found, counts.assets_stored) == (HOST, 2, 1)
    assert await store.get_body(logo.content_hash) == logo.body

    # Another run counts afresh, and an unchanged asset it sees again is stored all the same.
    second = await crawl(store, {"/": [page("/", "home"), logo]})
    [again] = await store.run_assets(second)
    assert (again.assets_found, again.assets_stored) == (1, 1)
    assert await store.run_assets(second + 1000) == []


async def test_records_are_kept_only_with_a_final_answer(store: Store) -> None:
    down = AssetRecord(
        key="navigation:http://a.test/",
        kind="navigation",
        url="http://a.test/",
        content_hash="h1",
        data={"shortfall": "site unreachable"},
    )
    run_id = await new_run(store)
    # A failure with attempts left: the retry will say it again, nothing is kept yet.
    assert await report(store, run_id, "/", [down], ok=False) is TaskState.PENDING
    assert await store.record_history(down.key) == []
    # A final failure (FAILED) keeps what the plugins made of it.
    url = f"http://{HOST}/"
    [lease] = await store.acquire(run_id, worker_id="w", limit=1, lease_seconds=30)
    final = TaskReport(lease=lease, ok=False, give_up=True, error="unreachable", records=(down,))
    await store.report(run_id, [final])
    task = await store.get_task(run_id, url)
    assert task is not None and task.state is TaskState.FAILED
    [kept] = await store.record_history(down.key)
    assert kept.data == {"shortfall": "site unreachable"} and kept.run_id == run_id


def raw_rows(store: Store, request: pytest.FixtureRequest, query: str) -> list[tuple[object, ...]]:
    """Rows straight from the backend's tables (to see how bodies are kept)."""
    if isinstance(store, SqliteStore):
        with sqlite3.connect(store.path) as conn:
            return conn.execute(query).fetchall()
    schema = request.getfixturevalue("postgres_schema")  # the one this store lives in
    with psycopg.connect(request.getfixturevalue("postgres_dsn")) as conn:
        conn.execute(_postgres.search_path(schema))
        return conn.execute(query.encode()).fetchall()


async def test_runs_writing_the_same_keys_at_once_keep_one_history(store: Store) -> None:
    """Two runs report the same records at once (on PostgreSQL: two transactions racing on
    the same keys, in opposite orders); each key still gets one consistent history."""
    same = [asset("image", f"i{n}.png", f"same {n}".encode()) for n in range(40)]
    first, second = await new_run(store), await new_run(store)
    await asyncio.gather(report(store, first, "/", same), report(store, second, "/", same[::-1]))
    for record in same:
        [only] = await store.record_history(record.key)
        assert only.version == 1 and only.run_id in (first, second)
    assert len(await store.records_of_run(first)) == len(await store.records_of_run(second)) == 40

    edited = [asset("image", f"i{n}.png", f"edited {n}".encode()) for n in range(40)]
    again = [asset("image", f"i{n}.png", f"again {n}".encode()) for n in range(40)]
    third, fourth = await new_run(store), await new_run(store)
    await asyncio.gather(report(store, third, "/", edited), report(store, fourth, "/", again[::-1]))
    for record in same:
        versions = await store.record_history(record.key)
        assert [v.version for v in versions] == [1, 2, 3]
        assert {v.run_id for v in versions[1:]} == {third, fourth}
    [counts] = await store.run_assets(third)
    assert (counts.assets_found, counts.assets_stored) == (40, 40)


async def report_batch(store: Store, run_id: int, pages: dict[str, Sequence[AssetRecord]]) -> None:
    """Lease every path and report them all in one batch (one ``report`` call), in order."""
    await store.add_tasks(
        run_id, [NewTask(url=f"http://{HOST}{path}", host=HOST, depth=0) for path in pages]
    )
    leases = await store.acquire(run_id, worker_id="w", limit=len(pages), lease_seconds=30)
    by_url = {lease.url: lease for lease in leases}
    reports = [
        TaskReport(lease=by_url[f"http://{HOST}{path}"], ok=True, http_status=200,
                   records=tuple(records))
        for path, records in pages.items()
    ]  # fmt: skip
    await store.report(run_id, reports)


async def test_one_batch_writes_its_records_as_one_report_after_another_would(
    store: Store,
) -> None:
    """PostgreSQL writes a batch's new keys and unchanged sightings together: a key that
    appears twice in a batch, or changes within it, must come out as written one by one."""
    logo = asset("image", "logo.png", b"\x89PNG logo")
    banner = asset("image", "banner.png", b"banner 1")
    banner_2 = replace(banner, content_hash="b2", body=b"banner 2")
    manual = asset("document", "manual.pdf")
    first = await new_run(store)
    await report_batch(store, first, {
        "/": [page("/", "home"), logo, banner],
        "/a": [page("/a", "a"), logo, banner_2],  # the banner changed within the batch
        "/b": [page("/b", "b"), logo, banner, manual],  # and changed back
    })  # fmt: skip
    assert [v.version for v in await store.record_history(logo.key)] == [1]
    history = await store.record_history(banner.key)
    assert [(v.version, v.content_hash) for v in history] == [
        (1, banner.content_hash), (2, "b2"), (3, banner.content_hash)
    ]  # fmt: skip
    seen = {v.key: v.version for v in await store.records_of_run(first)}
    assert seen[banner.key] == 3 and seen[logo.key] == 1 and len(seen) == 6
    [counts] = await store.run_assets(first)
    assert (counts.assets_found, counts.assets_stored) == (3, 2)  # logo, banner, manual
    assert await store.get_body(hashlib.sha256(b"banner 2").hexdigest()) == b"banner 2"

    # A second run: unchanged sightings of known keys beside a new one, in one batch.
    second = await new_run(store)
    fresh = asset("image", "fresh.png", b"fresh")
    await report_batch(store, second, {"/": [page("/", "home"), logo], "/c": [logo, fresh]})
    assert [v.version for v in await store.record_history(logo.key)] == [1]
    assert {v.key for v in await store.records_of_run(second)} == {
        page("/", "home").key, logo.key, fresh.key
    }  # fmt: skip
    [again] = await store.run_assets(second)
    assert (again.assets_found, again.assets_stored) == (2, 2)
    assert [v.version for v in await store.record_history(page("/", "home").key)] == [1]
