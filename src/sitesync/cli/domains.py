"""``sitesync domains``: registered domains, grouped in scopes (their files are read by
:mod:`sitesync.cli.domain_files`), each with its scan history and own request profile."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from sitesync.cli._common import format_bytes, format_time, plain_console, styled, with_store
from sitesync.cli.domain_files import normalize_domain, read_domain_list, read_file
from sitesync.cli.help import SitesyncTyper
from sitesync.cli.options import (
    NETWORK,
    DbOption,
    Flags,
    from_flags,
    settings_flags,
)
from sitesync.cli.output import AsJson, ShownDomain, emit
from sitesync.engine.wiring import network_policy
from sitesync.errors import ConfigError
from sitesync.models import ChangeReport, Domain, DomainScan
from sitesync.models.changes import summed
from sitesync.store import Store

#: How many of a domain's scans ``domains show`` reports the changes of.
LAST_SCANS_CHANGES = 3

console = plain_console()
err_console = plain_console(stderr=True)

domains_app = SitesyncTyper(help="Registered domains, grouped in scopes.", no_args_is_help=True)


# -- sitesync domains ---------------------------------------------------------------------


@domains_app.command("import")
@settings_flags("db", *NETWORK)
def import_command(
    flags: Flags,
    file: Annotated[str, typer.Argument(help="CSV or plain list of domains; '-' = stdin.")],
    scope: Annotated[str, typer.Option("--scope", help="Scope to register them in.")],
) -> None:
    """Register domains in a scope (new ones active; known ones move to the scope and
    become active again). Bad lines are reported by number and skipped; so are IP literals
    of non-public networks that are not opened (--allow-network, --allow-private-networks).

    A CSV's optional headers, cookies, auth and proxy columns give each domain its own
    request profile, which scans of the scope send to that host (docs/operating.md).
    """
    settings = from_flags(**flags)
    found = read_domain_list(read_file(file), network_policy(settings))
    for line, problem in found.problems:
        err_console.print(styled(f"line {line}:", "yellow"), problem, soft_wrap=True)
    if not found.hosts:
        raise ConfigError(f"{file}: no valid domains to import")
    new = with_store(
        settings.db, lambda store: store.import_domains(scope, found.hosts, found.profiles)
    )
    skipped = len(found.problems)
    profiled = sum(1 for profile in (found.profiles or {}).values() if profile)
    console.print(
        f"imported {len(found.hosts)} domains into scope {scope!r}: {new} new, "
        f"{len(found.hosts) - new} already registered"
        + ("" if found.profiles is None else f", {profiled} with a request profile")
        + f"; {skipped} invalid line{'' if skipped == 1 else 's'} skipped",
        highlight=False,
        soft_wrap=True,
    )


@domains_app.command("list")
def list_command(
    scope: Annotated[str | None, typer.Option(help="Only this scope.")] = None,
    stale: Annotated[bool, typer.Option("--stale", help="Only stale domains.")] = False,
    inactive: Annotated[
        bool, typer.Option("--inactive", help="Only domains out of the active scan set.")
    ] = False,
    db: DbOption = None,
    as_json: AsJson = False,
) -> None:
    """List registered domains with their scan state."""
    settings = from_flags(db=db)
    domains = with_store(
        settings.db,
        lambda store: store.list_domains(
            scope=scope, stale=True if stale else None, active=False if inactive else None
        ),
        migrate=False,
    )
    if as_json:
        emit("domains.list", tuple(domains))
        return
    if not domains:
        console.print("no registered domains match: add some with 'sitesync domains import'")
        return
    latest = with_store(settings.db, lambda store: store.latest_domain_scans(), migrate=False)
    console.print(domains_table(domains, {scan.host: scan for scan in latest}))


@domains_app.command("show")
def show_command(
    domain: Annotated[str, typer.Argument(help="The registered domain (host[:port]).")],
    as_json: AsJson = False,
    db: DbOption = None,
) -> None:
    """One domain: its registry state and every scan of it (pages, errors, assets, status)."""
    settings = from_flags(db=db)
    host = normalize_domain(domain)

    async def work(store: Store) -> tuple[Domain | None, list[DomainScan], list[ChangeReport]]:
        found, history = await store.get_domain(host), await store.domain_history(host)
        if found is None:
            return None, history, []
        hosts = [h for h in (found.host, found.canonical_host) if h]
        return found, history, [await domain_changes(store, s.run_id, hosts)
                                for s in history[:LAST_SCANS_CHANGES]]  # fmt: skip

    found, history, changes = with_store(settings.db, work, migrate=False)
    if found is None:
        raise ConfigError(f"no domain {host} in the registry: 'sitesync domains list' shows them")
    if as_json:
        emit("domains.show", ShownDomain(found, tuple(history), tuple(changes)))
        return
    console.print(domains_table([found], {s.host: s for s in history[:1]}))
    console.print(f"request profile: {profile_summary(found)}", highlight=False, soft_wrap=True)
    if not history:
        console.print(f"no scan of {host} has ended yet")
        return
    table = Table(title=f"scans of {host}, newest first")
    for column in ("run", "scope", "scan status", "host status", "pages", "errors",
                   "assets found", "assets stored", "ended"):  # fmt: skip
        table.add_column(
            column,
            justify="left" if "status" in column or column in ("scope", "ended") else "right",
        )
    for scan in history:
        table.add_row(
            str(scan.run_id), scan.scope or "-", scan.run_status, scan.host_status or "-",
            str(scan.pages), str(scan.errors), str(scan.assets_found), str(scan.assets_stored),
            format_time(scan.finished_at),
        )  # fmt: skip
    console.print(table)
    if changes:
        console.print(changes_table(host, changes))


def changes_table(host: str, reports: list[ChangeReport]) -> Table:
    """What the last scans changed on the domain (``sitesync changes RUN`` for each)."""
    table = Table(title=f"changes of {host} in its last scans, newest first")
    for column in ("run", "since", "new", "changed", "unchanged", "gone", "not reached",
                   "downloaded", "full fetch"):  # fmt: skip
        table.add_column(column, justify="right")
    for report in reports:
        t = report.total
        table.add_row(
            str(report.run_id), str(report.since_run_id or "-"), str(t.new), str(t.changed),
            str(t.unchanged), str(t.gone), str(t.not_reached), format_bytes(t.bytes_downloaded),
            format_bytes(t.bytes_full_fetch),
        )  # fmt: skip
    return table


async def domain_changes(store: Store, run_id: int, hosts: list[str]) -> ChangeReport:
    """The run's change report of the domain's hosts (its own, its canonical one)."""
    reports = [await store.change_report(run_id, host=h) for h in hosts]
    rows = tuple(row for report in reports for row in report.hosts)
    return ChangeReport(run_id, reports[0].since_run_id, rows, summed(rows))


def domains_table(domains: list[Domain], latest: dict[str, DomainScan] | None = None) -> Table:
    latest = latest or {}
    table = Table(title=f"{len(domains)} registered domains")
    for column in ("host", "scope", "active", "stale", "streak", "canonical host", "aliases",
                   "last run", "last crawled", "last scan", "pages", "errors",
                   "assets found/stored"):  # fmt: skip
        table.add_column(
            column,
            justify="right" if column in ("streak", "last run", "pages", "errors") else "left",
        )
    for domain in domains:
        scan = latest.get(domain.host)
        table.add_row(
            domain.host,
            domain.scope or "-",
            "yes" if domain.active else styled("no", "red"),
            styled("stale", "yellow") if domain.stale else "-",
            str(domain.unreachable_streak),
            domain.canonical_host or "-",
            ", ".join(domain.aliases) or "-",
            str(domain.last_run_id) if domain.last_run_id is not None else "-",
            format_time(domain.last_crawled_at),
            "-" if scan is None else f"{scan.run_status} (run {scan.run_id})",
            "-" if scan is None else str(scan.pages),
            "-" if scan is None else str(scan.errors),
            "-" if scan is None else f"{scan.assets_found}/{scan.assets_stored}",
        )
    return table


def profile_summary(domain: Domain) -> str:
    """Which fields of the domain's own request profile are set: header names and values,
    cookie names; auth and proxy only as set, never their values."""
    profile = domain.request_profile
    if not profile:
        return "none (its scans send the crawl's own, if any)"
    parts = []
    for name in ("headers", "cookies"):
        if profile.get(name):
            shown = profile[name] if name == "headers" else dict.fromkeys(profile[name], "***")
            parts.append(f"{name} " + ", ".join(f"{k}={v}" for k, v in shown.items()))
    for name in ("auth", "proxy"):
        if profile.get(name):
            parts.append(f"{name} ***")
    return "; ".join(parts)
