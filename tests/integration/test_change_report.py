"""A scan's change report (issue 30, item 5) against a real loopback site that changes
between scans, on both backends: the counts are what happened, and equal a recount from
what the store keeps of the runs; and the real CLI prints them."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from sitesync.cli.output import document
from sitesync.config import load_settings
from sitesync.models import ChangeReport, FetchOutcome, HostChanges, Run
from sitesync.store.base import Store
from sitesync.web import create_app
from tests._changing_site import ChangingSite, Page, serving, serving_in_thread
from tests.acceptance._cli import run_in_process
from tests.integration.test_gone_pages import pages, scan


def change_site(site: ChangingSite) -> None:
    """/a changes, /e is new, /b answers 410, /d is no longer linked (and / changes)."""
    site.pages["/a"] = Page(("/a1",), text="a, rewritten")
    site.pages["/b"] = Page(status=410)
    site.pages["/e"] = Page(text="e")
    site.pages["/"] = Page(("/a", "/b", "/c", "/e"), text="home")


async def recount(store: Store, run: Run, since: Run) -> HostChanges:
    """The report's totals from the store's other readers: the records each run saw, the
    tasks' outcomes, record histories, and the run's own byte counter."""
    seen = {r.key: r for r in await store.records_of_run(run.id, kind="page")}
    before = {r.key: r for r in await store.records_of_run(since.id, kind="page")}
    tasks = {t.url: t for t in await store.list_tasks(run.id, limit=10_000)}
    counts = dict.fromkeys(("new", "changed", "304", "same", "gone", "not_reached", "skipped"), 0)
    for key, record in seen.items():
        earlier = before.get(key)
        if earlier is None:
            counts["new"] += 1
        elif earlier.version != record.version:
            counts["changed"] += 1
        elif tasks[record.url].outcome is FetchOutcome.NOT_MODIFIED:
            counts["304"] += 1
            counts["skipped"] += record.body_size or 0
        else:
            counts["same"] += 1
    for key in before.keys() - seen.keys():
        history = await store.record_history(key)
        gone = any(v.gone and since.id < v.run_id <= run.id for v in history)
        counts["gone" if gone else "not_reached"] += 1
    attempts = sum([len(await store.list_attempts(t.id)) for t in tasks.values()])
    downloaded = run.counters.bytes_fetched
    return HostChanges("*", new=counts["new"], changed=counts["changed"],
                       unchanged_not_modified=counts["304"], unchanged_same_content=counts["same"],
                       gone=counts["gone"], not_reached=counts["not_reached"], requests=attempts,
                       bytes_downloaded=downloaded,
                       bytes_full_fetch=downloaded + counts["skipped"])  # fmt: skip


async def test_the_report_counts_what_happened_and_equals_a_recount_from_the_store(
    store: Store, tmp_path: Path
) -> None:
    async with serving(pages()) as site:
        first = await scan(store, site, tmp_path)
        report = await store.change_report(first.id)
        assert report.since_run_id is None and report.total.new == 6  # no earlier scan
        change_site(site)
        site.served.clear()
        second = await scan(store, site, tmp_path)

    report = await store.change_report(second.id)
    assert isinstance(report, ChangeReport) and report.since_run_id == first.id
    [host] = report.hosts
    # /e new; / and /a changed; /a1 and /c answered 304; /b (410) and /d (unlinked) gone.
    assert (host.new, host.changed, host.unchanged_not_modified, host.gone) == (1, 2, 2, 2)
    assert (host.unchanged_same_content, host.not_reached) == (0, 0)
    assert report.total == await recount(store, await store.get_run(second.id), first)
    served = sum(size for _, _, size in site.served)
    assert report.total.bytes_downloaded == served  # the bodies the server sent
    assert report.total.bytes_full_fetch > report.total.bytes_downloaded
    # The same question, one host asked for, and against an explicit earlier run.
    assert (await store.change_report(second.id, host=host.host)).total == report.total
    assert (await store.change_report(second.id, since_run_id=first.id)) == report
    # The dashboard's JSON API serves the same report, as `sitesync changes --json` does.
    app = create_app(load_settings(db=str(tmp_path / "unused.db")), store=store)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        served = (await http.get(f"/api/runs/{second.id}/changes")).json()
        against_itself = (await http.get(f"/api/runs/{second.id}/changes?since={second.id}")).json()
    assert served == document("changes", report)["data"]
    assert against_itself["total"]["new"] == 0 and against_itself["since_run_id"] == second.id


def test_the_cli_prints_the_report_as_a_table_and_as_json(db_url: str) -> None:
    fast = {"delay": "0", "per_host_concurrency": "0", "sitemaps": "false",
            "respect_robots": "false"}  # fmt: skip
    with serving_in_thread(pages()) as site:
        root = site.url("")
        for change in (None, change_site):
            if change is not None:
                change(site)
            done = run_in_process("crawl", site.url("/"), "--no-progress", "--db", db_url,
                                  settings=fast)  # fmt: skip
            assert done.returncode == 0, done.stderr
    shown = run_in_process("changes", "2", "--db", db_url)
    assert shown.returncode == 0, shown.stderr
    assert "run 2 against run 1" in shown.stdout and "127.0.0.1" in shown.stdout
    document = json.loads(run_in_process("changes", "2", "--json", "--db", db_url).stdout)
    assert document["schema"] == "sitesync.changes"
    total = document["data"]["total"]
    assert (total["new"], total["changed"], total["unchanged_not_modified"]) == (1, 2, 2)
    assert total["gone"] == 2
    assert run_in_process("changes", "9", "--db", db_url).returncode != 0
    history = run_in_process("history", f"{root}/d", "--db", db_url)  # unlinked in run 2
    assert history.returncode == 0 and "gone (unreached)" in history.stdout, history.stdout
