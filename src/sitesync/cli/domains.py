"""``sitesync domains``, ``sitesync scan`` and ``sitesync schedule``: registered domains,
grouped in scopes, and their recurring scans.

Domain files are a CSV with a ``domain``, ``host`` or ``url`` column, or a plain list with
one entry per line (blank lines and ``#`` comments skipped). Entries are normalized as URLs
are (scheme and path dropped, lowercase, IDN to punycode) and stored as bare
``host[:port]``; a scan crawls each from ``<scan_scheme>://HOST/``.
"""

from __future__ import annotations

import csv
import io
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from sitesync.cli._common import format_bytes, format_time, plain_console, styled, with_store
from sitesync.cli.help import SitesyncTyper
from sitesync.cli.options import (
    NETWORK,
    DbOption,
    Flags,
    from_flags,
    settings_flags,
)
from sitesync.cli.output import AsJson, ShownDomain, emit
from sitesync.errors import ConfigError, InvalidURL
from sitesync.fetch.netpolicy import NetworkPolicy, parse_address
from sitesync.models import ChangeReport, Domain, DomainScan
from sitesync.models.changes import summed
from sitesync.networks import numeric_ipv4_host
from sitesync.runs.wiring import network_policy
from sitesync.store import Store
from sitesync.urls import normalize_url, url_host

#: How many of a domain's scans ``domains show`` reports the changes of.
LAST_SCANS_CHANGES = 3

_COLUMNS = ("domain", "host", "url")  # looked for in this order, case-insensitively

console = plain_console()
err_console = plain_console(stderr=True)

domains_app = SitesyncTyper(help="Registered domains, grouped in scopes.", no_args_is_help=True)


# -- reading domain files ---------------------------------------------------------------


@dataclass
class DomainList:
    """What a domain file holds: hosts in file order (each once), and the bad lines."""

    hosts: list[str] = field(default_factory=list)
    problems: list[tuple[int, str]] = field(default_factory=list)  # (line number, why)
    network: NetworkPolicy = field(default_factory=NetworkPolicy)

    def add(self, line: int, raw: str) -> None:
        try:
            host = normalize_domain(raw)
        except InvalidURL as exc:
            self.problems.append((line, f"{raw.strip()!r}: {exc}"))
            return
        refused = _refused_literal(host, self.network)
        if refused is not None:
            self.problems.append((line, f"{raw.strip()!r}: {refused}"))
            return
        if host not in self.hosts:
            self.hosts.append(host)


def normalize_domain(raw: str) -> str:
    """The registry's form of a domain entry: ``host[:port]``, lowercase, IDN as punycode.

    An entry may be a bare host or a URL; a non-default port is kept (for https when the
    entry names no scheme). Raises ``InvalidURL`` saying what is wrong.
    """
    text = raw.strip()
    if not text:
        raise InvalidURL("empty")
    url = text if "://" in text else f"https://{text}"
    try:
        host = url_host(normalize_url(url))
    except InvalidURL as exc:
        # The message quotes the URL built here; the caller quotes the entry itself.
        raise InvalidURL(str(exc).removesuffix(f": {url!r}")) from None
    return _canonical_numeric_host(host)


def _canonical_numeric_host(host: str) -> str:
    """``host[:port]`` with a host written as numbers (``0x7f.1``, ``2852039166``) in the
    dotted form of the address it means, as browsers and the resolver read it: the
    private-address check sees the real address, and the registry one name for it."""
    if host.endswith("]"):
        return host  # an IPv6 literal
    name, colon, port = host.rpartition(":") if ":" in host else (host, "", "")
    try:
        address = numeric_ipv4_host(name)
    except ValueError as exc:
        raise InvalidURL(str(exc)) from None
    return host if address is None else f"{address}{colon}{port}"


def _refused_literal(host: str, network: NetworkPolicy) -> str | None:
    """Why an IP-literal entry may not be registered (a non-public address not opened)."""
    name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    ip = parse_address(name)
    refused = network.refusal(ip) if ip is not None else None
    return None if refused is None else str(refused.strerror)


def read_domain_list(text: str, network: NetworkPolicy | None = None) -> DomainList:
    """Parse a domain file: CSV when its first line has a comma or is just a column name
    (``domain``, ``host``, ``url``), else one entry per line. IP literals ``network`` refuses
    (by default every non-public address) are bad lines."""
    network = network or NetworkPolicy()
    lines = text.splitlines()
    first = next((line.strip() for line in lines if _is_entry(line)), "")
    if "," in first or first.lower() in _COLUMNS:
        return _read_csv(text, network)
    found = DomainList(network=network)
    for number, line in enumerate(lines, start=1):
        if _is_entry(line):
            found.add(number, line)
    return found


def _is_entry(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


def _read_csv(text: str, network: NetworkPolicy) -> DomainList:
    reader = csv.reader(io.StringIO(text))
    column: int | None = None  # of the domain in each row, once the header is read
    found = DomainList(network=network)
    for row in reader:
        if not any(cell.strip() for cell in row) or row[0].strip().startswith("#"):
            continue
        if column is None:
            column = _domain_column(row, reader.line_num)
            continue
        found.add(reader.line_num, row[column] if column < len(row) else "")
    return found


def _domain_column(header: list[str], line: int) -> int:
    names = [cell.strip().lower() for cell in header]
    for name in _COLUMNS:
        if name in names:
            return names.index(name)
    raise ConfigError(
        f"domain file: line {line}: no 'domain', 'host' or 'url' column in the header {header!r}"
    )


def _read_file(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        # utf-8-sig: spreadsheets often start a CSV with a byte-order mark.
        return Path(path).read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise ConfigError(f"cannot read domain file {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"domain file {path} is not UTF-8 text: {exc.reason}") from exc


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
    of non-public networks that are not opened (--allow-network, --allow-private-networks)."""
    settings = from_flags(**flags)
    found = read_domain_list(_read_file(file), network_policy(settings))
    for line, problem in found.problems:
        err_console.print(styled(f"line {line}:", "yellow"), problem, soft_wrap=True)
    if not found.hosts:
        raise ConfigError(f"{file}: no valid domains to import")
    new = with_store(settings.db, lambda store: store.import_domains(scope, found.hosts))
    skipped = len(found.problems)
    console.print(
        f"imported {len(found.hosts)} domains into scope {scope!r}: {new} new, "
        f"{len(found.hosts) - new} already registered; "
        f"{skipped} invalid line{'' if skipped == 1 else 's'} skipped",
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
