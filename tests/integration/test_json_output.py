"""Every ``--json`` document (docs/json.md) against its published JSON Schema, from a real
store of each backend after a real crawl, scan schedule and registry."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from aiohttp import web

from sitesync.cli.output import SHAPES, VERSION
from sitesync.testing import LoopbackSite, SiteSpec
from tests.acceptance._cli import run_in_process

SCHEMAS = Path(__file__).parents[2] / "docs" / "json"


def documented(command: str) -> dict[str, Any]:
    schema: dict[str, Any] = json.loads((SCHEMAS / f"{command}.schema.json").read_text())
    return schema


@pytest.fixture
def crawled(site_factory: Callable[[SiteSpec], LoopbackSite], db_url: str, tmp_path: Path) -> str:
    """A store with one crawl (a failed URL among its pages), a scope and its schedule."""
    site = site_factory(SiteSpec(hosts=1, pages_per_host=6, links_per_page=4))

    async def broken(request: web.Request) -> web.Response:
        return web.Response(status=500)

    site.set_handler("/broken.html", broken)
    fast = {"delay": "0", "per_host_concurrency": "0", "max_retries": "1", "sitemaps": "false"}
    done = run_in_process("crawl", *site.root_urls, f"{site.root_urls[0]}broken.html",
                          "--no-progress", "--db", db_url, settings=fast)  # fmt: skip
    assert done.returncode == 0, done.stderr
    listing = tmp_path / "fr.txt"
    listing.write_text("a.example\nb.example\n")
    assert run_in_process("domains", "import", str(listing), "--scope", "fr",
                          "--db", db_url).returncode == 0  # fmt: skip
    assert run_in_process("schedule", "fr", "--db", db_url, "--delay", "2").returncode == 0
    return db_url


def commands(root: str) -> dict[str, list[str]]:
    return {
        "runs": ["runs"],
        "show": ["show", "1"],
        "status": ["status"],
        "settings": ["settings", "1"],
        "domains.list": ["domains", "list"],
        "domains.show": ["domains", "show", "a.example"],
        "schedule.list": ["schedule", "--list"],
        "plugins": ["plugins"],
        "history": ["history", root],
        "diff": ["diff", "1", "1"],
        "changes": ["changes", "1"],
        "why": ["why", root],
    }


def test_every_command_that_reads_prints_its_documented_document(crawled: str) -> None:
    run = run_in_process("runs", "--json", "--db", crawled)
    root = json.loads(run.stdout)["data"][0]["seeds"][0]
    asked = commands(root)
    assert set(asked) == set(SHAPES)  # every command with a shape is checked here
    for command, args in asked.items():
        store = [] if command == "plugins" else ["--db", crawled]  # plugins reads no store
        done = run_in_process(*args, "--json", *store)
        assert done.returncode == 0, (command, done.stderr)
        document = json.loads(done.stdout)  # stdout holds the document and nothing else
        assert document["schema"] == f"sitesync.{command}" and document["version"] == VERSION
        jsonschema.validate(document, documented(command))
        assert document["data"], command  # something real was checked, not an empty list
    shown = json.loads(run_in_process("show", "1", "--json", "--db", crawled).stdout)["data"]
    assert shown["settings"]["delay"] == 0.0 and shown["failed"]  # the crawl, as it was
    [schedule] = json.loads(run_in_process("schedule", "--list", "--json", "--db", crawled).stdout)[
        "data"
    ]
    assert schedule["settings"]["delay"] == 2.0  # what its scans will be created with


def test_a_published_schema_refuses_a_document_of_another_shape() -> None:
    """The schemas are strict enough to catch a changed shape (a field retyped)."""
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(
            {"schema": "sitesync.runs", "version": VERSION, "data": [{"id": "one"}]},
            documented("runs"),
        )
