"""How the flag ledger's settled flags of a window fared (the ``flags`` of GET /performance):
the database adds up each (value source, competition) pair's counts, sums and sums of
squares in one grouped query over the window's settled flags; the figures are made from
those sums by :mod:`app.domain.flag_performance`. Read only.
"""

from __future__ import annotations

from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

from app.db.orm import Competition, Match, ValueFlag
from app.domain.flag_performance import FlagScores, FlagSums, GroupSums, flag_scores
from app.domain.flags import FlagStatus
from app.services.track_record_aggregates import PerformanceQuery


def flag_performance(session: Session, query: PerformanceQuery) -> FlagScores:
    """The settled flags of the matches that kicked off in ``query``'s window (of its
    competition, if any), scored from the net price each was raised at."""
    return flag_scores(
        [
            GroupSums(
                source,
                competition,
                # A sum over no rows (no flag of the pair with a close) is NULL.
                FlagSums(flags, with_close, *(float(value or 0.0) for value in sums)),
            )
            for source, competition, flags, with_close, *sums in session.execute(
                _sums_statement(query)
            )
        ]
    )


_Sums = Select[str, str, int, int, float | None, float | None, float | None, float | None]


def _sums_statement(query: PerformanceQuery) -> _Sums:
    clv, returns = ValueFlag.clv, ValueFlag.flat_return
    statement = (
        select(
            ValueFlag.value_source,
            Competition.code,
            func.count(),
            func.count(clv),
            func.sum(clv),
            func.sum(clv * clv),
            func.sum(returns),
            func.sum(returns * returns),
        )
        .join(Match, ValueFlag.match_id == Match.id)
        .join(Competition, Match.competition_id == Competition.id)
        .where(ValueFlag.status == FlagStatus.SETTLED, ValueFlag.flat_return.is_not(None))
        .group_by(ValueFlag.value_source, Competition.code)
    )
    if query.kickoff_from is not None:
        statement = statement.where(Match.kickoff >= query.kickoff_from)
    if query.kickoff_to is not None:
        statement = statement.where(Match.kickoff < query.kickoff_to)
    if query.competition is not None:
        statement = statement.where(Competition.code == query.competition)
    return statement
