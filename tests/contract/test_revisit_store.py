"""The latest successful fetch of each URL (issue 30), written with reports and read back
by a later run of the same store, on every backend."""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
from collections.abc import Sequence
from dataclasses import replace

import psycopg
import pytest

from sitesync.models import (
    AssetRecord,
    EarlierFetch,
    NewTask,
    Revisit,
    RunConfig,
    RunStatus,
    TaskReport,
    Validators,
)
from sitesync.store.base import Store
from sitesync.store.sqlite.store import SqliteStore
from tests import _postgres

HOST = "a.test"
URL = f"http://{HOST}/page"
LINKS = (f"http://{HOST}/one", f"http://{HOST}/two", "http://elsewhere.test/x")


def record(kind: str, url: str, content: str) -> AssetRecord:
    digest = hashlib.sha256(content.encode()).hexdigest()
    return AssetRecord(key=f"{kind}:{url}", kind=kind, url=url, content_hash=digest,
                       data={"content": content})  # fmt: skip


PAGE = record("page", URL, "v1")
IMAGE = record("image", f"http://{HOST}/logo.png", "logo")


async def new_run(store: Store) -> int:
    run = await store.create_run(RunConfig(seeds=(f"http://{HOST}/",)))
    await store.transition_run(run.id, RunStatus.RUNNING)
    await store.mark_seeded(run.id)
    return run.id


async def report(
    store: Store,
    run_id: int,
    revisit: Revisit,
    records: Sequence[AssetRecord] = (),
    *,
    ok: bool = True,
    status: int = 200,
) -> int:
    """Lease URL in the run and report it with ``revisit``; the task's id."""
    await store.add_tasks(run_id, [NewTask(url=URL, host=HOST, depth=0)])
    [lease] = await store.acquire(run_id, worker_id="w", limit=1, lease_seconds=30)
    done = TaskReport(lease=lease, ok=ok, http_status=status, records=tuple(records),
                      revisit=revisit, retry_delay=0 if ok else 60)  # fmt: skip
    await store.report(run_id, [done])
    return lease.task_id


def full(etag: str | None = '"v1"', modified: str | None = None, body: str = "v1") -> Revisit:
    return Revisit(url=URL, validators=Validators(etag, modified),
                   content_hash=hashlib.sha256(body.encode()).hexdigest(),
                   body_bytes=len(body), links=LINKS)  # fmt: skip


async def test_a_completed_fetch_is_kept_with_its_validators_links_and_records(
    store: Store,
) -> None:
    assert await store.last_fetch(URL) is None
    run_id = await new_run(store)
    task_id = await report(store, run_id, full('W/"v1"', "Tue, 01 Sep 2026 10:00:00 GMT"),
                           [PAGE, IMAGE])  # fmt: skip
    last = await store.last_fetch(URL)
    assert last is not None
    assert (last.run_id, last.task_id, last.body_bytes) == (run_id, task_id, 2)
    assert last.validators == Validators('W/"v1"', "Tue, 01 Sep 2026 10:00:00 GMT")
    assert last.content_hash == hashlib.sha256(b"v1").hexdigest()
    assert last.fetched_at == last.checked_at
    earlier = last.earlier
    assert earlier is not None and earlier.links == LINKS
    assert sorted(kind for _, kind in earlier.records) == ["image", "page"]


async def test_a_batch_read_returns_each_kept_url_once_and_none_of_the_others(
    store: Store,
) -> None:
    """A worker reads a whole batch of leases' last fetches at once: the URLs the store
    fetched come back as the single read gives them, the others are absent."""
    run_id = await new_run(store)
    await report(store, run_id, full(), [PAGE])
    assert await store.last_fetches([]) == {}
    never = f"http://{HOST}/never-fetched"
    batch = await store.last_fetches([never, URL, URL])
    assert list(batch) == [URL]
    assert batch[URL] == await store.last_fetch(URL)


async def test_a_failed_or_retried_attempt_leaves_the_last_fetch_alone(store: Store) -> None:
    run_id = await new_run(store)
    await report(store, run_id, full(), ok=False, status=0)
    assert await store.last_fetch(URL) is None


async def test_a_later_full_fetch_replaces_the_last_one(store: Store) -> None:
    first = await new_run(store)
    await report(store, first, full('"v1"'), [PAGE])
    second = await new_run(store)
    await report(store, second, full('"v2"', body="v2 longer"), [PAGE, IMAGE])
    last = await store.last_fetch(URL)
    assert last is not None and last.run_id == second
    assert (last.validators.etag, last.body_bytes) == ('"v2"', 9)
    assert last.earlier is not None and len(last.earlier.records) == 2


