"""The revision of a match's quotes (``Match.quotes_revision``): moved by every write that
changes them (a quote inserted, re-priced, deleted or moved to another match, a kickoff that
changes which quotes are valid), in that write's transaction. The stamps of the board and of
the match page compare it: the moment a writer stamps its rows on is taken before it waits
for the match's lock, so it can be older than a change already committed, while a revision
is raised under that lock and never comes back to a value seen before."""

from __future__ import annotations

from collections.abc import Collection

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from app.db.orm import Match
from app.services.bulk import chunks


def bump_quotes_revisions(session: Session, match_ids: Collection[int]) -> None:
    """Raise the quotes revision of each of ``match_ids`` by one, in the caller's
    transaction. The matches are locked in id order first, as the latest quotes' refresh
    does, so writers on the same matches queue instead of deadlocking."""
    for part in chunks(sorted(set(match_ids))):
        session.execute(
            select(Match.id)
            .where(Match.id.in_(part))
            .order_by(Match.id)
            .with_for_update(key_share=True)
        )
        session.execute(
            update(Match)
            .where(Match.id.in_(part))
            # The match itself did not change: its ``updated_at`` stays as it is.
            .values(quotes_revision=Match.quotes_revision + 1, updated_at=Match.updated_at)
            .execution_options(synchronize_session=False)
        )
