"""What one batch changed, and how it is counted once it is committed."""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field

from sqlalchemy.orm import Session

from app.db.engine import on_commit
from app.domain.records import Skipped
from app.domain.wording import counted
from app.metrics import INGESTED

log = logging.getLogger(__name__)


@dataclass
class IngestReport:
    """What one batch changed. Each match counts once as created, updated or unchanged;
    ``matches_rescheduled`` counts the updated ones that moved to another date."""

    matches_created: int = 0
    matches_updated: int = 0
    matches_rescheduled: int = 0
    matches_unchanged: int = 0
    quotes_inserted: int = 0
    quotes_updated: int = 0
    quotes_unchanged: int = 0
    results_set: int = 0
    rows_read: int = 0
    skipped: list[Skipped] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """Every count, in the order they are shown."""
        return {
            item.name: getattr(self, item.name)
            for item in dataclasses.fields(self)
            if item.name != "skipped"
        }

    def add(self, other: IngestReport) -> None:
        for name, count in other.counts().items():
            setattr(self, name, getattr(self, name) + count)
        self.skipped.extend(other.skipped)


# The counts of rows written (not of rows left unchanged), as metrics.
WRITTEN = (
    "matches_created",
    "matches_updated",
    "matches_rescheduled",
    "quotes_inserted",
    "quotes_updated",
    "results_set",
)


def record_on_commit(session: Session, report: IngestReport, *, source: str) -> None:
    """Count what an ingest from ``source`` wrote (metrics, one log line) when the caller
    commits it: a batch that is rolled back, or whose commit fails, is never counted."""
    on_commit(session, lambda: record(report, source=source))


def record(report: IngestReport, *, source: str) -> None:
    """Count what an ingest from ``source`` wrote in the metrics, and log one summary line."""
    for kind in WRITTEN:
        INGESTED.labels(kind).inc(getattr(report, kind))
    log.info(
        "ingest from %s: %s created, %d updated (%d rescheduled), %d unchanged; %s inserted, "
        "%d updated, %d unchanged; %s set; %d skipped",
        source,
        counted(report.matches_created, "match"),
        report.matches_updated,
        report.matches_rescheduled,
        report.matches_unchanged,
        counted(report.quotes_inserted, "quote"),
        report.quotes_updated,
        report.quotes_unchanged,
        counted(report.results_set, "result"),
        len(report.skipped),
    )
