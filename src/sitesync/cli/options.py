"""The flags that set a setting, declared once for every command that takes them.

Each flag is one row of :data:`FLAGS`: its names and a short help. Its default is never
written here: a flag left out is None, so the environment, ``sitesync.toml`` or the
:class:`~sitesync.config.Settings` default decides, and ``--help`` shows that default as
Settings holds it. A command takes flags with :func:`settings_flags`, which adds one option
per named setting and hands the given values over as one mapping (setting name -> value).
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, get_args, get_origin, get_type_hints

import typer

from sitesync import logs
from sitesync.config import Settings, load_settings
from sitesync.run_settings import RUN


@dataclass(frozen=True, slots=True)
class Flag:
    setting: str
    decls: tuple[str, ...]  # typer's option declarations: "--robots/--no-robots"
    kind: type  # what the flag takes: int, float, str, bool (a switch) or list (repeatable)
    help: str
    unset: str = ""  # what the default means when Settings' default is None or empty
    panel: str = ""  # where --help lists it (sitesync.cli.help.PANELS); "": by its setting

    @property
    def name(self) -> str:
        """The flag as a user types it (the first declaration, on side of a switch)."""
        return self.decls[0].split("/")[0]

    @property
    def names(self) -> str:
        """Every way to type it, as errors name it: ``--total-timeout / --timeout``."""
        return " / ".join(decl.split("/")[0] for decl in self.decls)

    def option(self) -> Any:
        """The ``Annotated`` type of this flag's parameter."""
        shown = shown_default(self.setting, self.unset)
        info = typer.Option(
            *self.decls,
            help=f"{self.help}  [default: {shown}]" if shown else self.help,
            show_default=False,
            metavar="CIDR" if self.kind is list else None,
            rich_help_panel=self.panel or _panel(self.setting),
        )
        kind: Any = list[str] if self.kind is list else self.kind
        return Annotated[kind | None, info]


def shown_default(setting: str, unset: str = "") -> str:
    """A setting's default as ``--help`` shows it: the value Settings holds."""
    default = Settings.model_fields[setting].default
    if default is None or default in ("", [], ()):
        return unset
    if isinstance(default, bool):
        return "on" if default else "off"
    if isinstance(default, tuple):
        return ",".join(str(part) for part in default)
    return str(default)


