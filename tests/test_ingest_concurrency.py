"""Concurrent imports of overlapping data: no errors, nothing stored twice."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import func, select

from app.db.engine import make_engine, make_session_factory, session_scope
from app.db.orm import Match, OddsQuote, Team
from app.services.ingest import import_football_data

SeasonFile = Callable[[str], Path]


def test_two_writers_importing_the_same_files(migrated_url: str, season_file: SeasonFile) -> None:
    engine = make_engine(migrated_url)
    factory = make_session_factory(engine, for_writes=True)
    contents = [season_file(name).read_bytes() for name in ("E0_1617", "E0_1718", "E0_1819")]
    errors: list[BaseException] = []
    created: list[int] = []

    def import_all(order: list[bytes]) -> None:
        for content in order:
            try:
                with session_scope(factory) as session:
                    created.append(import_football_data(session, content).matches_created)
            except BaseException as error:  # collected and asserted below
                errors.append(error)

    writers = [
        threading.Thread(target=import_all, args=(contents,)),
        threading.Thread(target=import_all, args=(contents[::-1],)),
    ]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()

    assert errors == []
    assert sum(created) == 3 * 380  # each match created by exactly one of the writers
    with factory() as session:
        assert session.scalar(select(func.count()).select_from(Match)) == 3 * 380
        team_names = session.scalars(select(Team.name)).all()
        assert len(team_names) == len(set(team_names))
        duplicates = session.execute(
            select(OddsQuote.match_id, OddsQuote.bookmaker_id, OddsQuote.phase)
            .group_by(OddsQuote.match_id, OddsQuote.bookmaker_id, OddsQuote.phase)
            .having(func.count() > 1)
        ).all()
        assert duplicates == []
    engine.dispose()
