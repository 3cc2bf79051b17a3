"""The prediction service on a real database: one model version per answer, whatever
happens to the active version while the answer is being made."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import Engine, event, select
from sqlalchemy.orm import Session

from app.db.engine import make_engine, make_session_factory
from app.db.orm import Bookmaker, Match, ModelVersion, OddsQuote
from app.domain.vocabulary import ActivatedBy, Phase, RunTrigger
from app.services.model_versions import activate
from app.services.prediction import PredictionAnswer, PredictionService
from app.services.refit import run_refit
from app.services.serving import ModelCache
from app.settings import Settings
from tests.test_predict import UNTIL, power_probabilities


@pytest.fixture
def seeded_engine(refit_settings: Settings) -> Iterator[Engine]:
    """An engine on the seeded database the refits below write to."""
    engine = make_engine(refit_settings.database_url)
    yield engine
    engine.dispose()


def service_for(settings: Settings, engine: Engine, models: ModelCache) -> PredictionService:
    return PredictionService(
        engine=engine,
        models=models,
        answer_ttl_seconds=60.0,
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
    models = ModelCache(make_session_factory(engine))
    models.refresh()
    closing = refit_settings.model_copy(update={"refit_phase": Phase.CLOSING})
    second_fit = run_refit(engine, closing, trigger=RunTrigger.CLI, until=UNTIL)
    activate_version(engine, second_fit.version_id)
    with Session(engine) as session:
        match_id = session.scalar(
            select(Match.id).where(Match.season == "2017/18").order_by(Match.id).limit(1)
        )
    assert match_id is not None
    service = service_for(refit_settings, engine, models)

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
