"""Write ingest batches (matches, results, odds quotes) idempotently, with set-based
statements, in the caller's transaction: nothing commits here, and what a batch wrote is
counted when the caller commits."""

from app.services.ingest.batches import import_football_data, import_odds_api, ingest_batch
from app.services.ingest.report import IngestReport
from app.services.ingest.results import MatchIdentity, ResultItem, settle_results

__all__ = [
    "IngestReport",
    "MatchIdentity",
    "ResultItem",
    "import_football_data",
    "import_odds_api",
    "ingest_batch",
    "settle_results",
]
