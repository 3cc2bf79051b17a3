"""Write ingest batches: matches, results and odds quotes, idempotently and in bulk.

Every function takes the caller's session and never commits: the caller's transaction is
the batch (the API's session dependency, the CLI's ``session_scope``). What a batch wrote is
counted (metrics, one log line naming its source) when that transaction commits, so a batch
that is rolled back is never counted. Work is done with set-based statements (one SELECT per
table and chunk, one executemany per kind of write, new rows by COPY on PostgreSQL), never
one ORM round trip per row.
"""

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
