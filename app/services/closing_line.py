"""The closing line: The Odds API fetched again just before kickoff.

The feed's schedule runs every few hours, so the last quote it stores before a kickoff can
be hours old. This job runs often (every few minutes) but fetches only the sports with a
stored match kicking off within the next ``closing_line_minutes`` that no fetch of the
sport has stored inside that window, so a kickoff costs one extra request of its sport,
however many runs fall inside its window and however many matches share it.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable

from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session, sessionmaker

from app.db.orm import Clock, Competition, Match, utcnow
from app.domain.odds_api import competition_code
from app.domain.vocabulary import RunTrigger
from app.services.fetch_runs import scheduled_fetch
from app.services.odds_api_feed import OddsApiFetch, fetch_the_odds_api, last_fetched
from app.services.run_bounds import Stop
from app.settings import Settings

log = logging.getLogger(__name__)


def sports_due(session: Session, settings: Settings, now: dt.datetime) -> tuple[str, ...]:
    """The configured sports with an unsettled match kicking off in (``now``, ``now`` +
    lead] whose window (its last lead minutes) no stored fetch of the sport came in, in
    the settings' order. A match known by its date only has no window."""
    lead = dt.timedelta(minutes=settings.closing_line_minutes)
    sport_of = {competition_code(sport): sport for sport in settings.odds_api_sports}
    latest_kickoffs = session.execute(
        select(Competition.code, func.max(Match.kickoff))
        .join(Match, Match.competition_id == Competition.id)
        .where(
            Competition.code.in_(sport_of),
            Match.kickoff > now,
            Match.kickoff <= now + lead,
            Match.result.is_(None),
            Match.kickoff_time_known.is_(True),
        )
        .group_by(Competition.code)
    ).all()
    soon = {sport_of[code]: kickoff for code, kickoff in latest_kickoffs}
    fetched = last_fetched(session, settings.odds_api_url, tuple(soon))
    # Every match of the sport in the window is covered once a fetch came inside the
    # window of the latest of them.
    due = {
        sport
        for sport, kickoff in soon.items()
        if sport not in fetched or fetched[sport] < kickoff - lead
    }
    return tuple(sport for sport in settings.odds_api_sports if sport in due)


def fetch_closing_lines(
    factory: sessionmaker[Session],
    settings: Settings,
    *,
    trigger: RunTrigger,
    clock: Clock = utcnow,
    stop: Stop | None = None,
    sleep: Callable[[float], None] | None = None,
) -> OddsApiFetch | None:
    """Fetch the sports :func:`sports_due` names, as one run of The Odds API's feed (recorded
    with the feed's runs); None, with no request sent and nothing recorded, when none is
    due."""
    with factory() as session:
        due = sports_due(session, settings, clock())
    if not due:
        log.debug("closing line: no sport has a match kicking off soon that is not fetched")
        return None
    log.info("closing line: fetching %s", ", ".join(due))
    return fetch_the_odds_api(
        factory, settings, trigger=trigger, sports=due, sleep=sleep, clock=clock, stop=stop
    )


def closing_line_job(
    engine: Engine, settings: Settings, *, clock: Clock = utcnow, stop: Stop | None = None
) -> None:
    """One run on the schedule, which ``stop`` ends at once; it never raises."""

    def fetch(factory: sessionmaker[Session]) -> None:
        trigger = RunTrigger.SCHEDULER
        fetch_closing_lines(factory, settings, trigger=trigger, clock=clock, stop=stop)

    scheduled_fetch(
        engine, fetch, "scheduled fetch of the closing line failed; the next one is on schedule"
    )
