"""Which URLs a run may crawl. Pure: no I/O, no parsing of content."""

from __future__ import annotations

import re
from dataclasses import dataclass

from sitesync.errors import ConfigError
from sitesync.models import RunConfig


@dataclass(frozen=True, slots=True)
class Scope:
    """Which URLs a run may crawl.

    By default a run stays on its seeds' hosts (and the hosts its seeds redirect to);
    ``allowed_domains`` widens that to whole domains with their subdomains. Include
    patterns (any must match) and exclude patterns (none may match) are regular
    expressions searched in the normalized URL."""

    seed_hosts: frozenset[str]
    allowed_domains: tuple[str, ...] = ()
    include: tuple[re.Pattern[str], ...] = ()
    exclude: tuple[re.Pattern[str], ...] = ()
    max_depth: int | None = None

    @classmethod
    def from_config(cls, config: RunConfig, seed_hosts: frozenset[str]) -> Scope:
        return cls(
            seed_hosts=seed_hosts,
            allowed_domains=tuple(d.lower().strip(".") for d in config.allowed_domains),
            include=_compile(config.include, "include"),
            exclude=_compile(config.exclude, "exclude"),
            max_depth=config.max_depth,
        )

    def admits(self, url: str, host: str, depth: int) -> bool:
        if self.max_depth is not None and depth > self.max_depth:
            return False
        if host not in self.seed_hosts and not self._domain_allowed(host):
            return False
        # Tested before any() is called: this runs for every link of every page.
        if self.include and not any(p.search(url) for p in self.include):
            return False
        return not (self.exclude and any(p.search(url) for p in self.exclude))

    def domain_allowed(self, host: str) -> bool:
        """Whether ``host`` is under one of ``allowed_domains`` (named by the operator)."""
        return self._domain_allowed(host)

    def explain(self, url: str, host: str, depth: int | None) -> tuple[bool, str]:
        """What :meth:`admits` decides, and the rule that decided it (``sitesync why``).

        ``depth`` None: the depth is unknown (the URL was never linked); it is not checked.
        """
        if depth is not None and self.max_depth is not None and depth > self.max_depth:
            return False, f"too deep: depth {depth} > max_depth {self.max_depth}"
        if host in self.seed_hosts:
            rule = f"host {host} is a seed host"
        elif self._domain_allowed(host):
            rule = f"host {host} is under --allow-domain"
        else:
            hosts = ", ".join(sorted(self.seed_hosts))
            return False, f"out of scope: host {host} is not a seed host ({hosts}) " + (
                "nor under --allow-domain " + ", ".join(self.allowed_domains)
                if self.allowed_domains
                else "and no --allow-domain is set"
            )
        if self.include:
            matched = next((p.pattern for p in self.include if p.search(url)), None)
            if matched is None:
                patterns = ", ".join(repr(p.pattern) for p in self.include)
                return False, f"out of scope: no --include pattern matches ({patterns})"
            rule += f"; --include {matched!r} matches"
        for pattern in self.exclude:
            if pattern.search(url):
                return False, f"excluded by pattern {pattern.pattern!r} (--exclude)"
        return True, rule

    def _domain_allowed(self, host: str) -> bool:
        if not self.allowed_domains:
            return False
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        return any(name == d or name.endswith("." + d) for d in self.allowed_domains)


def _compile(patterns: tuple[str, ...], setting: str) -> tuple[re.Pattern[str], ...]:
    compiled = []
    for pattern in patterns:
        try:
            compiled.append(re.compile(pattern))
        except re.error as exc:
            raise ConfigError(
                f"--{setting} pattern {pattern!r} is not a valid regex: {exc}"
            ) from exc
    return tuple(compiled)
