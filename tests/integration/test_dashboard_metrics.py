"""``/metrics``: scraped like Prometheus would, checked against the store it reads."""

from __future__ import annotations

from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from sitesync.config import load_settings
from sitesync.models import RunStatus
from sitesync.store.base import Store
from sitesync.web import create_app
from tests.contract.test_frontier_store import running_run, task
from tests.integration.test_dashboard_api import crawl_a_little


def samples_of(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


async def test_metrics_match_the_store(store: Store, tmp_path: Path) -> None:
    run_id = await crawl_a_little(store)
    other = await running_run(store)
    await store.add_tasks(other, [task(n, host="c.test") for n in range(3)])
    await store.transition_run(other, RunStatus.PAUSED)
    finished = await running_run(store)
    await store.transition_run(finished, RunStatus.CANCELLED)

    app = create_app(load_settings(db=str(tmp_path / "unused.db")), store=store)
    await app.state.dashboard.sampler.sample_once()
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        response = await http.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    got = samples_of(response.text)

    run, paused = await store.get_run(run_id), await store.get_run(other)
    r, p = str(run_id), str(other)

    def value(name: str, **labels: str) -> float:
        return got[(name, tuple(sorted(labels.items())))]

    for outcome, status_class in (
        ("success", "2xx"),
        ("http_error", "4xx"),
        ("unreachable", "none"),
    ):
        assert (
            value("sitesync_fetches_total", run_id=r, outcome=outcome, status_class=status_class)
            == 1
        )
    assert value("sitesync_pages_fetched_total", run_id=r) == run.counters.pages_fetched == 2
    assert value("sitesync_pending_tasks", run_id=r) == run.counters.pending
    assert value("sitesync_pending_tasks", run_id=p) == paused.counters.pending == 3
    assert value("sitesync_in_flight_tasks", run_id=r) == run.counters.assigned == 1
    assert value("sitesync_claims_held", run_id=r) == 2
    assert value("sitesync_live_workers", run_id=r) == 1
    assert value("sitesync_run_status", run_id=p, status="paused") == 1
    assert value("sitesync_pages_per_second", run_id=r) == 0  # one sample: no rate yet
    # terminal runs are not reported
    assert not [key for key in got if ("run_id", str(finished)) in key[1]]
    # the store calls the server made are timed, per method
    assert value("sitesync_store_call_seconds_count", call="list_active_runs") >= 2
    assert value("sitesync_store_call_seconds_count", call="count_outcomes") == 2
