"""Request profiles: the headers, cookies, credentials and proxy a crawl's requests carry.

Set for the whole crawl (``request_headers``, ``cookies``, ``auth``, ``proxy``) and per site
(``[sites."HOST"]`` in sitesync.toml), they are a run's settings like any other (every
worker of the run sends the same). A site's own profile applies to that host; the crawl's
profile to the run's own sites (its seeds' hosts, and their ``www.``/subdomains); any other
host gets none of it. So a redirect to another host never carries the credentials, as
browsers and well-kept HTTP clients strip them: the walker asks for each hop's own profile.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sitesync.errors import ConfigError
from sitesync.urls import same_site

#: Where a profile's credentials and headers may go, by host: None for a host that gets none.
ProfileOf = Callable[[str], "RequestProfile | None"]


@dataclass(frozen=True, slots=True)
class RequestProfile:
    headers: Mapping[str, str] = field(default_factory=dict)
    cookies: Mapping[str, str] = field(default_factory=dict)
    auth: str | None = None  # "basic USER:PASSWORD" or "bearer TOKEN"
    proxy: str | None = None  # http://[user:password@]host:port

    def request_headers(self) -> dict[str, str]:
        """The headers a request to this profile's host carries (cookies and auth as their
        own headers)."""
        headers = dict(self.headers)
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{name}={value}" for name, value in self.cookies.items())
        if self.auth:
            headers["Authorization"] = authorization(self.auth)
        return headers

    def over(self, base: RequestProfile) -> RequestProfile:
        """This (a site's) profile on top of ``base`` (the crawl's): headers and cookies
        merged, a credential or proxy of its own replacing the crawl's."""
        return RequestProfile(
            headers={**base.headers, **self.headers},
            cookies={**base.cookies, **self.cookies},
            auth=self.auth or base.auth,
            proxy=self.proxy or base.proxy,
        )


def authorization(auth: str) -> str:
    """The ``Authorization`` header of ``basic USER:PASSWORD`` or ``bearer TOKEN``."""
    scheme, _, secret = auth.strip().partition(" ")
    if scheme.lower() == "basic" and ":" in secret:
        return "Basic " + base64.b64encode(secret.encode()).decode()
    if scheme.lower() == "bearer" and secret:
        return f"Bearer {secret}"
    raise ConfigError("auth: expected 'basic USER:PASSWORD' or 'bearer TOKEN'")


def profile_from(table: Mapping[str, Any]) -> RequestProfile:
    """A profile from a settings table (``headers``, ``cookies``, ``auth``, ``proxy``)."""
    unknown = sorted(set(table) - {"headers", "cookies", "auth", "proxy"})
    if unknown:
        raise ConfigError(f"sites: unknown key {unknown[0]!r} (headers, cookies, auth, proxy)")
    if not isinstance(table, Mapping):
        raise ConfigError("sites: each site is a table (headers, cookies, auth, proxy)")
    return RequestProfile(
        headers=_text_table(table, "headers"),
        cookies=_text_table(table, "cookies"),
        auth=table.get("auth") or None,
        proxy=table.get("proxy") or None,
    )


#: The keys of a site's profile that hold credentials: shown as ``***``, never as given.
SECRET_KEYS = frozenset({"auth", "proxy", "cookies"})
MASK = "***"


def shown_profile(table: Mapping[str, Any]) -> dict[str, Any]:
    """A site's profile table as it may be shown: header names and values, cookie names,
    and ``***`` for each cookie's value, the auth and the proxy."""
    return {key: _masked(value) if key in SECRET_KEYS else value for key, value in table.items()}


def _masked(value: Any) -> Any:
    if not value:
        return value
    if isinstance(value, Mapping):
        return dict.fromkeys(value, MASK)
    return MASK


def _text_table(table: Mapping[str, Any], key: str) -> dict[str, str]:
    value = table.get(key) or {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"sites: {key} is a table of names to values")
    return {str(name): str(text) for name, text in value.items()}


def profiles_for(
    crawl: RequestProfile, sites: Mapping[str, RequestProfile], own_hosts: Iterable[str]
) -> ProfileOf:
    """What each host's requests carry: its site's profile (over the crawl's), the crawl's
    for the run's own sites, nothing for any other host."""
    own = tuple(own_hosts)
    empty = not (crawl.headers or crawl.cookies or crawl.auth or crawl.proxy or sites)

    # Any other host goes through the crawl's proxy too, carrying nothing else.
    elsewhere = RequestProfile(proxy=crawl.proxy) if crawl.proxy else None

    def profile_of(host: str) -> RequestProfile | None:
        if empty:
            return None
        site = sites.get(host) or sites.get(_without_port(host))
        if site is not None:
            return site.over(crawl)
        return crawl if any(same_site(seed, host) for seed in own) else elsewhere

    return profile_of


def _without_port(host: str) -> str:
    return host if host.endswith("]") else host.rsplit(":", 1)[0]
