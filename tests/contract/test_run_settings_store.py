"""A run's settings in the store (SPEC R9): recorded at creation, changed explicitly, every
change kept with its time; on every backend."""

from __future__ import annotations

from sitesync.models import RunConfig
from sitesync.store.base import Store
from tests._clock import FakeClock

CREATED = {"delay": 1.0, "plugins": ["page", "links"], "allowed_networks": ["10.0.0.0/8"]}


async def test_a_run_keeps_the_settings_it_was_created_with(store: Store) -> None:
    run = await store.create_run(RunConfig(seeds=("http://a.test/",)), settings=CREATED)
    assert run.settings == CREATED and run.settings_version == 0
    assert (await store.get_run(run.id)).settings == CREATED
    [listed] = await store.list_runs()
    assert listed.settings == CREATED
    bare = await store.create_run(RunConfig(seeds=("http://a.test/",)))
    assert bare.settings is None  # as runs made before settings were kept


async def test_a_change_is_applied_versioned_and_recorded_with_its_time(
    store: Store, clock: FakeClock
) -> None:
    run = await store.create_run(RunConfig(seeds=("http://a.test/",)), settings=CREATED)
    clock.advance(60)
    changed = await store.change_run_settings(run.id, {"delay": 5.0, "plugins": ["page", "links"]})
    assert changed.settings == {**CREATED, "delay": 5.0}
    assert changed.settings_version == 1
    clock.advance(60)
    again = await store.change_run_settings(run.id, {"delay": 2.5})
    assert again.settings_version == 2 and again.settings is not None
    assert again.settings["delay"] == 2.5
    changes = await store.list_setting_changes(run.id)
    # only values that changed are recorded: the plugins were given but the same
    assert [(c.version, c.name, c.old, c.new) for c in changes] == [
        (1, "delay", 1.0, 5.0),
        (2, "delay", 5.0, 2.5),
    ]
    assert changes[1].changed_at - changes[0].changed_at == 60
    assert await store.list_setting_changes(run.id + 1) == []


async def test_a_change_that_changes_nothing_writes_nothing(store: Store) -> None:
    run = await store.create_run(RunConfig(seeds=("http://a.test/",)), settings=CREATED)
    same = await store.change_run_settings(run.id, {"delay": 1.0})
    assert same.settings_version == 0 and await store.list_setting_changes(run.id) == []


async def test_a_scan_is_created_with_its_settings(store: Store) -> None:
    await store.import_domains("fr", ["a.test"])
    run = await store.start_scan("fr", RunConfig(seeds=("http://a.test/",)), settings=CREATED)
    assert (await store.get_run(run.id)).settings == CREATED
