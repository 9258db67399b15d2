"""Settings: one class, read from ``sitesync.toml`` (or ``SITESYNC_CONFIG``), ``SITESYNC_*``
environment variables and command-line flags (highest priority), validated at start-up."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypedDict

from pydantic import (
    Field,
    PrivateAttr,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from sitesync.cadence import check_cadence
from sitesync.errors import ConfigError
from sitesync.networks import parse_networks
from sitesync.redact import redact, remember_secret, remember_secrets
from sitesync.urls import DEFAULT_SESSION_PARAMS
from sitesync.useragent import default_user_agent


class StoreOptions(TypedDict):
    """``open_store`` keywords that settings decide."""

    retry_seconds: float
    sqlite_busy_timeout: float


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="SITESYNC_", extra="forbid", use_attribute_docstrings=True
    )
    _explicit: dict[str, str] = PrivateAttr(default_factory=dict)

    db: str = "sitesync.db"
    """Where the store lives: a SQLite file path (the default, ``./sitesync.db``), or a
    PostgreSQL URL (``postgresql://user@host/db``) or libpq key/value connection string
    (``host=h dbname=d``) that many machines share."""

    log_level: Literal["debug", "info", "warning", "error"] = "warning"
    """What the log (standard error) shows: ``-v`` on any command is ``info``, ``-vv``
    ``debug``, ``-q`` ``error``. Every logger, libraries' and the dashboard's web server's
    included, goes through the same redaction."""

    log_format: Literal["text", "json"] = "text"
    """``json`` for a fleet's log shipper: one object per line, with time, level, logger,
    message, and the run, worker, host and URL a line is about."""

    concurrency: int = Field(16, ge=1, le=10_000)
    """Requests in flight at once, over all hosts."""

    per_host_concurrency: int = Field(1, ge=0)
    """Requests in flight at once on one host; 0 lifts the cap (only for sites you own)."""

    delay: float = Field(1.0, ge=0)
    """Seconds between two requests to one host, counted from the start of one and from
    its end to the start of the next (so a slow answer still gets its quiet time). With
    adaptive politeness this is the fastest a host is ever asked (it recovers towards it,
    never beyond)."""

    adaptive_politeness: bool = True
    """Slow a host down on its own signals (429/503 without Retry-After, timeouts, latency
    well above its recent normal) and recover slowly towards ``delay`` and
    ``per_host_concurrency``; the learned delay is shared by the fleet through the store.
    Off: the fixed pace (flag: ``--no-adaptive-politeness``)."""

    adaptive_max_delay: float = Field(30.0, gt=0)
    """The slowest adaptive politeness ever makes a host, in seconds between requests
    (a robots.txt Crawl-delay or Retry-After above it still wins)."""

    adaptive_recovery_seconds: float = Field(20.0, gt=0)
    """How slowly a host recovers: the delay added by a back-off halves every this many
    seconds without trouble, and one request of per-host concurrency comes back."""

    adaptive_latency_factor: float = Field(3.0, gt=1)
    """A host whose latency rises to this many times its recent normal (and by 0.1 s at
    least) is slowed down before it starts failing."""

    max_retries: int = Field(3, ge=1, le=100)
    """Attempts per URL before it is marked failed."""

    retry_backoff: float = Field(1.0, ge=0)
    """First retry waits about this long; each later one twice as long (with jitter)."""

    retry_backoff_max: float = Field(60.0, ge=0)
    """Longest wait between two attempts of one URL."""

    lease_seconds: float = Field(60.0, gt=0)
    """How long a worker holds a task without renewing. A crashed worker's tasks come back
    after this long, but only its hosts' next claim holder fetches them (``claim_seconds``);
    a worker on the same machine proves a crashed one gone and takes them at once."""

    heartbeat_seconds: float = Field(0.0, ge=0)
    """How often a worker renews its leases and signs its run alive (its status is read every
    ``status_poll_seconds``); 0 = a third of the shorter of ``lease_seconds`` and
    ``claim_seconds``, at most 10 s."""

    status_poll_seconds: float = Field(0.5, gt=0, le=5)
    """How often a worker reads its run's status (one row): a pause, stop or cancel from
    the CLI, the API or the dashboard reaches every worker within this long, and a paused
    crawl notices ``resume`` as fast. No request starts after that."""

    drain_timeout: float = Field(10.0, gt=0, le=300)
    """How long a worker that leaves its run (SIGTERM, or the run paused or completed
    elsewhere) lets its fetches under way finish and be committed, in seconds; what is still
    under way then goes back to pending. Also the longest it waits for the store to take its
    last reports."""

    claim_seconds: float = Field(120.0, gt=0)
    """How long a worker's claim on a host lasts unless renewed. Only the holder fetches
    from a host; a crashed worker's hosts pass to others after this long (at once when a
    worker on the crashed one's machine proves its process gone)."""

    max_claims_per_worker: int | None = Field(None, ge=1)
    """Most hosts one worker holds at once (default: an even share of the hosts with work)."""

    domain_stats_flush_interval_pages: int = Field(100, ge=0)
    """Pages between flushes of the per-host counters; 0 = only at the end of a crawl."""

    worker_id_header: bool = False
    """Send ``X-Sitesync-Worker: <worker id>`` with every request (for tests and debugging
    your own servers; leave off for public sites)."""

    supervisor_heartbeat_seconds: float = Field(10.0, gt=0)
    """How often ``supervise`` heartbeats the runs whose workers it runs."""

    watchdog_seconds: float = Field(60.0, gt=0)
    """How often ``supervise`` looks for runs whose heartbeat stopped."""

    stale_run_seconds: float = Field(120.0, gt=0)
    """A running run with no heartbeat for this long crashed: it is re-queued, or failed
    past ``max_crash_retries``."""

    max_crash_retries: int = Field(3, ge=0)
    """Times a crashed run is re-queued before it is failed."""

    workers_per_run: int = Field(1, ge=1)
    """Worker processes ``supervise`` starts for each run."""

    max_worker_processes: int = Field(4, ge=1)
    """Worker processes one ``supervise`` runs at once, over all runs."""

    processes: int = Field(0, ge=0)
    """Worker processes of one ``sitesync crawl`` (or ``scan``) on this machine, its own
    included: the others are ``sitesync worker`` helpers with the same settings (each with
    ``concurrency`` requests in flight). 0 = one per CPU core."""

    serve_max_runs: int = Field(4, ge=1)
    """Runs one ``sitesync worker --serve`` crawls at once (each with ``concurrency``
    requests in flight); further active runs wait for a free slot."""

    serve_poll_seconds: float = Field(5.0, gt=0)
    """How often ``sitesync worker --serve`` looks for new runs, and the first wait after a
    store outage (doubling up to a minute)."""

    store_retry_seconds: float = Field(300.0, gt=0)
    """How long a worker waits out a store that is unreachable (lost PostgreSQL connection,
    server restart, failover) or locked (SQLite) before it gives up and exits with code 75,
    leaving its run ``running`` for the watchdog."""

    sqlite_busy_timeout: float = Field(30.0, gt=0)
    """Longest wait, in seconds, for a SQLite write lock in one attempt; a store call still
    locked out after it is retried within ``store_retry_seconds``."""

    in_flight_limit: int = Field(0, ge=0)
    """Tasks a worker holds at once (leased, fetching or awaiting commit); 0 = 4 x concurrency.
    A reported task is held until its batch commits, so fewer would leave fetch slots idle
    on a fast site; more is what a kill -9 may fetch twice."""

    fetcher: Literal["http", "browser", "null"] = "http"
    """How pages are fetched: ``http`` (aiohttp), ``browser`` (the system Chromium through
    Playwright, for JavaScript-built sites; needs the ``browser`` extra), or ``null``: a dry
    run that walks seeds, robots.txt and sitemaps for real and admits URLs, but requests no
    page (each allowed URL ends ``not_fetched``; plugins do not run)."""

    browser_executable: str = "/usr/bin/chromium"
    """The Chromium the browser fetcher launches."""

    browser_pages: int = Field(4, ge=1)
    """Pages the browser fetcher renders at once."""

    respect_robots: bool = True
    """Obey robots.txt (RFC 9309): disallowed URLs are never requested (flag: ``--robots``)."""

    robots_recheck_seconds: float = Field(300.0, gt=0)
    """After a 5xx or unreachable robots.txt (which disallows everything), ask again after
    this long. While ``dead_host_attempts`` is on, its re-checks ask sooner."""

    dead_host_attempts: int = Field(3, ge=0, le=100)
    """Consecutive host-level failures (connection refused, name not resolved, robots.txt
    5xx or unreachable) after which a host is dead for the run: its remaining tasks end at
    once as ``unreachable`` (no connection) or ``blocked`` (robots.txt 5xx), and links to
    it found later end as they are admitted. 0 = never: each task retries up to ``max_retries``."""

    dead_host_recheck_seconds: Annotated[tuple[float, ...], NoDecode] = (5.0, 15.0, 30.0)
    """Waits before each re-check of a failing host (the last one repeats), e.g.
    ``5,15,30``. With 3 attempts a dead host ends about 20 s after its first failure."""

    sitemaps: bool = True
    """Admit the URLs that the seeds' hosts list in their sitemaps. Sitemaps (robots.txt
    ``Sitemap:`` lines, ``/sitemap.xml``, index children) are fetched only when in scope and
    allowed by robots.txt, and not at all while robots.txt answers 5xx or not at all."""

    conditional_requests: bool = True
    """Revalidate what the store fetched before (any earlier run in the same store): a
    page's request carries the validators of its last successful fetch (``If-None-Match``,
    ``If-Modified-Since``), and a ``304`` ends ``not_modified``: no body, its records seen
    again, its links admitted from the store. Off: every page is fetched in full, and no
    last fetch is read or kept. The browser fetcher always fetches in full."""

    sitemap_skips_unchanged: bool = False
    """Skip a page, without any request, when a sitemap of this scan dates it (``<lastmod>``)
    before the store last fetched or confirmed it: it ends ``unchanged_per_sitemap``, its
    records seen again and its links admitted from the store, as after a 304. Off by default:
    a 304 already costs no body, and a site whose ``<lastmod>`` dates are stale (not updated
    when a page changes) would have its changes missed; turn it on for sites whose sitemaps
    you trust. Either way, pages a sitemap dates after their last fetch (or new ones) are
    fetched first."""

    follow_offsite_seed_redirects: bool = False
    """Follow a seed's redirect to another site (not merely ``www.`` or a subdomain of the
    seed's host). Off: the redirect is recorded (canonical host) but not followed
    (flag: ``--follow-offsite-seed-redirects``)."""

    session_params: Annotated[tuple[str, ...], NoDecode] = DEFAULT_SESSION_PARAMS
    """Query and path parameters (``;jsessionid=``) that carry session ids: dropped from every
    URL so a site minting a fresh one per link costs no more than its distinct pages
    (comma-separated in the environment; empty: keep them all)."""

    max_crawl_delay: float = Field(60.0, ge=0)
    """Largest robots.txt Crawl-delay honoured, in seconds; longer ones are capped."""

    max_retry_after: float = Field(3600.0, ge=0)
    """Largest Retry-After honoured, in seconds; longer ones are capped."""

    contact: str = ""
    """How site owners reach whoever runs this crawler (a URL or an e-mail address); shown in
    the default User-Agent as ``sitesync/0.1 (+CONTACT)``. Please set it."""

    user_agent: str = ""
    """The User-Agent header. Empty: ``sitesync/0.1 (+CONTACT)`` from ``contact`` (or
    ``sitesync/0.1 (contact not configured)``). Its first word is the robots.txt token."""

    request_headers: dict[str, str] = {}
    """Headers added to every request to the crawl's own sites (its seeds' hosts and their
    subdomains): a ``[request_headers]`` table in sitesync.toml, or SITESYNC_REQUEST_HEADERS
    as JSON. A site's own (``sites``) are added on top for that host."""

    cookies: dict[str, str] = {}
    """Cookies sent with every request to the crawl's own sites (a ``[cookies]`` table, or
    JSON); never to another host, a redirect's included."""

    auth: SecretStr | None = None
    """Credentials for the crawl's own sites: ``basic USER:PASSWORD`` or ``bearer TOKEN``.
    Never sent to another host (a redirect to one drops them); never shown or logged."""

    proxy: SecretStr | None = None
    """An HTTP(S) proxy for every request (``http://[user:password@]host:port``). The
    network policy still applies to each request's target, checked before it is sent."""

    sites: dict[str, dict[str, Any]] = {}
    """Per-site request profiles, by host: ``[sites."shop.example"]`` tables with
    ``headers``, ``cookies``, ``auth`` and ``proxy``, over the crawl's own for that host."""

    connect_timeout: float = Field(10.0, gt=0)
    """Seconds to establish a connection."""

    read_timeout: float = Field(20.0, gt=0)
    """Longest silence, in seconds, between two reads of a response."""

    total_timeout: float = Field(60.0, gt=0)
    """Seconds for a whole request, body included (flag: ``--timeout``)."""

    max_body_bytes: int = Field(10 * 1024 * 1024, gt=0)
    """Largest body kept, counted after decompression; larger ones end as ``too_large``.
    robots.txt is read up to its first 512 KiB (RFC 9309) whatever this is."""

    max_redirects: int = Field(10, ge=0)
    """Redirects followed per request before it ends as ``invalid``."""

    allow_private_networks: bool = False
    """Let requests connect to every non-public address: loopback, private (RFC 1918, RFC 4193),
    link-local, shared, reserved (flag: ``--allow-private-networks``). Off: such requests end as
    ``forbidden_address``. Only for intranet crawls; prefer ``allowed_networks``."""

    allowed_networks: Annotated[list[str], NoDecode] = []
    """Non-public networks requests may connect to, as CIDRs (flag: ``--allow-network CIDR``,
    repeatable; comma-separated in the environment), e.g. ``10.1.0.0/16``. Public addresses
    need no opening."""

    max_links_per_page: int = Field(5000, ge=1)
    """Links admitted from one page (its own and its plugins'); the rest are counted as
    ``truncated`` in the page's ``links`` record, not crawled."""

    max_parse_bytes: int = Field(4 * 1024 * 1024, gt=0)
    """HTML parsed per page, for its links and for the plugins (``text`` and ``page.tree``);
    links past it are only counted. Bounds memory however large ``max_body_bytes`` is."""

    parse_timeout_seconds: float = Field(10.0, gt=0)
    """Longest the processing of one page may take (decoding, HTML parse, links, the
    built-in plugins); past it the page ends ``parse_timeout`` without its links or records.
    Pages over 16 KiB are processed off the event loop, so one page never stalls the rest."""

    plugins: Annotated[tuple[str, ...] | None, NoDecode] = None
    """Plugins to run, by entry-point name (``sitesync plugins`` lists them; comma-separated
    in the environment). Unset: every plugin found; empty: none."""

    plugin_config: dict[str, dict[str, Any]] = {}
    """Each plugin's own configuration, by plugin name: a ``[plugins.NAME]`` table in
    sitesync.toml (``[plugins]`` may then say ``enabled = [...]``), or SITESYNC_PLUGIN_CONFIG
    as JSON (``{"NAME": {"key": "value"}}``). A plugin that declares a ``config_model``
    gets it checked at start-up; an error names the plugin and the key."""

    strict_plugins: bool = False
    """Refuse to crawl when a plugin cannot be loaded, instead of skipping it with a warning."""

    plugin_timeout_seconds: float = Field(30.0, gt=0)
    """Longest one plugin may take on one page; past it the plugin's output on that page is
    dropped and the page records the timeout. Third-party plugins that are not ``async`` run
    in a thread of their own, so a blocking one cannot stall the crawl."""

    max_record_bytes: int = Field(1024 * 1024, gt=0)
    """Largest record a third-party plugin may return (its data as JSON, plus key and URL);
    a larger one costs that plugin its output on that page, recorded as the page's error."""

    download_assets: bool = False
    """Download the images and documents pages refer to (each once per run) and keep them."""

    max_asset_bytes: int = Field(5 * 1024 * 1024, gt=0)
    """Largest asset downloaded; a larger one is recorded without its body."""

    max_attempts_kept: int = Field(10, ge=1)
    """Attempts kept per task in its history (start, end, worker, outcome, status, error,
    bytes, redirect hops; ``sitesync why``); older ones are dropped."""

    max_stored_body_bytes: int = Field(2 * 1024 * 1024, ge=0)
    """Largest body kept with a record version (compressed, once per content hash); a larger
    one is not kept, and the version notes its size."""

    scan_scheme: Literal["https", "http"] = "https"
    """Scheme of a scan's seeds: each registered domain (a bare ``host[:port]``) is crawled
    from ``<scan_scheme>://HOST/``, and where that redirects (to https, to ``www.``) joins
    the scan."""

    scan_cadence: str = "0 3 1 * *"
    """Cadence of ``sitesync schedule`` when ``--cadence`` is not given: a cron expression
    of 5 fields, read in UTC. The default is monthly, on the 1st at 03:00 UTC."""

    scan_max_depth: int | None = Field(None, ge=0)
    """Links deeper than this are skipped in scans of registered domains (default: no limit)."""

    dashboard_host: str = "127.0.0.1"
    """Address ``sitesync dashboard`` listens on. Any address other than loopback needs
    ``dashboard_token``."""

    dashboard_port: int = Field(8750, ge=0, le=65535)
    """Port of ``sitesync dashboard``; 0 picks a free one."""

    dashboard_token: SecretStr | None = None
    """Access token of the dashboard, its API and ``/metrics``: sent as ``Authorization: Bearer
    TOKEN``, or once as ``?token=TOKEN`` (which sets a cookie). Unset: no token, loopback only."""

    dashboard_sample_seconds: float = Field(5.0, gt=0)
    """How often the dashboard samples each active run's counters for its pages/s and
    pending chart."""

    idle_after_seconds: float = Field(60.0, gt=0)
    """A running run with work left whose counters have not moved for this long is reported
    idle, with the reasons the store shows (``sitesync status``, the dashboard)."""

    @model_validator(mode="before")
    @classmethod
    def _plugin_tables(cls, data: Any) -> Any:
        """``[plugins.NAME]`` tables in sitesync.toml make ``plugins`` a table: its tables
        are the plugins' configuration, its ``enabled`` the list of plugins to run."""
        if isinstance(data, dict) and isinstance(data.get("plugins"), dict):
            tables = dict(data["plugins"])
            data = {**data, "plugins": tables.pop("enabled", None)}
            data["plugin_config"] = {**tables, **(data.get("plugin_config") or {})}
        return data

    @field_validator("plugins", "session_params", mode="before")
    @classmethod
    def _split_names(cls, value: Any) -> Any:
        if isinstance(value, str):  # from the environment or a flag: "page,links"
            return tuple(name.strip() for name in value.split(",") if name.strip())
        return value

    @field_validator("allowed_networks", mode="before")
    @classmethod
    def _split_networks(cls, value: Any) -> Any:
        if isinstance(value, str):  # from the environment: "10.0.0.0/8,fd00::/8"
            value = [part for part in value.split(",") if part.strip()]
        if isinstance(value, list | tuple):
            value = [str(part).strip() for part in value]
            parse_networks(value)  # a ValueError names the bad entry
        return value

    @field_validator("dead_host_recheck_seconds", mode="before")
    @classmethod
    def _split_recheck(cls, value: Any) -> Any:
        if isinstance(value, str):  # from the environment or a flag: "5,15,30"
            return tuple(part.strip() for part in value.split(",") if part.strip())
        return value

    @field_validator("dead_host_recheck_seconds")
    @classmethod
    def _check_recheck(cls, value: tuple[float, ...]) -> tuple[float, ...]:
        if not value or any(wait < 0 for wait in value):
            raise ValueError("needs at least one wait, none negative (e.g. 5,15,30)")
        return value

    @field_validator("auth")
    @classmethod
    def _check_auth(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and value.get_secret_value():
            from sitesync.profiles import authorization

            try:
                authorization(value.get_secret_value())
            except ConfigError as exc:  # the message names the form, never the secret
                raise ValueError(str(exc).removeprefix("auth: ")) from None
        return value or None

    @field_validator("sites")
    @classmethod
    def _check_sites(cls, value: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        from sitesync.profiles import profile_from

        for host, table in value.items():
            try:
                profile_from(table).request_headers()
            except ConfigError as exc:
                raise ValueError(f"{host!r}: {exc}") from None
        return {host.lower(): table for host, table in value.items()}

    @field_validator("scan_cadence")
    @classmethod
    def _check_cadence(cls, value: str) -> str:
        try:
            return check_cadence(value)
        except ConfigError as exc:  # pydantic reports ValueErrors, naming the setting
            raise ValueError(str(exc)) from None

    @model_validator(mode="after")
    def _check_combinations(self) -> Settings:
        if not self.user_agent.strip():
            self.user_agent = default_user_agent(self.contact)
        heartbeat = self.heartbeat
        if self.lease_seconds < 2 * heartbeat:
            raise ValueError(
                f"lease_seconds ({self.lease_seconds:g}) must be at least twice "
                f"heartbeat_seconds ({heartbeat:g})"
            )
        if self.claim_seconds < self.total_timeout + 1 + 2 * heartbeat:
            raise ValueError(
                f"claim_seconds ({self.claim_seconds:g}) must be at least total_timeout + 1 "
                f"+ 2 x heartbeat_seconds ({self.total_timeout + 1 + 2 * heartbeat:g}): "
                "a fetch must never outlive the claim it started under"
            )
        if self.stale_run_seconds <= self.supervisor_heartbeat_seconds:
            raise ValueError(
                "stale_run_seconds must exceed supervisor_heartbeat_seconds, or every run "
                "would look crashed between two heartbeats"
            )
        if self.db == ":memory:":
            raise ValueError(
                "db ':memory:' cannot be shared by workers and is lost at exit; use a file"
            )
        if self.retry_backoff > self.retry_backoff_max:
            raise ValueError("retry_backoff must not exceed retry_backoff_max")
        if self.in_flight_limit and self.in_flight_limit < self.concurrency:
            raise ValueError("in_flight_limit must be 0 or at least concurrency")
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (
            init_settings,
            env_settings,
            TomlConfigSettingsSource(settings_cls, toml_file=_settings_file()),
        )

    @property
    def explicit(self) -> frozenset[str]:
        """The settings given as flags (by :func:`load_settings`), not by the environment,
        ``sitesync.toml`` or a default: a flag that contradicts a run is refused."""
        return frozenset(self._explicit)

    def flag_of(self, name: str) -> str:
        """How the user gave setting ``name``: its flag as typed, or its variable."""
        return self._explicit.get(name) or f"SITESYNC_{name.upper()}"

    def mark_explicit(self, flags: Mapping[str, str]) -> None:
        """Record these settings as given by flags (setting name -> the flag typed)."""
        self._explicit = dict(flags)

    @property
    def heartbeat(self) -> float:
        """Seconds between two renewals of a worker's leases and claims (and its run's sign
        of life): ``heartbeat_seconds``, or derived from the lease and claim lengths."""
        return derived_heartbeat(self.heartbeat_seconds, self.lease_seconds, self.claim_seconds)

    def store_options(self) -> StoreOptions:
        """``open_store`` keywords: how long transient store faults are waited out."""
        return {
            "retry_seconds": self.store_retry_seconds,
            "sqlite_busy_timeout": self.sqlite_busy_timeout,
        }


def setting_default(name: str) -> Any:
    """The default of setting ``name``: the option objects of the parts below the CLI (worker,
    fetcher, supervisor) take theirs from here, so each default is written once."""
    return Settings.model_fields[name].default


def derived_heartbeat(
    heartbeat_seconds: float, lease_seconds: float, claim_seconds: float
) -> float:
    """The renewal interval: as set, or (0) a third of the shorter of lease and claim, at most
    10 s, so that one missed renewal never loses either."""
    if heartbeat_seconds > 0:
        return heartbeat_seconds
    return max(0.05, min(10.0, lease_seconds / 3, claim_seconds / 3))


def load_settings(*, flag_names: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
    """Settings from file, environment and ``overrides`` (flags; None = not given).

    ``flag_names`` maps settings to the flags that set them, for the error to name the flag
    its user typed (the CLI knows them; settings know no CLI).

    Raises ``ConfigError`` with one line naming the first bad setting (or the settings file
    that cannot be read). The passwords they carry are masked in everything shown from then on.
    """
    given = {key: value for key, value in overrides.items() if value is not None}
    remember_secrets(given.get("db"), os.environ.get("SITESYNC_DB"))
    remember_secret(os.environ.get("PGPASSWORD"))  # libpq's password when the DSN has none
    try:
        settings = Settings(**given)
    except ValidationError as exc:
        raise ConfigError(one_line_error(exc, flag_names or {})) from exc
    except (tomllib.TOMLDecodeError, OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"settings file {_settings_file()}: {exc}") from exc
    settings.mark_explicit({name: (flag_names or {}).get(name, "") for name in given})
    remember_secrets(settings.db)
    remember_profile_secrets(settings)
    token = settings.dashboard_token
    remember_secret(token.get_secret_value() if token else None)
    return settings


def remember_profile_secrets(settings: Settings) -> None:
    """Mask the request profiles' credentials (the crawl's and each site's auth and proxy)
    in everything this process shows from now on: those of its own settings, and of a
    run's it takes on (a scan's domains' profiles reach its workers only that way)."""
    for secret in (settings.auth, settings.proxy):
        remember_secret(secret.get_secret_value() if secret else None)
    for site in settings.sites.values():
        for key in ("auth", "proxy"):
            remember_secret(str(site.get(key) or "") or None)


def _settings_file() -> str:
    return os.environ.get("SITESYNC_CONFIG", "sitesync.toml")


def one_line_error(exc: ValidationError, flag_names: Mapping[str, str]) -> str:
    """The first problem of a validation, on one line naming the setting (and its flag)."""
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"]) or "settings"
    if where == "settings":
        return f"invalid settings: {error['msg']}"
    env = f"SITESYNC_{where.upper()}"
    named = f"{flag_names[where]} / {env}" if where in flag_names else env
    if where.split(".")[0] in _NEVER_ECHOED:  # a credential is not echoed, even malformed
        return f"invalid setting {where} ({named}): {error['msg']}"
    got = redact(repr(error.get("input")))
    return f"invalid setting {where} ({named}): {error['msg']} (got {got})"


#: Settings whose values may hold credentials: their errors never repeat what was given.
_NEVER_ECHOED = frozenset(
    {"auth", "proxy", "cookies", "request_headers", "sites", "db", "dashboard_token"}
)
