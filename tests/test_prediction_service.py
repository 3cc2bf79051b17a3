"""The prediction service on a real database: one model version per answer, whatever
happens to the active version while the answer is being made."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import Engine, event, select
from sqlalchemy.orm import Session

from app.db.engine import make_engine, make_session_factory
from app.db.orm import Bookmaker, Match, ModelVersion, OddsQuote, utcnow
from app.domain.prediction import MatchInfo, QuotedMatch, QuotedOdds, StoredQuotes
from app.domain.value import ENSEMBLE_SOURCE, ValueTerms
from app.domain.vocabulary import ActivatedBy, Method, Phase, RunTrigger
from app.services.ingest.latest import refresh_latest_quotes
from app.services.model_versions import activate
from app.services.prediction import PredictionAnswer, PredictionService
from app.services.refit import run_refit
from app.services.serving import ModelCache
from app.settings import Settings
from tests.apps import REFIT_UNTIL as UNTIL
from tests.plugins.predictions import power_probabilities


@pytest.fixture
def seeded_engine(refit_settings: Settings) -> Iterator[Engine]:
    """An engine on the seeded database the refits below write to."""
    engine = make_engine(refit_settings.database_url)
    yield engine
    engine.dispose()


def service_for(engine: Engine, models: ModelCache) -> PredictionService:
    return PredictionService(engine=engine, models=models, answer_ttl_seconds=60.0)


def models_for(settings: Settings, engine: Engine) -> ModelCache:
    """The active model, with the settings' method and phase before the first fit."""
    return ModelCache(
        make_session_factory(engine),
        default_method=settings.demargin_method,
        default_phase=settings.refit_phase,
    )


def activate_version(engine: Engine, version_id: int | None) -> None:
    with make_session_factory(engine).begin() as session:
        version = session.get(ModelVersion, version_id)
        assert version is not None
        activate(session, version, by=ActivatedBy.CLI)


def quotes_by_phase(engine: Engine, match_id: int, phase: Phase) -> dict[str, Any]:
    """Each bookmaker's de-margined probabilities (power method, solved by scipy) of the
    match's quotes of one phase, read straight from the table."""
    with Session(engine) as session:
        rows = session.execute(
            select(Bookmaker.code, OddsQuote.home, OddsQuote.draw, OddsQuote.away)
            .join(Bookmaker, OddsQuote.bookmaker_id == Bookmaker.id)
            .where(OddsQuote.match_id == match_id, OddsQuote.phase == phase)
        ).all()
    return {code: pytest.approx(list(power_probabilities(*prices))) for code, *prices in rows}


def used(answer: PredictionAnswer) -> dict[str, list[float]]:
    return {u.code: list(u.probabilities) for u in answer.prediction.used}


def test_a_model_swap_while_quotes_are_read_does_not_mix_two_versions(
    refit_settings: Settings, seeded_engine: Engine
) -> None:
    engine = seeded_engine
    # Version 1 learns from pre-match quotes, version 2 from closing ones: an answer that
    # read one version's quotes and mixed them with the other's weights would show.
    first_fit = run_refit(engine, refit_settings, trigger=RunTrigger.CLI, until=UNTIL)
    assert first_fit.status == "succeeded", first_fit.message
    models = models_for(refit_settings, engine)
    models.refresh()
    closing = refit_settings.model_copy(update={"refit_phase": Phase.CLOSING})
    second_fit = run_refit(engine, closing, trigger=RunTrigger.CLI, until=UNTIL)
    activate_version(engine, second_fit.version_id)
    with Session(engine) as session:
        match_id = session.scalar(
            select(Match.id).where(Match.season == "2017/18").order_by(Match.id).limit(1)
        )
    assert match_id is not None
    service = service_for(engine, models)

    swapped: list[bool] = []

    def swap_while_quotes_are_read(*args: Any) -> None:
        # The background refresher may swap the model at any moment; here it does so at
        # the worst one, while the service reads the stored quotes.
        if not swapped and "odds_quotes" in str(args[2]):
            swapped.append(True)
            assert models.refresh()

    event.listen(engine, "before_cursor_execute", swap_while_quotes_are_read)
    (during,) = asyncio.run(service.answer([match_id]))
    (after,) = asyncio.run(service.answer([match_id]))
    event.remove(engine, "before_cursor_execute", swap_while_quotes_are_read)

    assert swapped
    assert isinstance(during, PredictionAnswer)
    assert during.model is not None
    assert (during.model.version, during.model.phase) == (1, Phase.PRE)
    pre = quotes_by_phase(engine, match_id, Phase.PRE)
    assert used(during) == {code: pre[code] for code in used(during)}
    # Once the swap is done, the answer is the new version's, from its own quotes: the
    # answer made with version 1 was not kept as version 2's.
    assert isinstance(after, PredictionAnswer)
    assert after.model is not None
    assert (after.model.version, after.model.phase) == (2, Phase.CLOSING)
    closing_quotes = quotes_by_phase(engine, match_id, Phase.CLOSING)
    assert used(after)
    assert used(after) == {code: closing_quotes[code] for code in used(after)}


