"""A lease given back untried: what a page attempt ends in when its host asked us to back
off (a pause, a re-check of a failing host) or the host's claim is gone, before the page
was asked for. Its own module, because every step of the attempt may end in one.
"""

from __future__ import annotations

from dataclasses import dataclass

from sitesync.models import Lease


@dataclass(frozen=True, slots=True)
class Deferral:
    """Give the lease back untried; the task is not eligible before ``until``."""

    lease: Lease
    until: float
