"""What a scan keeps of a URL's latest successful fetch, so that the next scan of the same
store can ask the site whether the page changed (a conditional request) instead of
downloading it again, and still knows what the unchanged page linked to and produced."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Validators:
    """A response's validators, as the server sent them (a weak ETag keeps its ``W/``)."""

    etag: str | None = None
    last_modified: str | None = None

    def __bool__(self) -> bool:
        return bool(self.etag or self.last_modified)


@dataclass(frozen=True, slots=True)
class EarlierFetch:
    """What a 304 stands for: the links and records of the body the store last saw."""

    links: tuple[str, ...]  # normalized, before scoping (scoped again by the scan that reads them)
    records: tuple[tuple[int, str], ...]  # (record id, kind) of every record it produced


@dataclass(frozen=True, slots=True)
class LastFetch:
    """The latest successful fetch of a URL in the store, whichever run made it."""

    url: str
    run_id: int  # the run that last fetched it in full, or confirmed it with a 304
    task_id: int
    fetched_at: float  # when its body was last downloaded
    checked_at: float  # when it was last fetched or confirmed unchanged (a 304)
    validators: Validators
    content_hash: str  # sha256 (hex) of the body last downloaded
    body_bytes: int  # that body's size: what a full fetch costs
    # What a 304 stands for; None when any of it is gone (a record no longer in the store,
    # links that cannot be read): the page must then be fetched in full.
    earlier: EarlierFetch | None = None


@dataclass(frozen=True, slots=True)
class Revisit:
    """What a successful fetch leaves for the next scan, written with its report: a full
    fetch (``content_hash`` set) replaces the URL's last fetch; a 304 (``content_hash``
    None) confirms it, and the records in ``resighted`` are seen again by the run."""

    url: str
    validators: Validators
    content_hash: str | None = None
    body_bytes: int = 0
    links: tuple[str, ...] = ()
    resighted: tuple[tuple[int, str], ...] = ()

    @property
    def not_modified(self) -> bool:
        return self.content_hash is None
