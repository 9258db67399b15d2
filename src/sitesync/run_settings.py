"""A run is one crawl wherever it runs: the settings a run records, and how a process that
works on a run takes them on.

A setting is either the **run's** or **the process's**:

- The run's settings decide what is crawled and how it is treated (scope and limits,
  politeness, robots.txt and sitemaps, identity, the fetcher, plugins, timeouts and caps,
  retries, session parameters, the network policy, what is stored). A run records them when
  it is created (:func:`snapshot`), from the flags, environment and ``sitesync.toml`` of the
  process that creates it, and every process that works on it afterwards obeys them
  (:func:`take_on`): its own environment and ``sitesync.toml`` never change them, and a flag
  that contradicts them is refused, naming the setting and both values.
- The process's settings shape one process only: its concurrency, the store it opens, its
  timings (leases, claims, heartbeats), the supervisor's and the dashboard's.

A run's settings change only explicitly (``sitesync settings RUN --set NAME=VALUE``), and only
those every worker can apply while the run goes on (:data:`LIVE`, its politeness); every
change is recorded with its time. docs/settings.md says which kind each setting is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from pydantic import SecretStr, TypeAdapter, ValidationError

from sitesync.config import Settings, one_line_error, remember_profile_secrets
from sitesync.errors import CannotJoinRun, ConfigError
from sitesync.models import Run, RunConfig
from sitesync.profiles import shown_profile

#: The settings a run records, by the group docs/settings.md shows them in.
RUN: dict[str, str] = {
    **dict.fromkeys(
        ("per_host_concurrency", "delay", "adaptive_politeness", "adaptive_max_delay",
         "adaptive_recovery_seconds", "adaptive_latency_factor"),
        "politeness",
    ),
    **dict.fromkeys(("max_crawl_delay", "max_retry_after"), "what a site may ask"),
    **dict.fromkeys(
        ("respect_robots", "robots_recheck_seconds", "sitemaps", "dead_host_attempts",
         "dead_host_recheck_seconds"),
        "robots.txt, sitemaps and dead hosts",
    ),
    **dict.fromkeys(("user_agent", "contact", "worker_id_header"), "identity"),
    **dict.fromkeys(
        ("request_headers", "cookies", "auth", "proxy", "sites"), "request profiles"
    ),
    **dict.fromkeys(("fetcher", "conditional_requests", "sitemap_skips_unchanged"), "fetcher"),
    **dict.fromkeys(
        ("plugins", "plugin_config", "plugin_timeout_seconds", "max_record_bytes",
         "download_assets", "max_asset_bytes"),
        "plugins",
    ),
    **dict.fromkeys(
        ("connect_timeout", "read_timeout", "total_timeout", "max_body_bytes",
         "max_parse_bytes", "parse_timeout_seconds", "max_links_per_page", "max_redirects",
         "follow_offsite_seed_redirects"),
        "timeouts, caps and redirects",
    ),
    **dict.fromkeys(("max_retries", "retry_backoff", "retry_backoff_max"), "retries"),
    **dict.fromkeys(("session_params",), "URLs"),
    **dict.fromkeys(("allow_private_networks", "allowed_networks"), "network policy"),
    **dict.fromkeys(("max_attempts_kept", "max_stored_body_bytes"), "what is stored"),
    **dict.fromkeys(("scan_scheme", "scan_max_depth"), "scans"),
}  # fmt: skip

#: Of the run's settings, those a run may change while it goes on: every worker applies a
#: change to them within ``status_poll_seconds``. The others are fixed at creation.
LIVE: frozenset[str] = frozenset(name for name, group in RUN.items() if group == "politeness")

#: Why the others are fixed, as ``sitesync settings --set`` says when asked to change one.
FIXED_BECAUSE = (
    "fixed for the life of the run: pages already crawled were crawled with it, and every "
    "worker of a run must agree on it (start a new run to crawl with another value)"
)


#: What a run crawls (its ``RunConfig``): never changed once the frontier is built from it.
_SCOPE = frozenset(field.name for field in dataclasses.fields(RunConfig))


def is_run_setting(name: str) -> bool:
    return name in RUN


def snapshot(settings: Settings, *, plugins: Sequence[str] | None = None) -> dict[str, Any]:
    """The run's settings of ``settings``, as stored with a new run (JSON values).

    ``plugins``: the plugins the creating process resolved (``plugins`` unset means every
    plugin found there): the run records their names, so every worker runs the same ones.
    """
    values = {name: _json(getattr(settings, name)) for name in RUN}
    if plugins is not None:
        values["plugins"] = list(plugins)
    return values


def take_on(settings: Settings, run: Run) -> Settings:
    """``settings`` with the run's settings in place of this process's own.

    Raises ``CannotJoinRun`` when a flag this process was given (``settings.explicit``)
    contradicts the run, or when the run recorded a setting this sitesync does not know;
    a ``ConfigError`` when this process's own settings do not fit the run's (a claim shorter
    than the run's request timeout allows). A run created before runs kept their settings
    (none stored) is crawled with the process's own, as it always was.
    """
    stored = run.settings
    if stored is None:
        return settings
    unknown = sorted(set(stored) - set(Settings.model_fields))
    if unknown:
        raise CannotJoinRun(
            f"run {run.id} was created by a newer sitesync with settings this one does not "
            f"know ({', '.join(unknown)}): upgrade sitesync to work on it"
        )
    for name in sorted(settings.explicit & stored.keys()):
        given = _json(getattr(settings, name))
        if given != stored[name]:
            flag = settings.flag_of(name)
            raise CannotJoinRun(
                f"run {run.id} was created with {name}={_shown(stored[name])}, and this "
                f"command was given {flag} {_shown(given)}: a run's settings are the same in "
                f"every process ({_how_to_change(run.id, name)})"
            )
    try:
        return apply_recorded(settings, stored, context=f"run {run.id}")
    except ConfigError as exc:  # this process's own timings do not fit the run's
        raise CannotJoinRun(str(exc)) from None


def apply_recorded(settings: Settings, recorded: Mapping[str, Any], *, context: str) -> Settings:
    """``settings`` with ``recorded`` (a run's or a schedule's settings) in place of the
    process's own; a ``ConfigError`` in ``context`` when the process's own settings do not
    fit them (a claim shorter than the recorded request timeout allows)."""
    values = settings.model_dump()
    values.update({name: value for name, value in recorded.items() if name in RUN})
    try:
        taken = Settings.model_validate(values)
    except ValidationError as exc:
        raise ConfigError(f"{context}: {one_line_error(exc, {})}") from exc
    taken.mark_explicit({name: settings.flag_of(name) for name in settings.explicit})
    remember_profile_secrets(taken)
    return taken


def given_by_flags(settings: Settings) -> dict[str, Any]:
    """The run's settings this process was given as flags, as stored."""
    return {name: _json(getattr(settings, name)) for name in settings.explicit if name in RUN}


def parse_changes(run: Run, assignments: Sequence[str]) -> dict[str, Any]:
    """``NAME=VALUE`` assignments as the JSON values to store; a ``ConfigError`` names the
    first setting that is not the run's, may not change now, or is not a valid value."""
    if run.settings is None:
        raise ConfigError(
            f"run {run.id} was created before runs kept their settings: its processes use "
            "their own, so there is nothing of the run's to change"
        )
    raw: dict[str, str] = {}
    for assignment in assignments:
        name, sep, value = assignment.partition("=")
        name = name.strip().replace("-", "_")
        if not sep or not name:
            raise ConfigError(f"--set {assignment!r}: expected NAME=VALUE, e.g. delay=5")
        _check_changeable(run.id, name)
        raw[name] = value.strip()
    return {name: _json(_valid_value(name, value)) for name, value in raw.items()}


def redacted(settings: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A run's (or a schedule's) settings as they may be shown: credentials masked, in the
    crawl's profile and in every site's (the same keys: ``auth``, ``proxy``, ``cookies``)."""
    if settings is None:
        return None
    shown = shown_profile(settings)
    if isinstance(shown.get("sites"), dict):
        shown["sites"] = {
            host: shown_profile(dict(profile)) for host, profile in shown["sites"].items()
        }
    return shown


def shown_settings(run: Run) -> list[tuple[str, str, str]]:
    """(name, value, group) of each of the run's settings, secrets redacted, for ``show``."""
    shown = redacted(run.settings)
    if shown is None:
        return []
    from sitesync.redact import redact

    return [
        (name, redact(_shown(shown[name])), RUN.get(name, "unknown"))
        for name in sorted(shown, key=lambda n: (RUN.get(n, "~"), n))
    ]


def _check_changeable(run_id: int, name: str) -> None:
    if name in _SCOPE:
        raise ConfigError(
            f"{name} is the run's scope and cannot change on run {run_id}: the frontier was "
            "built from it (start a new run to crawl another scope)"
        )
    if name not in Settings.model_fields:
        raise ConfigError(f"no setting is named {name!r} (docs/settings.md lists them)")
    if name not in RUN:
        raise ConfigError(
            f"{name} is a setting of each process, not of the run: give it to the process "
            f"(SITESYNC_{name.upper()}, or its flag)"
        )
    if name not in LIVE:
        raise ConfigError(f"{name} cannot change on run {run_id}: {FIXED_BECAUSE}")


def _how_to_change(run_id: int, name: str) -> str:
    if name in LIVE:
        return f"change it for every worker with 'sitesync settings {run_id} --set {name}=VALUE'"
    return f"{name} is {FIXED_BECAUSE}"


def _valid_value(name: str, value: str) -> Any:
    """``value`` as setting ``name`` takes it (its type and bounds), or a ``ConfigError``.
    The run's changeable settings are checked alone: none of them takes part in a check
    across settings (docs/settings.md)."""
    field = Settings.model_fields[name]
    try:
        # Its type and its bounds (``Field(ge=...)`` keeps them as metadata).
        kind: Any = (
            Annotated[field.annotation, *field.metadata] if field.metadata else field.annotation
        )
        return TypeAdapter(kind).validate_python(value)
    except ValidationError as exc:
        problem = exc.errors()[0]["msg"]
        raise ConfigError(f"invalid value for {name}: {problem} (got {value!r})") from None


def _json(value: Any) -> Any:
    """A setting's value as stored: tuples as lists; a secret as it is (every worker of the
    run needs it), shown redacted (:func:`shown_settings`)."""
    if isinstance(value, SecretStr):
        return value.get_secret_value()
    if isinstance(value, tuple | list):
        return [_json(item) for item in value]
    return value


def _shown(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(str(item) for item in value) if value else "(none)"
    if isinstance(value, bool):
        return "on" if value else "off"
    return repr(value) if isinstance(value, str) else str(value)


def kind_of(name: str) -> str:
    """``run (changeable)``, ``run`` or ``process``: whose setting ``name`` is."""
    if name in LIVE:
        return "run (changeable)"
    return "run" if name in RUN else "process"