def test_with_a_closing_odds_model_active_an_upcoming_match_is_predicted_from_its_pre_quotes(
    refit_settings: Settings, seeded_engine: Engine
) -> None:
    engine = seeded_engine
    closing = refit_settings.model_copy(update={"refit_phase": Phase.CLOSING})
    fit = run_refit(engine, closing, trigger=RunTrigger.CLI, until=UNTIL)
    assert fit.version_id is not None, fit.message
    activate_version(engine, fit.version_id)
    # An upcoming match: only pre-match quotes exist before kickoff.
    with make_session_factory(engine, for_writes=True).begin() as session:
        played = session.scalars(select(Match).order_by(Match.id.desc()).limit(1)).one()
        upcoming = Match(
            competition_id=played.competition_id,
            season="2030/31",
            kickoff=dt.datetime(2030, 8, 10, 15, tzinfo=dt.UTC),
            kickoff_date=dt.date(2030, 8, 10),
            kickoff_time_known=True,
            home_team_id=played.home_team_id,
            away_team_id=played.away_team_id,
        )
        session.add(upcoming)
        session.flush()
        for code, prices in (("B365", (2.1, 3.4, 3.6)), ("PS", (2.15, 3.45, 3.55))):
            bookmaker_id = session.scalars(select(Bookmaker.id).where(Bookmaker.code == code)).one()
            home, draw, away = prices
            session.add(
                OddsQuote(
                    match_id=upcoming.id,
                    bookmaker_id=bookmaker_id,
                    phase=Phase.PRE,
                    home=home,
                    draw=draw,
                    away=away,
                    captured_at=dt.datetime(2030, 8, 9, tzinfo=dt.UTC),
                )
            )
        session.flush()
        refresh_latest_quotes(session, [upcoming.id], utcnow())
        upcoming_id, played_id = upcoming.id, played.id
    models = models_for(refit_settings, engine)
    models.refresh()
    service = service_for(engine, models)
    upcoming_answer, played_answer = asyncio.run(service.answer([upcoming_id, played_id]))
    assert isinstance(upcoming_answer, PredictionAnswer), upcoming_answer
    assert upcoming_answer.model is not None
    assert upcoming_answer.model.phase == Phase.CLOSING
    assert upcoming_answer.quotes == StoredQuotes(Phase.PRE, fallback=True)
    pre = quotes_by_phase(engine, upcoming_id, Phase.PRE)
    pool = set(upcoming_answer.model.bookmakers)
    assert used(upcoming_answer) == {code: pre[code] for code in pre if code in pool} != {}
    # A played match has closing quotes: those are read, as the model asks.
    assert isinstance(played_answer, PredictionAnswer), played_answer
    assert played_answer.quotes == StoredQuotes(Phase.CLOSING, fallback=False)
    closing_quotes = quotes_by_phase(engine, played_id, Phase.CLOSING)
    assert used(played_answer) == {code: closing_quotes[code] for code in used(played_answer)}


def test_value_is_judged_by_each_request_s_terms_and_the_model_s_method(
    refit_settings: Settings, seeded_engine: Engine
) -> None:
    engine = seeded_engine
    fit = run_refit(engine, refit_settings, trigger=RunTrigger.CLI, until=UNTIL)
    assert fit.status == "succeeded", fit.message
    # The service's own method differs from the model's: value must use the model's.
    models = ModelCache(make_session_factory(engine), default_method=Method.MULTIPLICATIVE)
    models.refresh()
    assert models.ensemble is not None
    assert models.ensemble.method == Method.POWER
    with Session(engine) as session:
        match_id = session.scalar(select(Match.id).order_by(Match.id).limit(1))
    assert match_id is not None
    defaults = ValueTerms(min_ev=0.0, bankroll=100.0, source=ENSEMBLE_SOURCE)
    service = PredictionService(
        engine=engine, models=models, answer_ttl_seconds=60.0, default_terms=defaults
    )
    inline = QuotedMatch(
        MatchInfo(), [QuotedOdds("PS", 2.15, 3.45, 3.55), QuotedOdds("B365", 2.3, 3.2, 3.3)]
    )
    own = ValueTerms(source="Pinnacle", bookmakers=frozenset({"B365"}))
    answers = asyncio.run(service.answer([inline, inline, match_id], [None, own, None]))
    by_default, by_own, kept = answers
    assert isinstance(by_default, PredictionAnswer)
    assert isinstance(by_own, PredictionAnswer)
    assert by_default.terms == defaults
    assert by_default.value.source == ENSEMBLE_SOURCE
    served = by_default.prediction.probabilities
    assert [o.probability for o in by_default.value.outcomes] == list(served)
    assert [o.price for o in by_default.value.outcomes] == [2.3, 3.45, 3.55]
    # Pinnacle's line de-margined by the power method (solved by scipy), not the
    # service's multiplicative default.
    assert by_own.terms == own
    assert by_own.value.source == "PS"  # the link, as its code
    line = power_probabilities(2.15, 3.45, 3.55)
    assert [o.probability for o in by_own.value.outcomes] == pytest.approx(list(line))
    assert line[0] != pytest.approx((1 / 2.15) / (1 / 2.15 + 1 / 3.45 + 1 / 3.55), abs=1e-4)
    assert [(o.bookmaker, o.price) for o in by_own.value.outcomes] == [
        ("B365", 2.3),
        ("B365", 3.2),
        ("B365", 3.3),
    ]
    assert by_own.prediction == by_default.prediction
    # By match_id: the answer kept is the default terms' one; the request's own terms get
    # a copy of it with their own value, and the kept answer is served again unchanged.
    assert isinstance(kept, PredictionAnswer)
    assert kept.terms == defaults
    match_by_own, again = asyncio.run(service.answer([match_id, match_id], [own, None]))
    assert isinstance(match_by_own, PredictionAnswer)
    assert match_by_own.terms == own
    assert match_by_own.prediction is kept.prediction
    assert match_by_own.value != kept.value
    assert again is kept
    (without_terms,) = asyncio.run(service.answer([match_id]))
    assert without_terms is kept