async def not_modified(store: Store, run_id: int, etag: str | None = None) -> int:
    last = await store.last_fetch(URL)
    assert last is not None
    earlier = last.earlier
    assert isinstance(earlier, EarlierFetch)
    revisit = Revisit(url=URL, validators=Validators(etag), resighted=earlier.records)
    return await report(store, run_id, revisit, status=304)


async def test_a_304_sights_every_record_again_and_confirms_the_fetch(store: Store) -> None:
    first = await new_run(store)
    await report(store, first, full(), [PAGE, IMAGE])
    before = await store.last_fetch(URL)
    second = await new_run(store)
    task_id = await not_modified(store, second)
    seen = await store.records_of_run(second)
    assert [(r.key, r.version, r.run_id) for r in seen] == [
        (IMAGE.key, 1, first), (PAGE.key, 1, first),
    ]  # fmt: skip
    assert {r.key for r in await store.records_of_task(second, task_id)} == {PAGE.key, IMAGE.key}
    assert len(await store.record_history(PAGE.key)) == 1  # a sighting, no new version
    [assets] = await store.run_assets(second)
    assert (assets.assets_found, assets.assets_stored) == (1, 0)
    after = await store.last_fetch(URL)
    assert before is not None and after is not None
    assert (after.run_id, after.task_id, after.fetched_at) == (second, task_id, before.fetched_at)
    assert after.validators == before.validators  # a 304 without an ETag keeps the one kept
    diff = await store.diff_runs(first, second)
    assert not (diff.added or diff.removed or diff.changed)


async def test_a_304_that_sends_a_new_etag_replaces_the_kept_one(store: Store) -> None:
    await report(store, await new_run(store), full('"v1"'), [PAGE])
    await not_modified(store, await new_run(store), etag='"v1b"')
    last = await store.last_fetch(URL)
    assert last is not None and last.validators.etag == '"v1b"'


async def test_what_a_304_stands_for_is_gone_when_one_of_its_records_is(
    store: Store, request: pytest.FixtureRequest
) -> None:
    await report(store, await new_run(store), full(), [PAGE, IMAGE])
    last = await store.last_fetch(URL)
    assert last is not None and last.earlier is not None
    forget_record(store, IMAGE.key, request)
    last = await store.last_fetch(URL)
    assert last is not None and last.earlier is None  # its validators stay: a 304 is refused


_FORGET = (
    "DELETE FROM record_seen WHERE record_id IN (SELECT id FROM records WHERE key = {p})",
    "DELETE FROM record_versions WHERE record_id IN (SELECT id FROM records WHERE key = {p})",
    "DELETE FROM records WHERE key = {p}",
)


def forget_record(store: Store, key: str, request: pytest.FixtureRequest) -> None:
    """What no sitesync command does: a record deleted from the store by hand."""
    if isinstance(store, SqliteStore):
        with contextlib.closing(sqlite3.connect(store.path)) as conn, conn:
            for statement in _FORGET:
                conn.execute(statement.format(p="?"), (key,))
        return
    dsn = request.getfixturevalue("postgres_dsn")
    schema = request.getfixturevalue("postgres_schema")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(_postgres.search_path(schema))
        for statement in _FORGET:
            conn.execute(statement.format(p="%s"), (key,))  # type: ignore[arg-type]


async def test_one_batch_of_304s_sights_a_shared_record_once(store: Store) -> None:
    """Two unchanged pages that both showed the logo: the run sees it once, found once."""
    other = "http://a.test/other"
    first = await new_run(store)
    await report(store, first, full(), [PAGE, IMAGE])
    await store.add_tasks(first, [NewTask(url=other, host=HOST, depth=0)])
    [lease] = await store.acquire(first, worker_id="w", limit=1, lease_seconds=30)
    await store.report(first, [TaskReport(lease=lease, ok=True, http_status=200, records=(IMAGE,),
                                          revisit=replace(full(), url=other))])  # fmt: skip
    second = await new_run(store)
    await store.add_tasks(second, [NewTask(url=u, host=HOST, depth=0) for u in (URL, other)])
    leases = await store.acquire(second, worker_id="w", limit=2, lease_seconds=30)
    reports = []
    for lease in leases:
        last = await store.last_fetch(lease.url)
        assert last is not None and last.earlier is not None
        revisit = Revisit(url=lease.url, validators=Validators(),
                          resighted=last.earlier.records)  # fmt: skip
        reports.append(TaskReport(lease=lease, ok=True, http_status=304, revisit=revisit))
    await store.report(second, reports)
    assert {r.key for r in await store.records_of_run(second)} == {PAGE.key, IMAGE.key}
    [assets] = await store.run_assets(second)
    assert assets.assets_found == 1
