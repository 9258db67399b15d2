"""Reading domain files for ``sitesync domains import``: which hosts, and each one's own
request profile.

A domain file is a CSV with a ``domain``, ``host`` or ``url`` column, or a plain list with
one entry per line (blank lines and ``#`` comments skipped). Entries are normalized as URLs
are (scheme and path dropped, lowercase, IDN to punycode) and stored as bare
``host[:port]``; a scan crawls each from ``<scan_scheme>://HOST/``.

A CSV may also give each domain its own request profile, in the columns ``headers``
(a JSON object, or ``Name: value; Name: value``), ``cookies`` (a JSON object, or
``name=value; name=value``), ``auth`` (``basic USER:PASSWORD`` or ``bearer TOKEN``) and
``proxy``: the same fields as a ``[sites."HOST"]`` table of sitesync.toml, checked by the
same rules. A bad cell makes its line a bad line, reported by number and column, never
repeating what the cell holds (it may be a credential).
"""

from __future__ import annotations

import csv
import io
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sitesync.errors import ConfigError, InvalidURL
from sitesync.fetch.netpolicy import NetworkPolicy, parse_address
from sitesync.networks import numeric_ipv4_host
from sitesync.profiles import profile_from
from sitesync.urls import normalize_url, url_host

_COLUMNS = ("domain", "host", "url")  # looked for in this order, case-insensitively
PROFILE_COLUMNS = ("headers", "cookies", "auth", "proxy")

#: A domain's own request profile, as a ``[sites."HOST"]`` table; None for none.
Profile = dict[str, Any] | None


@dataclass
class DomainList:
    """What a domain file holds: hosts in file order (each once), and the bad lines.

    ``profiles`` is None when the file has no profile columns (importing it leaves every
    domain's profile as it was); else each host's profile from its line (None: none).
    """

    hosts: list[str] = field(default_factory=list)
    problems: list[tuple[int, str]] = field(default_factory=list)  # (line number, why)
    network: NetworkPolicy = field(default_factory=NetworkPolicy)
    profiles: dict[str, Profile] | None = None
    _lines: dict[str, int] = field(default_factory=dict)  # host -> the line that gave it

    def add(self, line: int, raw: str, profile: Profile = None) -> None:
        try:
            host = normalize_domain(raw)
        except InvalidURL as exc:
            self.problems.append((line, f"{raw.strip()!r}: {exc}"))
            return
        refused = _refused_literal(host, self.network)
        if refused is not None:
            self.problems.append((line, f"{raw.strip()!r}: {refused}"))
            return
        if host in self._lines:
            if self.profiles is not None and self.profiles[host] != profile:
                first = self._lines[host]
                self.problems.append((line, f"{host}: on line {first} with another profile"))
            return
        self._lines[host] = line
        self.hosts.append(host)
        if self.profiles is not None:
            self.profiles[host] = profile


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
    profile_columns: dict[str, int] = {}  # profile field -> its column
    found = DomainList(network=network)
    ended = 0  # the line the previous record ended on
    for row in reader:
        # A record is numbered by its first line (a quoted cell may span several).
        line, ended = ended + 1, reader.line_num
        if not any(cell.strip() for cell in row) or row[0].strip().startswith("#"):
            continue
        if column is None:
            column = _domain_column(row, line)
            names = [cell.strip().lower() for cell in row]
            profile_columns = {name: names.index(name) for name in PROFILE_COLUMNS if name in names}
            found.profiles = {} if profile_columns else None
            continue
        raw = row[column] if column < len(row) else ""
        try:
            profile = _profile_of(row, profile_columns)
        except ConfigError as exc:
            found.problems.append((line, f"{raw.strip()!r}: {exc}"))
            continue
        found.add(line, raw, profile)
    return found


def _domain_column(header: list[str], line: int) -> int:
    names = [cell.strip().lower() for cell in header]
    for name in _COLUMNS:
        if name in names:
            return names.index(name)
    raise ConfigError(
        f"domain file: line {line}: no 'domain', 'host' or 'url' column in the header {header!r}"
    )


def _profile_of(row: list[str], columns: dict[str, int]) -> Profile:
    """The profile a row's cells give (None when they are all empty), checked as a
    ``[sites."HOST"]`` table is. A ``ConfigError`` names the column, never the cell."""
    cells = {name: row[index].strip() for name, index in columns.items() if index < len(row)}
    table: dict[str, Any] = {}
    for name in ("headers", "cookies"):
        if cells.get(name):
            table[name] = _pairs(name, cells[name], ":" if name == "headers" else "=")
    for name in ("auth", "proxy"):
        if cells.get(name):
            table[name] = cells[name]
    if not table:
        return None
    try:
        profile_from(table).request_headers()  # as the `sites` setting is checked
    except ConfigError as exc:
        raise ConfigError(str(exc).removeprefix("sites: ")) from None
    return table


def _pairs(column: str, cell: str, separator: str) -> dict[str, str]:
    """A ``headers`` or ``cookies`` cell: a JSON object of names to text, or
    ``name<separator>value`` pairs separated by ``;``."""
    form = "Name: value" if separator == ":" else "name=value"
    example = f"a JSON object or '{form}; ...'"
    if cell.startswith("{"):
        try:
            value = json.loads(cell)
        except ValueError:
            raise ConfigError(f"{column}: not valid JSON (expected {example})") from None
        if not isinstance(value, dict) or not all(
            isinstance(v, str | int | float) and not isinstance(v, bool) for v in value.values()
        ):
            raise ConfigError(f"{column}: expected {example}, with text values")
        pairs = {str(name).strip(): str(text) for name, text in value.items()}
    else:
        pairs = {}
        for part in cell.split(";"):
            if not part.strip():
                continue
            name, found, text = part.partition(separator)
            if not found:
                raise ConfigError(f"{column}: expected {example}")
            pairs[name.strip()] = text.strip()
    for name, text in pairs.items():
        # A line break would end the header and start another: no request carries one.
        if not name or any(c.isspace() for c in name) or any(_is_control(c) for c in text):
            raise ConfigError(
                f"{column}: a name is empty or has spaces, or a value a control character"
            )
    return pairs


def _is_control(char: str) -> bool:
    return (ord(char) < 32 and char != "\t") or char == "\x7f"


def read_file(path: str) -> str:
    """A domain file's text (``-``: standard input)."""
    if path == "-":
        return sys.stdin.read()
    try:
        # utf-8-sig: spreadsheets often start a CSV with a byte-order mark.
        return Path(path).read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise ConfigError(f"cannot read domain file {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"domain file {path} is not UTF-8 text: {exc.reason}") from exc
