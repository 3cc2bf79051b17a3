"""What one batch changed."""

from __future__ import annotations

from dataclasses import dataclass, field

from app.domain.records import Skipped

# The report's counts, in the order they are shown.
COUNTS = (
    "matches_created",
    "matches_updated",
    "matches_unchanged",
    "quotes_inserted",
    "quotes_updated",
    "quotes_unchanged",
    "results_set",
    "rows_read",
)


@dataclass
class IngestReport:
    """What one batch changed. Each match counts once as created, updated or unchanged."""

    matches_created: int = 0
    matches_updated: int = 0
    matches_unchanged: int = 0
    quotes_inserted: int = 0
    quotes_updated: int = 0
    quotes_unchanged: int = 0
    results_set: int = 0
    rows_read: int = 0
    skipped: list[Skipped] = field(default_factory=list)

    def add(self, other: IngestReport) -> None:
        for name in COUNTS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.skipped.extend(other.skipped)