#: Flags whose help reads better than their setting's first sentence, or that keep an older
#: name as an alias (after the canonical one, which is always the setting's own name).
_WRITTEN: tuple[Flag, ...] = (
    Flag("db", ("--db",), str,
         "Store: a SQLite file path, or a PostgreSQL URL (postgresql://user@host/db)"
         " or key=value connection string."),
    Flag("concurrency", ("--concurrency",), int, "Requests in flight at once."),
    Flag("per_host_concurrency", ("--per-host-concurrency",), int,
         "Requests in flight per host; 0 = no cap."),
    Flag("delay", ("--delay",), float, "Seconds between requests to one host."),
    Flag("max_retries", ("--max-retries",), int, "Attempts per URL."),
    Flag("retry_backoff", ("--retry-backoff",), float,
         "First wait before a retry, doubling after."),
    Flag("lease_seconds", ("--lease-seconds",), float,
         "Task lease; a crashed worker's tasks return after it."),
    Flag("claim_seconds", ("--claim-seconds",), float,
         "Claim on a host; a crashed worker's hosts pass on after it."),
    Flag("heartbeat_seconds", ("--heartbeat-seconds",), float,
         "Lease/claim renewal interval; 0 = derived from the two."),
    Flag("max_claims_per_worker", ("--max-claims-per-worker",), int,
         "Most hosts one worker holds.", unset="an even share of the hosts"),
    Flag("domain_stats_flush_interval_pages", ("--domain-stats-flush-interval-pages",), int,
         "Pages between per-host counter flushes; 0 = at the end."),
    Flag("worker_id_header", ("--worker-id-header/--no-worker-id-header",), bool,
         "Send X-Sitesync-Worker with every request."),
    Flag("in_flight_limit", ("--in-flight-limit",), int,
         "Tasks held at once; 0 = 4 x concurrency."),
    Flag("user_agent", ("--user-agent",), str, "User-Agent header.",
         unset="sitesync/0.1 (+CONTACT)"),
    Flag("contact", ("--contact",), str,
         "URL or e-mail where site owners reach you; shown in the User-Agent."),
    Flag("follow_offsite_seed_redirects",
         ("--follow-offsite-seed-redirects/--no-follow-offsite-seed-redirects",), bool,
         "Follow a seed's redirect to another site (otherwise: record it, do not follow)."),
    Flag("conditional_requests", ("--conditional-requests/--no-conditional-requests",), bool,
         "Revalidate pages the store fetched before (If-None-Match/If-Modified-Since)."),
    Flag("sitemap_skips_unchanged",
         ("--sitemap-skips-unchanged/--no-sitemap-skips-unchanged",), bool,
         "Skip pages a sitemap <lastmod> dates before their last fetch (no request)."),
    Flag("fetcher", ("--fetcher",), str,
         "http, browser (system Chromium; JavaScript sites), or null: a dry run"
         " (seeds, robots.txt, sitemaps; no page requested)."),
    Flag("respect_robots", ("--respect-robots/--no-respect-robots", "--robots/--no-robots"),
         bool, "Obey robots.txt."),
    Flag("sitemaps", ("--sitemaps/--no-sitemaps",), bool,
         "Admit URLs from the seeds' sitemaps."),
    Flag("adaptive_politeness", ("--adaptive-politeness/--no-adaptive-politeness",), bool,
         "Slow a host down when it struggles (429/503, timeouts, latency)."),
    Flag("total_timeout", ("--total-timeout", "--timeout"), float,
         "Total seconds per request."),
    Flag("max_body_bytes", ("--max-body-bytes",), int, "Largest body kept, in bytes."),
    Flag("processes", ("--processes",), int,
         "Worker processes on this machine; 0 = one per core."),
    Flag("plugins", ("--plugins",), str,
         "Plugins to run, comma-separated ('' = none; 'sitesync plugins' lists them).",
         unset="all found"),
    Flag("strict_plugins", ("--strict-plugins/--no-strict-plugins",), bool,
         "Refuse to crawl if a plugin fails to load."),
    Flag("allow_private_networks",
         ("--allow-private-networks/--no-allow-private-networks",), bool,
         "Let requests reach loopback, private and other non-public addresses."),
    Flag("allowed_networks", ("--allowed-networks", "--allow-network"), list,
         "Let requests reach this non-public network, e.g. 10.1.0.0/16 (repeatable).",
         unset="none"),
    Flag("workers_per_run", ("--workers-per-run",), int, "Workers started per run."),
    Flag("max_worker_processes", ("--max-worker-processes", "--max-workers"), int,
         "Worker processes at once, over all runs."),
    Flag("supervisor_heartbeat_seconds", ("--supervisor-heartbeat-seconds", "--heartbeat"),
         float, "Run heartbeat seconds."),
    Flag("watchdog_seconds", ("--watchdog-seconds", "--watchdog"), float,
         "Watchdog interval seconds."),
    Flag("stale_run_seconds", ("--stale-run-seconds", "--stale-after"), float,
         "No heartbeat for this long = crashed."),
    Flag("max_crash_retries", ("--max-crash-retries",), int,
         "Re-queues of a crashed run before failing it."),
    Flag("scan_cadence", ("--scan-cadence", "--cadence"), str,
         "Cron expression, 5 fields, in UTC."),
    Flag("dashboard_host", ("--dashboard-host", "--host"), str,
         "Address to listen on; beyond loopback needs --dashboard-token."),
    Flag("dashboard_port", ("--dashboard-port", "--port"), int,
         "Port to listen on; 0 = any free."),
    Flag("dashboard_token", ("--dashboard-token", "--token"), str,
         "Access token for the pages, API and /metrics.", unset="none: loopback only"),
)  # fmt: skip


#: How the off side of a switch is spelled: ``--robots`` / ``--no-robots``.
NEGATIVE = "no-"


#: Where a setting's first sentence ends: at ". ", but not after "e.g." or "i.e.".
_SENTENCE_END = re.compile(r"(?<!e\.g)(?<!i\.e)\. ")


def _generated(setting: str) -> Flag:
    """The flag of a setting no flag above is written for: its name, its type, and the first
    sentence of its documentation."""
    field = Settings.model_fields[setting]
    kind = _kind(field.annotation)
    name = "--" + setting.replace("_", "-")
    decls = (f"{name}/--{NEGATIVE}{name[2:]}",) if kind is bool else (name,)
    text = " ".join((field.description or setting).split()).replace("``", "")
    sentence = _SENTENCE_END.split(text)[0].split(" (flag:")[0].rstrip(".") + "."
    return Flag(setting, decls, kind, sentence, unset="none" if field.default is None else "")


def _kind(annotation: Any) -> type:
    args = [a for a in get_args(annotation) if a is not type(None)]
    if annotation in (int, float, str, bool):
        return annotation  # type: ignore[no-any-return]
    if len(args) == 1 and args[0] in (int, float, str, bool):
        return args[0]  # type: ignore[no-any-return]
    if get_origin(annotation) is list:
        return list
    return str  # tuples (comma-separated), choices (Literal) and secrets: given as text


FLAGS: dict[str, Flag] = {
    **{setting: _generated(setting) for setting in Settings.model_fields},
    **{flag.setting: flag for flag in _WRITTEN},
}

