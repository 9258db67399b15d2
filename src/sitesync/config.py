"""Settings: one class, read from ``sitesync.toml`` (or ``SITESYNC_CONFIG``), ``SITESYNC_*``
environment variables and command-line flags (highest priority), validated at start-up."""

from __future__ import annotations

import os
from typing import Any, Literal

from pydantic import Field, ValidationError, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from sitesync.errors import ConfigError
from sitesync.fetch.base import FetchLimits
from sitesync.fetch.http import DEFAULT_USER_AGENT
from sitesync.frontier.retry import RetryPolicy
from sitesync.runs.worker import WorkerOptions

DEFAULT_DB = "sitesync.db"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="SITESYNC_", extra="forbid", use_attribute_docstrings=True
    )

    db: str = DEFAULT_DB
    """Where the store lives: a SQLite file path (the default, ``./sitesync.db``)."""

    concurrency: int = Field(16, ge=1, le=10_000)
    """Requests in flight at once, over all hosts."""

    per_host_concurrency: int = Field(1, ge=0)
    """Requests in flight at once on one host; 0 lifts the cap (only for sites you own)."""

    delay: float = Field(1.0, ge=0)
    """Seconds between the starts of two requests to one host."""

    max_retries: int = Field(3, ge=1, le=100)
    """Attempts per URL before it is marked failed."""

    retry_backoff: float = Field(1.0, ge=0)
    """First retry waits about this long; each later one twice as long (with jitter)."""

    retry_backoff_max: float = Field(60.0, ge=0)
    """Longest wait between two attempts of one URL."""

    lease_seconds: float = Field(60.0, gt=0)
    """How long a worker holds a task without renewing; a crashed worker's tasks come back
    after this long."""

    in_flight_limit: int = Field(0, ge=0)
    """Tasks a worker holds at once (leased, fetching or awaiting commit); 0 = 2 x concurrency."""

    fetcher: Literal["http", "browser"] = "http"
    """How pages are fetched: ``http`` (aiohttp), or ``browser`` (the system Chromium through
    Playwright, for JavaScript-built sites; needs the ``browser`` extra)."""

    browser_executable: str = "/usr/bin/chromium"
    """The Chromium the browser fetcher launches."""

    browser_pages: int = Field(4, ge=1)
    """Pages the browser fetcher renders at once."""

    respect_robots: bool = True
    """Obey robots.txt (RFC 9309): disallowed URLs are never requested (flag: ``--robots``)."""

    robots_recheck_seconds: float = Field(300.0, gt=0)
    """After a 5xx or unreachable robots.txt (which disallows everything), ask again after
    this long."""

    sitemaps: bool = True
    """Admit the URLs that the seeds' hosts list in their sitemaps."""

    max_crawl_delay: float = Field(60.0, ge=0)
    """Largest robots.txt Crawl-delay honoured, in seconds; longer ones are capped."""

    max_retry_after: float = Field(3600.0, ge=0)
    """Largest Retry-After honoured, in seconds; longer ones are capped."""

    user_agent: str = DEFAULT_USER_AGENT
    """The User-Agent header: name your crawler and give a contact URL."""

    connect_timeout: float = Field(10.0, gt=0)
    """Seconds to establish a connection."""

    read_timeout: float = Field(20.0, gt=0)
    """Longest silence, in seconds, between two reads of a response."""

    total_timeout: float = Field(60.0, gt=0)
    """Seconds for a whole request, body included (flag: ``--timeout``)."""

    max_body_bytes: int = Field(10 * 1024 * 1024, gt=0)
    """Largest body kept, counted after decompression; larger ones end as ``too_large``."""

    max_redirects: int = Field(10, ge=0)
    """Redirects followed per request before it ends as ``invalid``."""

    @model_validator(mode="after")
    def _check_combinations(self) -> Settings:
        if self.connect_timeout > self.total_timeout:
            raise ValueError("connect_timeout must not exceed total_timeout")
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
        toml_file = os.environ.get("SITESYNC_CONFIG", "sitesync.toml")
        return (
            init_settings,
            env_settings,
            TomlConfigSettingsSource(settings_cls, toml_file=toml_file),
        )

    def fetch_limits(self) -> FetchLimits:
        return FetchLimits(
            connect_timeout=self.connect_timeout,
            read_timeout=self.read_timeout,
            total_timeout=self.total_timeout,
            max_body_bytes=self.max_body_bytes,
            max_redirects=self.max_redirects,
        )

    def worker_options(self) -> WorkerOptions:
        return WorkerOptions(
            concurrency=self.concurrency,
            per_host_concurrency=self.per_host_concurrency,
            per_host_delay=self.delay,
            lease_seconds=self.lease_seconds,
            in_flight_limit=self.in_flight_limit,
            respect_robots=self.respect_robots,
            robots_recheck_seconds=self.robots_recheck_seconds,
            sitemaps=self.sitemaps,
            sitemap_max_bytes=self.max_body_bytes,
            max_crawl_delay=self.max_crawl_delay,
            max_retry_after=self.max_retry_after,
            retry=RetryPolicy(
                initial=self.retry_backoff,
                maximum=self.retry_backoff_max,
                jitter=min(1.0, self.retry_backoff),
            ),
        )


def settings_reference() -> str:
    """The Markdown table of every setting, as docs/settings.md shows it."""
    lines = [
        "| setting | environment variable | default | meaning |",
        "| --- | --- | --- | --- |",
    ]
    for name, info in Settings.model_fields.items():
        default = info.default
        shown = f"`{default}`" if default != "" else '`""`'
        meaning = " ".join((info.description or "").split())
        lines.append(f"| `{name}` | `SITESYNC_{name.upper()}` | {shown} | {meaning} |")
    return "\n".join(lines) + "\n"


def load_settings(**overrides: Any) -> Settings:
    """Settings from file, environment and ``overrides`` (flags; None = not given).

    Raises ``ConfigError`` with one line naming the first bad setting.
    """
    given = {key: value for key, value in overrides.items() if value is not None}
    try:
        return Settings(**given)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"]) or "settings"
        if where == "settings":
            raise ConfigError(f"invalid settings: {error['msg']}") from exc
        env = f"SITESYNC_{where.upper()}"
        flag = "--" + where.replace("_", "-")
        raise ConfigError(
            f"invalid setting {where} ({flag} / {env}): {error['msg']} (got {error.get('input')!r})"
        ) from exc
