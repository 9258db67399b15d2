"""Sorting a report batch's records into what can be written in bulk (shared by both stores).

Two cases are most of a crawl's records and can go in a few statements for the whole batch:

- a key new to the store (every page of a first crawl): its body, its record, its first
  version and its sighting;
- a key seen again unchanged (a re-crawl, an asset on every page): one sighting.

Everything else (a key whose content changed, or changed within the batch, or that another
transaction created first) goes to each store's one-by-one writer, in the batch's order:
every record of such a key goes that way, so a key's versions follow the batch as they
would one record at a time.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from sitesync.models import AssetRecord, TaskReport
from sitesync.store._records import AssetTally, BodyPlan, Row, plan_body


@dataclass(slots=True)
class BatchKey:
    """What the batch knows of one key: as stored, or as this batch creates it."""

    record_id: int | None
    version: int
    content_hash: str
    body_hash: str | None
    slow: bool = False  # written one by one, with every later record of the key


@dataclass(slots=True)
class Sighting:
    report: int  # index of the report in the batch
    record: AssetRecord
    key: BatchKey
    created: bool  # the batch creates this key with this record


@dataclass(slots=True)
class Creation:
    record: AssetRecord
    plan: BodyPlan
    key: BatchKey


@dataclass(slots=True)
class RecordBatch:
    """The batch's records sorted into sightings, creations and one-by-one writes."""

    keys: dict[str, BatchKey] = field(default_factory=dict)
    sightings: list[Sighting] = field(default_factory=list)
    creations: dict[str, Creation] = field(default_factory=dict)

    def know(self, rows: Iterable[Row]) -> None:
        """The batch's keys as the store has them (``select_records_by_key``'s rows)."""
        for row in rows:
            self.keys[row["key"]] = BatchKey(
                row["id"], row["latest_version"], row["latest_hash"], row["latest_body_hash"]
            )

    def sort(self, reports: Sequence[TaskReport], cap: int) -> None:
        for index, report in enumerate(reports):
            for record in report.records:
                key = self.keys.get(record.key)
                if key is None:  # new to the store: this record creates it
                    plan = plan_body(record, cap)
                    key = BatchKey(None, 1, record.content_hash, plan.body_hash)
                    self.keys[record.key] = key
                    self.creations[record.key] = Creation(record, plan, key)
                    self.sightings.append(Sighting(index, record, key, created=True))
                    continue
                if key.content_hash != record.content_hash:
                    key.slow = True  # a new version: decided under the record's lock
                self.sightings.append(Sighting(index, record, key, created=False))

    def fast(self) -> list[Sighting]:
        return [s for s in self.sightings if not s.key.slow]

    def slow(self) -> list[Sighting]:
        return [s for s in self.sightings if s.key.slow]


def asset_tallies(
    reports: Sequence[TaskReport], written: Sequence[Sighting], newly_seen: Sequence[bool]
) -> dict[str, AssetTally]:
    """The asset counter moves of the sightings written in bulk, per host; ``newly_seen``
    says, for each, whether it is its record's first sighting in the run."""
    tallies: dict[str, AssetTally] = defaultdict(AssetTally)
    for sighting, seen in zip(written, newly_seen, strict=True):
        stored = sighting.key.body_hash is not None and seen
        tallies[reports[sighting.report].lease.host].count(
            sighting.record, newly_seen=seen, newly_stored=stored
        )
    return tallies
