"""The dashboard's JSON API in process (httpx.ASGITransport), on a real store of each backend."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from sitesync.config import load_settings
from sitesync.fetch.base import FetchOutcome
from sitesync.models import AssetRecord, RunConfig, RunStatus, TaskReport
from sitesync.store import open_store
from sitesync.store.base import Store
from sitesync.web import create_app
from tests.contract.test_frontier_store import running_run, task

HOPS = (
    ("http://a.test/p/0", "http://a.test/p/0/", 301),
    ("http://a.test/p/0/", "http://www.a.test/p/0/", 302),
)


async def crawl_a_little(store: Store) -> int:
    """A running run with a page of each kind of ending: redirected, 404, failed, and one
    whose records include a navigation sample; a worker holds a.test."""
    run_id = await running_run(store, max_retries=1)
    await store.add_tasks(run_id, [task(n) for n in range(4)] + [task(9, host="b.test")])
    await store.register_worker(run_id, worker_id="w-1", host="machine", pid=4242)
    await store.claim_hosts(run_id, worker_id="w-1", claim_seconds=60, worker_ttl=60)
    leases = await store.acquire(run_id, worker_id="w-1", limit=4, lease_seconds=60)
    navigation = AssetRecord(
        key="navigation:http://a.test",
        kind="navigation",
        url="http://a.test",
        content_hash="h1",
        data={"urls": [{"url": "http://a.test/p/1", "found_in": "nav"}], "shortfall": None},
    )
    reports = [
        TaskReport(lease=leases[0], ok=True, http_status=200, outcome=FetchOutcome.SUCCESS,
                   final_url=HOPS[-1][1], redirects=HOPS, records=(navigation,)),
        TaskReport(lease=leases[1], ok=True, http_status=404, outcome=FetchOutcome.HTTP_ERROR),
        TaskReport(lease=leases[2], ok=False, error="unreachable: connection refused",
                   outcome=FetchOutcome.UNREACHABLE),
    ]  # fmt: skip
    await store.report(run_id, reports)
    return run_id


@pytest.fixture
async def client(store: Store, tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(load_settings(db=str(tmp_path / "unused.db")), store=store)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        http.app = app  # type: ignore[attr-defined]
        yield http


async def test_status_sums_the_pending_counters_of_active_runs(
    store: Store, client: httpx.AsyncClient
) -> None:
    first = await crawl_a_little(store)
    second = await running_run(store)
    await store.add_tasks(second, [task(n, host="c.test") for n in range(3)])
    done = await running_run(store)
    await store.add_tasks(done, [task(1, host="d.test")])
    await store.transition_run(done, RunStatus.CANCELLED)

    body = (await client.get("/api/status")).json()
    runs = {run.id: run for run in [await store.get_run(first), await store.get_run(second)]}
    assert [run["id"] for run in body["active_runs"]] == [first, second]
    assert body["pending_total"] == sum(run.counters.pending for run in runs.values()) == 4
    assert body["in_flight_total"] == 1  # the fourth lease of crawl_a_little
    assert (await client.get("/api/runs")).json()[0]["id"] == done  # newest first


async def test_run_detail_shows_counters_hosts_workers_claims_outcomes_and_samples(
    store: Store, client: httpx.AsyncClient
) -> None:
    run_id = await crawl_a_little(store)
    sampler = client.app.state.dashboard.sampler  # type: ignore[attr-defined]
    await sampler.sample_once()
    await sampler.sample_once()
    await store.save_host_pace("a.test", delay=3.0, concurrency=1, reason="429s", since=1.0)
    await store.record_root_redirect("b.test", canonical_host="www.b.test", aliases=["b.test"])

    detail = (await client.get(f"/api/runs/{run_id}")).json()
    run = await store.get_run(run_id)
    assert detail["run"]["status"] == "running"
    assert detail["run"]["counters"]["completed"] == run.counters.completed == 2
    assert detail["run"]["counters"]["failed"] == 1
    assert detail["run"]["pending_work"] == run.counters.pending + run.counters.assigned == 2
    hosts = {h["host"]: h for h in detail["hosts"]}
    assert hosts["a.test"]["claimed_by"] == "w-1" and hosts["b.test"]["pending"] == 1
    assert (hosts["a.test"]["pace_delay"], hosts["a.test"]["pace_reason"]) == (3.0, "429s")
    assert hosts["b.test"]["pace_reason"] is None
    assert hosts["b.test"]["domain"]["canonical_host"] == "www.b.test"
    assert hosts["b.test"]["domain"]["aliases"] == ["b.test"]
    [worker] = detail["workers"]
    assert (worker["worker_id"], worker["pid"], worker["live"], worker["leased"]) == (
        "w-1", 4242, True, 1,
    )  # fmt: skip
    assert {c["host"] for c in detail["claims"]} == {"a.test", "b.test"}
    assert {(o["outcome"], o["status_class"], o["tasks"]) for o in detail["outcomes"]} == {
        ("success", "2xx", 1),
        ("http_error", "4xx", 1),
        ("unreachable", "none", 1),
    }
    assert len(detail["samples"]) == 2
    assert detail["samples"][-1]["pages_fetched"] == run.counters.pages_fetched


async def test_errors_redirects_and_navigation_samples(
    store: Store, client: httpx.AsyncClient
) -> None:
    run_id = await crawl_a_little(store)
    errors = (await client.get(f"/api/runs/{run_id}/errors")).json()
    assert errors["failed"] == 1 and not errors["truncated"]
    [group] = errors["groups"]
    assert group["outcome"] == "unreachable" and group["count"] == 1
    assert group["recent"][0]["last_error"] == "unreachable: connection refused"

    [chain] = (await client.get(f"/api/runs/{run_id}/redirects")).json()
    assert chain["url"] == "http://a.test/p/0" and chain["final_url"] == HOPS[-1][1]
    assert [(h["from_url"], h["to_url"], h["status"]) for h in chain["hops"]] == list(HOPS)

    [sample] = (await client.get(f"/api/runs/{run_id}/navigation")).json()["samples"]
    assert sample["url"] == "http://a.test"
    # p/1 answered 404 later in the run: marked, and the shortfall says so (issue 14)
    assert sample["data"]["urls"] == [
        {"url": "http://a.test/p/1", "found_in": "nav", "failed": "http_error (HTTP 404)"}
    ]
    assert sample["data"]["shortfall"] == "1 of the 1 sampled URLs failed in this run (0 usable)"


async def test_the_buttons_move_the_run_and_refuse_illegal_moves(
    store: Store, client: httpx.AsyncClient
) -> None:
    run_id = await running_run(store)
    paused = await client.post(f"/api/runs/{run_id}/pause")
    assert paused.status_code == 200 and paused.json()["status"] == "paused"
    assert (await store.get_run(run_id)).status is RunStatus.PAUSED
    assert paused.json()["idle_reasons"][0].startswith("paused by a user from the dashboard at ")

    again = await client.post(f"/api/runs/{run_id}/pause")
    assert again.status_code == 409
    assert again.json() == {"error": f"run {run_id} is paused; it cannot become paused"}

    assert (await client.post(f"/api/runs/{run_id}/resume")).json()["status"] == "running"
    assert (await client.post(f"/api/runs/{run_id}/stop")).json()["status"] == "stopped"
    # as `sitesync resume` does: a stopped run goes back to the queue, for a supervisor
    assert (await client.post(f"/api/runs/{run_id}/resume")).json()["status"] == "queued"
    assert (await client.post(f"/api/runs/{run_id}/cancel")).json()["status"] == "cancelled"
    assert (await store.get_run(run_id)).status is RunStatus.CANCELLED
    assert (await client.post(f"/api/runs/{run_id}/resume")).status_code == 409


async def test_unknown_runs_and_bad_input_get_json_errors(
    store: Store, client: httpx.AsyncClient
) -> None:
    for path in ("", "/errors", "/redirects", "/navigation", "/changes"):
        response = await client.get(f"/api/runs/999{path}")
        assert response.status_code == 404, path
        assert response.json() == {"error": "no run with id 999"}
    assert (await client.post("/api/runs/999/pause")).status_code == 404

    run = await store.create_run(RunConfig(seeds=("http://a.test/",)))
    queued_pause = await client.post(f"/api/runs/{run.id}/pause")
    assert queued_pause.status_code == 409 and "queued" in queued_pause.json()["error"]

    for bad in ("/api/runs/abc", "/api/runs/0", "/api/runs?limit=0"):
        response = await client.get(bad)
        assert response.status_code == 422, bad
        assert response.json()["error"].startswith("invalid request: ")
    unknown_action = await client.post(f"/api/runs/{run.id}/explode")
    assert unknown_action.status_code == 422 and "action" in unknown_action.json()["error"]
    missing = await client.get("/api/nothing-here")
    assert missing.status_code == 404 and missing.json() == {"error": "Not Found"}


async def test_openapi_describes_every_endpoint(client: httpx.AsyncClient) -> None:
    spec = (await client.get("/api/openapi.json")).json()
    assert spec["openapi"].startswith("3.")
    assert set(spec["paths"]) >= {
        "/api/status",
        "/api/runs",
        "/api/runs/{run_id}",
        "/api/runs/{run_id}/errors",
        "/api/runs/{run_id}/redirects",
        "/api/runs/{run_id}/navigation",
        "/api/runs/{run_id}/changes",
        "/api/runs/{run_id}/{action}",
        "/metrics",
    }
    act = spec["paths"]["/api/runs/{run_id}/{action}"]["post"]
    assert {"404", "409"} <= set(act["responses"])
    assert {"RunDetail", "StatusOverview", "ApiError"} <= set(spec["components"]["schemas"])
    actions = spec["components"]["schemas"]["Action"]["enum"]
    assert sorted(actions) == ["cancel", "pause", "resume", "stop"]


async def test_the_page_and_its_assets_are_served(client: httpx.AsyncClient) -> None:
    page = await client.get("/")
    assert page.status_code == 200 and 'src="static/dashboard.js"' in page.text
    script = await client.get("/static/dashboard.js")
    assert script.status_code == 200 and "api/status" in script.text
    assert (await client.get("/static/dashboard.css")).status_code == 200


async def test_with_a_token_everything_needs_it(tmp_path: Path) -> None:
    token = "s3cret-s3cret-s3cret"
    settings = load_settings(db=str(tmp_path / "t.db"), dashboard_token=token)
    await (await open_store(settings.db)).close()  # the dashboard reads one: it must exist
    app = create_app(settings)
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://dash.example") as http,
    ):
        for path in ("/api/status", "/metrics", "/api/openapi.json"):
            denied = await http.get(path)
            assert denied.status_code == 401, path
            assert denied.json() == {"error": "a valid dashboard token is required"}
        assert (await http.get("/")).status_code == 401
        wrong = await http.get("/api/status", headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        bearer = await http.get("/api/status", headers={"Authorization": f"Bearer {token}"})
        assert bearer.status_code == 200 and bearer.json()["active_runs"] == []

        first = await http.get(f"/?token={token}")
        assert first.status_code == 303 and first.headers["location"] == "/"
        assert "httponly" in first.headers["set-cookie"].lower()
        assert token not in first.headers["set-cookie"]
        assert (await http.get("/api/runs")).status_code == 200  # the cookie now stands in


async def test_without_a_token_only_loopback_names_and_same_origin_posts(
    store: Store, client: httpx.AsyncClient
) -> None:
    run_id = await running_run(store)
    rebound = await client.get("/api/status", headers={"Host": "evil.example"})
    assert rebound.status_code == 403
    forged = await client.post(
        f"/api/runs/{run_id}/cancel", headers={"Origin": "http://evil.example"}
    )
    assert forged.status_code == 403 and forged.json() == {"error": "cross-site request refused"}
    assert (await store.get_run(run_id)).status is RunStatus.RUNNING
    same = await client.post(f"/api/runs/{run_id}/pause", headers={"Origin": "http://127.0.0.1"})
    assert same.status_code == 200
