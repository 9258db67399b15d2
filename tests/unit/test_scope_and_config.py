from __future__ import annotations

import pytest

from sitesync.config import load_settings
from sitesync.engine.wiring import fetch_limits, worker_options
from sitesync.errors import ConfigError
from sitesync.frontier.scope import Scope
from sitesync.models import RunConfig


def scope(**config: object) -> Scope:
    run_config = RunConfig(seeds=("http://example.org/",), **config)  # type: ignore[arg-type]
    return Scope.from_config(run_config, frozenset({"example.org"}))


def test_default_scope_is_the_seed_hosts_only() -> None:
    s = scope()
    assert s.admits("http://example.org/a", "example.org", 1)
    assert not s.admits("http://www.example.org/a", "www.example.org", 1)
    assert not s.admits("http://other.test/", "other.test", 1)


def test_allowed_domains_include_subdomains_but_not_lookalikes() -> None:
    s = scope(allowed_domains=("gov.test",))
    assert s.admits("http://gov.test/", "gov.test", 1)
    assert s.admits("http://a.b.gov.test:8080/", "a.b.gov.test:8080", 1)
    assert not s.admits("http://evilgov.test/", "evilgov.test", 1)


def test_include_exclude_and_depth() -> None:
    s = scope(include=(r"/docs/",), exclude=(r"\.pdf$",), max_depth=2)
    assert s.admits("http://example.org/docs/a", "example.org", 2)
    assert not s.admits("http://example.org/docs/a", "example.org", 3)
    assert not s.admits("http://example.org/blog/a", "example.org", 1)
    assert not s.admits("http://example.org/docs/a.pdf", "example.org", 1)


def test_a_bad_pattern_is_a_config_error_naming_the_option() -> None:
    with pytest.raises(ConfigError, match=r"--exclude pattern '\(' is not a valid regex"):
        scope(exclude=("(",))


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"concurrency": 0},
            r"invalid setting concurrency \(SITESYNC_CONCURRENCY\)",
        ),
        ({"delay": -1}, r"invalid setting delay"),
        ({"lease_seconds": 0}, r"invalid setting lease_seconds"),
        ({"claim_seconds": 30}, r"claim_seconds \(30\) must be at least total_timeout"),
        ({"lease_seconds": 1, "heartbeat_seconds": 1}, r"lease_seconds \(1\) must be at least"),
        ({"db": ":memory:"}, r"db ':memory:' cannot be shared by workers"),
        ({"domain_stats_flush_interval_pages": -1}, r"domain_stats_flush_interval_pages"),
        ({"concurrency": 8, "in_flight_limit": 4}, r"in_flight_limit must be 0 or at least"),
    ],
)
def test_invalid_settings_fail_fast_with_one_line(
    overrides: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        load_settings(**overrides)
    assert "\n" not in str(info.value)


def test_a_short_total_timeout_caps_the_others() -> None:
    limits = fetch_limits(load_settings(total_timeout=2))
    assert limits.connect_timeout == limits.read_timeout == limits.total_timeout == 2


def test_environment_variables_configure_and_flags_win(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SITESYNC_CONCURRENCY", "7")
    monkeypatch.setenv("SITESYNC_DELAY", "0.25")
    settings = load_settings(delay=2.0)
    assert settings.concurrency == 7 and settings.delay == 2.0


def test_a_toml_file_configures(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    config = tmp_path / "sitesync.toml"
    config.write_text('concurrency = 5\nuser_agent = "acme-bot (+https://acme.test/bot)"\n')
    monkeypatch.setenv("SITESYNC_CONFIG", str(config))
    settings = load_settings()
    assert settings.concurrency == 5 and settings.user_agent.startswith("acme-bot")


def test_an_unknown_setting_in_the_file_is_named(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    config = tmp_path / "sitesync.toml"
    config.write_text("concurency = 5\n")
    monkeypatch.setenv("SITESYNC_CONFIG", str(config))
    with pytest.raises(ConfigError, match="concurency"):
        load_settings()


def test_drain_timeout_is_a_setting_that_reaches_the_worker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert worker_options(load_settings()).drain_timeout == 10.0
    monkeypatch.setenv("SITESYNC_DRAIN_TIMEOUT", "2.5")
    assert worker_options(load_settings()).drain_timeout == 2.5
    with pytest.raises(ConfigError, match="drain_timeout"):
        load_settings(drain_timeout=0)