PANEL_OF = {
    **dict.fromkeys(("follow_offsite_seed_redirects", "fetcher", "respect_robots", "sitemaps",
                     "conditional_requests", "sitemap_skips_unchanged"),
                    "What to crawl"),
    **dict.fromkeys(("per_host_concurrency", "delay", "adaptive_politeness", "max_retries",
                     "retry_backoff"), "Politeness"),
    **dict.fromkeys(("total_timeout", "max_body_bytes"), "Limits"),
    **dict.fromkeys(("user_agent", "contact", "plugins", "strict_plugins"),
                    "Identity and plugins"),
    **dict.fromkeys(("allow_private_networks", "allowed_networks"), "Network"),
    **dict.fromkeys(("db", "concurrency", "processes", "workers_per_run", "max_worker_processes",
                     "supervisor_heartbeat_seconds", "watchdog_seconds", "stale_run_seconds",
                     "max_crash_retries", "scan_cadence", "dashboard_host", "dashboard_port",
                     "dashboard_token"), "Fleet"),
    **dict.fromkeys(("lease_seconds", "claim_seconds", "heartbeat_seconds",
                     "max_claims_per_worker", "domain_stats_flush_interval_pages",
                     "in_flight_limit", "worker_id_header"), "Internals"),
}  # fmt: skip

#: Which flags each command takes, by setting; the commands share them through these.

#: Run settings as groups (sitesync.run_settings) mapped to --help panels.
_PANEL_OF_GROUP = {
    "politeness": "Politeness", "what a site may ask": "Politeness", "retries": "Politeness",
    "robots.txt, sitemaps and dead hosts": "What to crawl", "fetcher": "What to crawl",
    "URLs": "What to crawl", "scans": "What to crawl", "identity": "Identity and plugins",
    "plugins": "Identity and plugins", "request profiles": "Identity and plugins",
    "timeouts, caps and redirects": "Limits",
    "what is stored": "Limits", "network policy": "Network",
}  # fmt: skip


def _panel(setting: str) -> str:
    if setting in PANEL_OF:
        return PANEL_OF[setting]
    group = RUN.get(setting)
    return _PANEL_OF_GROUP.get(group, "Internals") if group else "Internals"


#: Settings that are tables, given in sitesync.toml or the environment only.
FILE_ONLY = frozenset({"plugin_config", "request_headers", "cookies", "auth", "proxy", "sites"})
#: The run's settings a command that creates runs takes (scans' own only for scans).
RUN_FLAGS = tuple(name for name, group in RUN.items() if group != "scans" and name not in FILE_ONLY)
SCAN_FLAGS = tuple(name for name, group in RUN.items() if group == "scans")
#: The process settings of every process that crawls.
CRAWLING = ("db", "concurrency", "lease_seconds", "claim_seconds", "heartbeat_seconds",
            "status_poll_seconds", "drain_timeout", "max_claims_per_worker",
            "domain_stats_flush_interval_pages", "store_retry_seconds",
            "sqlite_busy_timeout", "in_flight_limit", "browser_executable",
            "browser_pages")  # fmt: skip
NETWORK = ("allow_private_networks", "allowed_networks")
#: Which flags each command takes, by setting. A joining process (a worker, a service)
#: takes no run setting: it crawls with the run's own (sitesync.run_settings).
CRAWL = (*CRAWLING, "processes", "strict_plugins", *RUN_FLAGS)
WORKER = (*CRAWLING, "serve_max_runs", "serve_poll_seconds")
SCAN = (*CRAWLING, "strict_plugins", *RUN_FLAGS, *SCAN_FLAGS)
SCHEDULE = ("db", "scan_cadence", "strict_plugins", *RUN_FLAGS, *SCAN_FLAGS)
SUPERVISE = ("db", "workers_per_run", "max_worker_processes", "supervisor_heartbeat_seconds",
             "watchdog_seconds", "stale_run_seconds", "max_crash_retries",
             "store_retry_seconds", "sqlite_busy_timeout")  # fmt: skip
DASHBOARD = ("db", "dashboard_host", "dashboard_port", "dashboard_token",
             "dashboard_sample_seconds", "idle_after_seconds")  # fmt: skip

DbOption = FLAGS["db"].option()


def from_flags(**flags: Any) -> Settings:
    """Settings with these flags on top (None: not given); an error names the flag."""
    given = {name: value for name, value in flags.items() if value not in (None, [])}
    names = {name: FLAGS[name].names for name in given if name in FLAGS}
    settings = load_settings(flag_names=names, **given)
    logs.configure(settings.log_level, settings.log_format)  # sitesync.toml's, too
    return settings


def settings_flags(*settings: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Give a command one option per setting named, after its own parameters; their values
    reach it as ``flags``, a mapping to pass to :func:`from_flags`."""

    def decorate(command: Callable[..., None]) -> Callable[..., None]:
        own = inspect.signature(command)
        hints = get_type_hints(command, include_extras=True)
        params = [
            param.replace(annotation=hints[param.name])
            for param in own.parameters.values()
            if param.name != "flags"
        ]
        params += [
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None,
                              annotation=FLAGS[name].option())
            for name in settings
        ]  # fmt: skip

        @functools.wraps(command)
        def run(**values: Any) -> None:
            flags = {name: values.pop(name) for name in settings}
            command(flags=flags, **values)

        run.__signature__ = own.replace(parameters=params)  # type: ignore[attr-defined]
        run.__annotations__ = {param.name: param.annotation for param in params}
        return run

    return decorate


Flags = Mapping[str, Any]
