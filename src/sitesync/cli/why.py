"""``sitesync why URL``: a URL's whole story in one run, on one screen."""

from __future__ import annotations

import time
from typing import Annotated, Any

import typer

from sitesync.cli._common import (
    format_bytes,
    format_duration,
    plain_console,
    with_store,
)
from sitesync.cli.options import DbOption, from_flags
from sitesync.cli.output import AsJson, emit
from sitesync.readmodel.why import explain_url

console = plain_console()


def why_command(
    url: Annotated[str, typer.Argument(help="The URL, as found or as you would type it.")],
    run: Annotated[
        int | None, typer.Option("--run", help="The run. [the newest run that has the URL]")
    ] = None,
    as_json: AsJson = False,
    db: DbOption = None,
) -> None:
    """Why a URL was (not) crawled, and what happened to it.

    The URL normalized; the scope verdict and its rule; robots.txt's verdict, group and
    rule, and when it was fetched; where and at what depth the URL was found; every
    attempt; the final outcome; the records and versions its page produced. For a URL
    never admitted: why (out of scope, excluded, too deep, over max_pages, never linked).
    """
    settings = from_flags(db=db)
    story = with_store(
        settings.db,
        lambda store: explain_url(
            store,
            url,
            run_id=run,
            user_agent=settings.user_agent,
            robots_recheck_seconds=settings.robots_recheck_seconds,
        ),
        migrate=False,
    )
    if as_json:
        emit("why", story)
        return
    for line in render(story):
        console.print(line, soft_wrap=True)


def render(story: dict[str, Any]) -> list[str]:
    """The story as lines of plain text (printed literally: the web wrote much of it)."""
    lines = [
        f"{story['normalized']}  (given: {story['url']})",
        f"run {story['run_id']} ({story['run_status']})",
        f"verdict  {story['verdict']}",
    ]
    scope = story["scope"]
    lines.append(f"scope    {'in' if scope['in_scope'] else 'OUT'}: {scope['rule']!s}")
    lines.append(f"robots   {_robots(story['robots'])}")
    found = story["found"]
    if story["admitted"]:
        where = f" from {found['linked_from']!s}" if found.get("linked_from") else ""
        lines.append(f"found    {found['how']}{where}, depth {found['depth']}")
    elif found["linked_from"]:
        pages = ", ".join(str(p) for p in found["linked_from"])
        lines.append(f"found    linked from {pages} (depth {found['depth']})")
    else:
        lines.append("found    no page of the run links to it")
    for attempt in story["attempts"]:
        lines.append(_attempt(attempt))
    for record in story["records"]:
        versions = ", ".join(f"v{v['version']} (run {v['run_id']})" for v in record["versions"])
        lines.append(f"record   {record['key']!s}: saw v{record['version_seen']}; {versions}")
    return lines


def _robots(robots: dict[str, Any]) -> str:
    parts = [robots["verdict"]]
    if robots.get("group"):
        parts.append(f"by {robots['group']} / {robots.get('rule') or 'no rule matches'}")
    if robots.get("detail"):
        parts.append(robots["detail"])
    if robots.get("fetched_at"):
        parts.append(f"{robots['robots_url']} fetched {_when(robots['fetched_at'])}")
    return str("; ".join(parts))


def _attempt(a: dict[str, Any]) -> str:
    status = f"HTTP {a['http_status']}" if a["http_status"] else "no response"
    error = f"  {a['error']}" if a["error"] else ""
    hops = f", {a['redirect_hops']} redirects" if a["redirect_hops"] else ""
    return str(
        f"attempt {a['attempt']}  {_when(a['started_at'] or a['ended_at'])}"
        f"  {format_duration(a['duration'])}  {a['worker_id'] or '-'}  {a['outcome']}"
        f"  {status}  {format_bytes(a['bytes'])}{hops}{error}"
    )


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))
