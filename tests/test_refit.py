"""The refit: training window, validated rounds, versions, promotion, failures, the lock."""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import signal
from collections.abc import Callable, Iterator
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import JSON, Engine, bindparam, select, text

from app.db.engine import make_engine, make_session_factory, session_scope
from app.db.orm import ModelActivation, ModelVersion, OddsQuote, RefitRun
from app.domain.version_records import BookmakerWeight
from app.domain.vocabulary import (
    ActivatedBy,
    FitTarget,
    Method,
    Phase,
    RunStatus,
    RunTrigger,
    VersionStatus,
)
from app.services import refit as refit_service
from app.services.locks import refit_lock
from app.services.model_versions import activate, load_tables
from app.services.refit import run_refit
from app.services.refit_runs import create_run
from app.settings import Settings, settings_environment
from boosting import AdaBoostM2, StopReason
from tests.apps import ADMIN_KEY, REFIT_SEASONS, REFIT_UNTIL
from tests.commands import Oddsboost
from tests.helpers import HAND_MADE_VALIDATION, csv_rows, wait_until
from tests.processes import FitGate, Process, child_environment, running

UNTIL = REFIT_UNTIL
REFIT = ["refit", "--until", UNTIL.isoformat()]


@pytest.fixture
def engine(refit_settings: Settings) -> Iterator[Engine]:
    engine = make_engine(refit_settings.database_url)
    yield engine
    engine.dispose()


def versions(engine: Engine) -> list[ModelVersion]:
    with make_session_factory(engine)() as session:
        return list(session.scalars(select(ModelVersion).order_by(ModelVersion.id)))


def runs(engine: Engine) -> list[RefitRun]:
    with make_session_factory(engine)() as session:
        return list(session.scalars(select(RefitRun).order_by(RefitRun.id)))


def stored_json(engine: Engine, version_id: int) -> dict[str, Any]:
    """A version's JSON columns as the database holds them, read past the ORM's records."""
    with engine.connect() as connection:
        row = connection.execute(
            text("SELECT bookmakers, rounds_grid, validation FROM model_versions WHERE id = :id"),
            {"id": version_id},
        ).one()
    # SQLite gives the JSON text, PostgreSQL the parsed value.
    return {
        column: json.loads(value) if isinstance(value, str) else value
        for column, value in zip(("bookmakers", "rounds_grid", "validation"), row, strict=True)
    }


def test_a_refit_stores_and_activates_a_version(engine: Engine, refit_settings: Settings) -> None:
    outcome = run_refit(engine, refit_settings, trigger=RunTrigger.CLI, until=UNTIL)
    assert outcome.status == "succeeded", outcome.message
    (version,) = versions(engine)
    assert version.status == "active"
    assert version.activated_at is not None
    assert version.algorithm == "adaboost.m2"
    assert (version.method, version.phase) == ("power", "pre")
    assert version.rounds in refit_settings.refit_rounds_grid
    assert [g.rounds for g in version.rounds_grid] == refit_settings.refit_rounds_grid
    best = min(version.rounds_grid, key=lambda g: (g.log_loss, g.rounds))
    assert best.rounds == version.rounds
    # Three seasons of two leagues: 2 x 3 x 380 matches, all before 1 June 2018.
    assert version.n_matches == 2280
    assert version.window_end == UNTIL
    assert version.window_start == UNTIL - dt.timedelta(days=refit_settings.refit_window_days)
    codes = [b.code for b in version.bookmakers]
    assert codes == sorted(codes)
    assert {"B365", "PS", "WH"} <= set(codes)
    for bookmaker in version.bookmakers:
        assert math.isfinite(bookmaker.weight)
        assert bookmaker.weight >= 0
    assert sum(b.selection_count for b in version.bookmakers) == version.validation.rounds_run
    validation = version.validation
    assert validation.rows == round(2280 * 0.2)
    assert validation.fit_rows == 2280 - validation.rows
    for forecast in (validation.model, validation.consensus):
        assert {field.name for field in fields(forecast)} == {
            "log_loss",
            "brier",
            "rps",
            "accuracy",
        }
        assert 0.8 < forecast.log_loss < 1.2
    assert set(validation.bookmakers) == set(codes)
    assert validation.active_version is None  # nothing to compare with yet
    assert "active_version" not in stored_json(engine, version.id)["validation"]
    (run,) = runs(engine)
    assert (run.status, run.version_id, run.trigger) == ("succeeded", version.id, "cli")
    assert run.finished_at is not None
    assert run.until == UNTIL


def test_a_refit_records_the_activation_of_its_version(
    engine: Engine, refit_settings: Settings
) -> None:
    outcome = run_refit(engine, refit_settings, trigger=RunTrigger.CLI, until=UNTIL)
    assert outcome.status == "succeeded", outcome.message
    with make_session_factory(engine)() as session:
        (activation,) = session.scalars(select(ModelActivation))
        version = session.get(ModelVersion, outcome.version_id)
    assert version is not None
    assert activation.version_id == outcome.version_id
    assert activation.activated_by is ActivatedBy.REFIT
    assert activation.run_id == outcome.run_id
    assert (activation.previous_version_id, activation.reason) == (None, None)
    assert activation.activated_at == version.activated_at


SCORE_KEYS = ["log_loss", "brier", "rps", "accuracy"]


def test_a_version_stores_its_records_as_the_json_it_always_stored(
    engine: Engine, refit_settings: Settings
) -> None:
    run_refit(engine, refit_settings, trigger=RunTrigger.CLI, until=UNTIL)
    (version,) = versions(engine)
    stored = stored_json(engine, version.id)
    assert stored["bookmakers"] == [
        {"code": b.code, "weight": b.weight, "chosen": b.selection_count}
        for b in version.bookmakers
    ]
    assert [list(b) for b in stored["bookmakers"]] == [["code", "weight", "chosen"]] * len(
        version.bookmakers
    )
    assert stored["rounds_grid"] == [
        {"rounds": g.rounds, "log_loss": g.log_loss} for g in version.rounds_grid
    ]
    assert all(type(g["rounds"]) is int for g in stored["rounds_grid"])
    validation = stored["validation"]
    assert list(validation) == [
        "rows",
        "model",
        "consensus",
        "bookmakers",
        "fit_rows",
        "dropped",
        "stop_reason",
        "rounds_run",
        "options",
        "method_scores",
        "left_out",
        "fit_targets",
    ]
    assert list(validation["model"]) == list(validation["consensus"]) == SCORE_KEYS
    assert validation["model"]["log_loss"] == version.validation.model.log_loss
    for code, entry in validation["bookmakers"].items():
        assert list(entry) == ["rows", *SCORE_KEYS, "model_log_loss"]
        assert entry["brier"] == version.validation.bookmakers[code].scores.brier
    assert validation["stop_reason"] == version.validation.stop_reason
    assert validation["stop_reason"] in set(StopReason)
    assert validation["options"] == {
        "rounds_grid": refit_settings.refit_rounds_grid,
        "validation_fraction": refit_settings.refit_validation_fraction,
        "phase": "pre",
        "methods": ["power"],
        "bookmakers": None,
        "min_quotes": refit_settings.refit_min_quotes,
        "half_life_days": None,
        "calibrate": False,
        "recent_days": refit_settings.refit_pool_recent_days,
        "recent_share": refit_settings.refit_pool_recent_share,
        "fit_target": "close",
        "closing_window_minutes": refit_settings.closing_window_minutes,
    }
    # The season files' matches with Pinnacle's closing prices were fitted toward them.
    with make_session_factory(engine)() as session:
        _, quotes = load_tables(session, start=version.window_start, end=version.window_end)
    pinnacle_closed = (quotes.bookmaker == "PS") & (quotes.phase == Phase.CLOSING)
    closed = np.intersect1d(quotes.match[quotes.phase == Phase.PRE], quotes.match[pinnacle_closed])
    assert validation["fit_targets"] == {
        "closes": len(closed),
        "results": version.n_matches - len(closed),
    }
    assert validation["left_out"] == {}  # every bookmaker of the window still quoted
    assert validation["method_scores"] == {"power": validation["model"]["log_loss"]}


def test_versions_of_the_first_refits_read_and_are_served_as_stored(
    engine: Engine, refit_settings: Settings
) -> None:
    from fastapi.testclient import TestClient

    from app.main import create_app

    run_refit(engine, refit_settings, trigger=RunTrigger.CLI, until=UNTIL)
    (version,) = versions(engine)
    stored = stored_json(engine, version.id)
    # The first refits recorded neither the fitting options, nor the score of each method,
    # nor the bookmakers left out of the pool.
    first = {
        key: value
        for key, value in stored["validation"].items()
        if key not in ("options", "method_scores", "left_out", "fit_targets")
    }
    with engine.begin() as connection:
        connection.execute(
            text("UPDATE model_versions SET validation = :validation WHERE id = :id").bindparams(
                bindparam("validation", type_=JSON)
            ),
            {"validation": first, "id": version.id},
        )
    (read,) = versions(engine)
    assert (read.validation.options, read.validation.method_scores) == (None, None)
    assert read.validation.left_out is None
    assert read.validation.rounds_run == version.validation.rounds_run
    with TestClient(create_app(refit_settings)) as client:
        served = client.get(f"/models/{version.id}").json()
    # The same keys in the same order, and the same values with the same JSON types.
    assert json.dumps(served["validation"]) == json.dumps(first)
    assert json.dumps(served["bookmakers"]) == json.dumps(stored["bookmakers"])
    assert json.dumps(served["rounds_grid"]) == json.dumps(stored["rounds_grid"])
    assert stored_json(engine, version.id)["validation"] == first  # reading changed nothing


@pytest.mark.parametrize("target", list(FitTarget))
def test_the_stored_weights_are_a_refit_on_the_whole_window(
    engine: Engine, refit_settings: Settings, target: FitTarget
) -> None:
    from app.domain.flags import closing_quotes
    from app.domain.training import build_training_set, with_fit_targets

    settings = refit_settings.model_copy(update={"refit_fit_target": target})
    run_refit(engine, settings, trigger=RunTrigger.CLI, until=UNTIL)
    (version,) = versions(engine)
    with make_session_factory(engine)() as session:
        matches, quotes = load_tables(session, start=version.window_start, end=version.window_end)
    training = build_training_set(matches, quotes, phase=Phase.PRE, method="power", min_quotes=100)
    model = AdaBoostM2(n_rounds=version.rounds)
    if target == FitTarget.RESULT:
        expected = model.fit(training.H, training.y)
    else:
        window = dt.timedelta(minutes=settings.closing_window_minutes)
        close_quote = closing_quotes(matches, quotes, window).quote
        targets = with_fit_targets(training, matches, quotes, target, close_quote).targets
        assert targets is not None
        expected = model.fit_targets(training.H, targets)
    assert [b.code for b in version.bookmakers] == list(training.bookmakers)
    assert [b.weight for b in version.bookmakers] == pytest.approx(
        expected.hypothesis_weights_.tolist()
    )


def test_the_window_excludes_later_matches(engine: Engine, refit_settings: Settings) -> None:
    outcome = run_refit(
        engine, refit_settings, trigger=RunTrigger.CLI, until=dt.datetime(2017, 6, 1, tzinfo=dt.UTC)
    )
    assert outcome.status == "succeeded"
    assert versions(engine)[0].n_matches == 2 * 2 * 380


def test_too_few_matches_fails_with_advice(engine: Engine, refit_settings: Settings) -> None:
    outcome = run_refit(
        engine, refit_settings, trigger=RunTrigger.CLI, until=dt.datetime(2015, 9, 1, tzinfo=dt.UTC)
    )
    assert outcome.status == "failed"
    assert "at least 200 are needed" in outcome.message
    assert "oddsboost import football-data" in outcome.message
    assert versions(engine) == []
    assert runs(engine)[0].status == "failed"


def test_a_failing_fit_leaves_the_active_model(
    engine: Engine, refit_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_refit(engine, refit_settings, trigger=RunTrigger.CLI, until=UNTIL)

    def broken_fit(*_args: Any, **_kwargs: Any) -> None:
        raise FloatingPointError("injected failure inside the fit")

    monkeypatch.setattr(AdaBoostM2, "fit", broken_fit)
    outcome = run_refit(engine, refit_settings, trigger=RunTrigger.CLI, until=UNTIL)
    assert outcome.status == "failed"
    assert "FloatingPointError: injected failure inside the fit" in outcome.message
    assert "active model is unchanged" in outcome.message
    (version,) = versions(engine)
    assert version.status == "active"


SYNTHETIC_QUOTES = 600  # the latest matches: more than the 456 validation matches


def _synthetic_quote(match_id: int, bookmaker_id: int, favourite: int) -> OddsQuote:
    """A pre-match quote at 1.3 on outcome ``favourite`` (0, 1, 2 for 1, X, 2), 6.0 on the
    others."""
    prices = [6.0, 6.0, 6.0]
    prices[favourite] = 1.3
    home, draw, away = prices
    return OddsQuote(
        match_id=match_id,
        bookmaker_id=bookmaker_id,
        phase="pre",
        home=home,
        draw=draw,
        away=away,
        received_at=dt.datetime.now(dt.UTC),
    )


def _hand_made_active_version(engine: Engine, code: str, truthful: bool) -> None:
    """Quotes from a synthetic bookmaker for the latest matches before UNTIL, priced from
    the actual result (truthful) or against it, and an active version that trusts only it.

    A refit with ODDSBOOST_REFIT_MIN_QUOTES above SYNTHETIC_QUOTES leaves that bookmaker out
    of its own pool, while the comparison still reads the active version's quotes."""
    from app.db.orm import Bookmaker, Match

    factory = make_session_factory(engine, for_writes=True)
    with session_scope(factory) as session:
        bookmaker = Bookmaker(code=code, name=code)
        session.add(bookmaker)
        session.flush()
        latest = session.scalars(
            select(Match)
            .where(Match.result.is_not(None), Match.kickoff < UNTIL)
            .order_by(Match.kickoff.desc(), Match.id.desc())
            .limit(SYNTHETIC_QUOTES)
        )
        for match in latest:
            favourite = {"1": 0, "X": 1, "2": 2}[match.result or "X"]
            if not truthful:
                favourite = (favourite + 1) % 3
            session.add(_synthetic_quote(match.id, bookmaker.id, favourite))
        version = ModelVersion(
            algorithm="adaboost.m2",
            method="power",
            phase="pre",
            rounds=1,
            window_start=UNTIL - dt.timedelta(days=1095),
            window_end=UNTIL,
            n_matches=1,
            bookmakers=(BookmakerWeight(code, 1.0, selection_count=1),),
            rounds_grid=(),
            validation=HAND_MADE_VALIDATION,
            project_version="test",
            fit_seconds=0.0,
        )
        session.add(version)
        session.flush()
        activate(session, version, by=ActivatedBy.CLI)


def test_a_worse_version_is_rejected_and_kept(engine: Engine, refit_settings: Settings) -> None:
    # The active version trusts a bookmaker that always knew the result; the new fit must
    # leave that bookmaker out (too few quotes), so it is far worse on the same matches.
    _hand_made_active_version(engine, "ORACLE", truthful=True)
    strict = refit_settings.model_copy(update={"refit_min_quotes": SYNTHETIC_QUOTES + 1})
    outcome = run_refit(engine, strict, trigger=RunTrigger.CLI, until=UNTIL)
    assert outcome.status == "rejected", outcome.message
    active, rejected = versions(engine)
    assert active.status == "active"
    assert rejected.status == "rejected"
    assert rejected.rejected_reason is not None
    assert "worse than active version" in rejected.rejected_reason
    comparison = rejected.validation.active_version
    assert comparison is not None
    assert comparison.id == active.id
    assert comparison.rows == rejected.validation.rows
    assert comparison.log_loss is not None
    assert comparison.model_log_loss is not None
    assert comparison.log_loss < comparison.model_log_loss
    assert runs(engine)[-1].status == "rejected"


def test_a_better_version_replaces_the_active_one(engine: Engine, refit_settings: Settings) -> None:
    _hand_made_active_version(engine, "LIAR", truthful=False)
    strict = refit_settings.model_copy(update={"refit_min_quotes": SYNTHETIC_QUOTES + 1})
    outcome = run_refit(engine, strict, trigger=RunTrigger.CLI, until=UNTIL)
    assert outcome.status == "succeeded", outcome.message
    old, new = versions(engine)
    assert (old.status, new.status) == ("retired", "active")
    comparison = new.validation.active_version
    assert comparison is not None
    assert comparison.log_loss is not None
    assert comparison.log_loss > new.validation.model.log_loss


def test_a_fit_on_another_phase_is_stored_but_never_promoted(
    engine: Engine, refit_settings: Settings
) -> None:
    # Closing quotes always validate better than pre-match ones: compared on its own quotes,
    # a closing-odds fit would replace the pre-match model that predictions need.
    first = run_refit(engine, refit_settings, trigger=RunTrigger.CLI, until=UNTIL)
    assert first.status == "succeeded", first.message
    closing = refit_settings.model_copy(update={"refit_phase": Phase.CLOSING})
    outcome = run_refit(engine, closing, trigger=RunTrigger.CLI, until=UNTIL)
    assert outcome.status == "rejected", outcome.message
    active, stored = versions(engine)
    assert (active.status, active.phase) == ("active", "pre")
    assert (stored.status, stored.phase, stored.id) == ("rejected", "closing", outcome.version_id)
    assert stored.rejected_reason == (
        f"fitted on closing quotes while the active version {active.id} uses pre-match quotes; "
        f"activate it with `oddsboost models activate {stored.id}` if that is what you want"
    )
    assert outcome.message.startswith(
        f"version {stored.id} rejected: {stored.rejected_reason}. Fitted toward the close on "
    )
    assert runs(engine)[-1].status == "rejected"


def test_a_fit_with_another_method_is_stored_but_never_promoted(
    engine: Engine, refit_settings: Settings
) -> None:
    run_refit(engine, refit_settings, trigger=RunTrigger.CLI, until=UNTIL)
    shin = refit_settings.model_copy(update={"demargin_method": Method.SHIN})
    outcome = run_refit(engine, shin, trigger=RunTrigger.CLI, until=UNTIL)
    assert outcome.status == "rejected", outcome.message
    active, stored = versions(engine)
    assert (active.status, active.method, stored.method) == ("active", "power", "shin")
    assert stored.rejected_reason is not None
    assert stored.rejected_reason.startswith(
        f"odds de-margined with shin while the active version {active.id} uses power; "
    )


def _turncoat(engine: Engine, code: str) -> None:
    """A bookmaker that quoted every settled match before UNTIL: priced from the actual
    result, except for the latest SYNTHETIC_QUOTES matches, priced against it.

    The rounds are chosen on the earlier part of the window, where it looks all-knowing;
    on the latest part, the validation part, a mix that trusts it is far worse than the
    plain mean of the pool's quotes."""
    from app.db.orm import Bookmaker, Match

    factory = make_session_factory(engine, for_writes=True)
    with session_scope(factory) as session:
        bookmaker = Bookmaker(code=code, name=code)
        session.add(bookmaker)
        session.flush()
        settled = session.scalars(
            select(Match)
            .where(Match.result.is_not(None), Match.kickoff < UNTIL)
            .order_by(Match.kickoff.desc(), Match.id.desc())
        )
        for age, match in enumerate(settled):
            favourite = {"1": 0, "X": 1, "2": 2}[match.result or "X"]
            if age < SYNTHETIC_QUOTES:
                favourite = (favourite + 1) % 3
            session.add(_synthetic_quote(match.id, bookmaker.id, favourite))


def test_a_fit_worse_than_its_own_consensus_is_not_promoted(
    engine: Engine, refit_settings: Settings
) -> None:
    _turncoat(engine, "TURNCOAT")
    # Priced from the results, it looks all-knowing to a fit on the results.
    on_results = refit_settings.model_copy(update={"refit_fit_target": FitTarget.RESULT})
    outcome = run_refit(engine, on_results, trigger=RunTrigger.CLI, until=UNTIL)
    assert outcome.status == "rejected", outcome.message
    (version,) = versions(engine)
    assert version.status == "rejected"
    assert "TURNCOAT" in [b.code for b in version.bookmakers]
    model, consensus = version.validation.model.log_loss, version.validation.consensus.log_loss
    assert model - consensus > refit_settings.promotion_tolerance
    assert version.rejected_reason == (
        f"validation log loss {model:.4f} is worse than the consensus of its own pool's "
        f"{consensus:.4f} on the same {version.validation.rows} matches by "
        f"{model - consensus:.4f}, more than the tolerance {refit_settings.promotion_tolerance}; "
        f"activate it with `oddsboost models activate {version.id}` if that is what you want"
    )
    assert runs(engine)[-1].message == f"version {version.id} rejected: {version.rejected_reason}"


def test_a_refit_identical_to_the_active_version_stores_no_version(
    engine: Engine, refit_settings: Settings
) -> None:
    first = run_refit(engine, refit_settings, trigger=RunTrigger.CLI, until=UNTIL)
    assert first.status == "succeeded", first.message
    # Ten days later, still before the next season: the same matches, the same fit.
    for until in (UNTIL, UNTIL + dt.timedelta(days=10)):
        again = run_refit(engine, refit_settings, trigger=RunTrigger.CLI, until=until)
        assert again.status == "succeeded", again.message
        assert again.message == f"unchanged: identical to active version {first.version_id}"
        assert again.version_id == first.version_id
    assert [version.id for version in versions(engine)] == [first.version_id]
    assert [(run.status, run.version_id) for run in runs(engine)] == [
        ("succeeded", first.version_id)
    ] * 3
    with make_session_factory(engine)() as session:
        assert len(session.scalars(select(ModelActivation)).all()) == 1


def test_a_refit_on_other_matches_or_with_other_weights_is_a_new_version(
    engine: Engine, refit_settings: Settings
) -> None:
    run_refit(engine, refit_settings, trigger=RunTrigger.CLI, until=UNTIL)
    (first,) = versions(engine)
    # The same matches, but one round only: other weights.
    one_round = refit_settings.model_copy(update={"refit_rounds_grid": [1]})
    run_refit(engine, one_round, trigger=RunTrigger.CLI, until=UNTIL)
    # The last matchday of SP1 2017/18 (20 May 2018) left out: other matches.
    earlier = dt.datetime(2018, 5, 19, tzinfo=dt.UTC)
    run_refit(engine, refit_settings, trigger=RunTrigger.CLI, until=earlier)
    first_again, one_round_version, earlier_version = versions(engine)
    assert first_again.id == first.id
    assert one_round_version.n_matches == first.n_matches
    assert one_round_version.rounds == 1 != first.rounds
    assert earlier_version.n_matches < first.n_matches


def test_exactly_one_version_is_active(engine: Engine, refit_settings: Settings) -> None:
    for _ in range(3):
        run_refit(engine, refit_settings, trigger=RunTrigger.CLI, until=UNTIL)
    statuses = [v.status for v in versions(engine)]
    assert statuses.count(VersionStatus.ACTIVE) == 1
    assert statuses[-1] == "active"


def test_a_second_refit_is_skipped_while_the_lock_is_held(
    engine: Engine, refit_settings: Settings, oddsboost: Oddsboost
) -> None:
    with refit_lock(engine) as held:
        assert held.taken
        with refit_lock(engine) as again:
            assert not again.taken
        result = oddsboost.run(*REFIT, env=settings_environment(refit_settings))
    assert result.returncode == 0, result.stderr
    assert "skipped" in result.stdout
    assert "another refit is running" in result.stdout
    assert runs(engine)[-1].status == "skipped"
    assert versions(engine) == []
    with refit_lock(engine) as held:
        assert held.taken  # released by the holder


@pytest.mark.slow
def test_a_refit_started_during_another_is_skipped(
    engine: Engine,
    refit_settings: Settings,
    oddsboost: Oddsboost,
    fit_gate: FitGate,
    tmp_path: Path,
) -> None:
    # The first refit, a process of its own, holds the lock and waits at the gate; the
    # second starts while it is running.
    environment = child_environment(refit_settings, **fit_gate.environment())
    with running(REFIT, environment, tmp_path / "first.log") as first:
        fit_gate.wait_until_reached(first)
        assert any(run.status == "running" for run in runs(engine))
        second = oddsboost.run(*REFIT, env=settings_environment(refit_settings))
        assert second.returncode == 0
        assert "skipped" in second.stdout
        fit_gate.release()
        assert first.wait() == 0, first.output()
    assert [run.status for run in runs(engine)] == ["succeeded", "skipped"]
    assert [v.status for v in versions(engine)] == ["active"]


def test_a_refit_that_lost_its_lock_stores_nothing(
    engine: Engine, refit_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from contextlib import contextmanager

    from app.services.locks import RunLock

    @contextmanager
    def lost_lock(_engine: Engine) -> Iterator[RunLock]:
        yield RunLock(True, lambda _session: False)

    monkeypatch.setattr(refit_service, "refit_lock", lost_lock)
    outcome = run_refit(engine, refit_settings, trigger=RunTrigger.CLI, until=UNTIL)
    assert outcome.status == "failed"
    assert "lost the refit lock" in outcome.message
    assert versions(engine) == []


@pytest.mark.skipif(
    not os.environ.get("ODDSBOOST_TEST_DATABASE_URL", "").startswith("postgres"),
    reason="the advisory lock is PostgreSQL's; SQLite's file lock ends only with its process",
)
def test_the_advisory_lock_knows_when_its_connection_ended(engine: Engine) -> None:
    from sqlalchemy import text

    factory = make_session_factory(engine)
    with refit_lock(engine) as held:
        assert held.taken
        with factory() as session:
            assert held.still_held(session)
        with engine.connect() as admin:
            # Only this database's holder: other test processes refit in databases of their
            # own, under the same key. With a timeout, pg_terminate_backend waits until the
            # backend is gone (and its lock released), however loaded the server is.
            ended = (
                admin.execute(
                    text(
                        "SELECT pg_terminate_backend(pid, 60000) FROM pg_locks "
                        "WHERE locktype = 'advisory' AND objid = :key AND database = "
                        "(SELECT oid FROM pg_database WHERE datname = current_database())"
                    ),
                    {"key": refit_service_lock_key()},
                )
                .scalars()
                .all()
            )
            admin.commit()
            assert ended == [True]
        with factory() as session:
            assert not held.still_held(session)
        with refit_lock(engine) as other:
            assert other.taken  # the lock went with the connection


def refit_service_lock_key() -> int:
    from app.services.locks import REFIT, run_lock_key

    return run_lock_key(REFIT)


def test_runs_queued_but_never_started_are_closed(engine: Engine, refit_settings: Settings) -> None:
    from sqlalchemy import update

    factory = make_session_factory(engine, for_writes=True)
    stuck = create_run(factory, trigger=RunTrigger.API, until=UNTIL)
    fresh = create_run(factory, trigger=RunTrigger.API, until=UNTIL)
    with factory.begin() as session:
        session.execute(
            update(RefitRun)
            .where(RefitRun.id == stuck)
            .values(started_at=dt.datetime.now(dt.UTC) - dt.timedelta(minutes=10))
        )
    run_refit(engine, refit_settings, trigger=RunTrigger.CLI, until=UNTIL)
    by_id = {run.id: run for run in runs(engine)}
    assert by_id[stuck].status == "failed"
    assert "never started" in (by_id[stuck].message or "")
    assert by_id[fresh].status == "queued"  # still within its grace period


def test_a_validation_part_too_small_is_refused_with_advice(
    engine: Engine, refit_settings: Settings
) -> None:
    tiny = refit_settings.model_copy(update={"refit_validation_fraction": 0.001})
    outcome = run_refit(engine, tiny, trigger=RunTrigger.CLI, until=UNTIL)
    assert outcome.status == "failed"
    assert "ODDSBOOST_REFIT_VALIDATION_FRACTION" in outcome.message


def newest_settled_day(season_file: Callable[[str], Path]) -> dt.date:
    """The last day with a result in the seeded season files, read from the files."""
    days = []
    for name in REFIT_SEASONS:
        header, rows = csv_rows(season_file(name))
        date, result = header.index("Date"), header.index("FTR")
        for row in rows:
            if row[result].strip():
                day, month, year = row[date].split("/")
                days.append(dt.date(int(year) % 100 + 2000, int(month), int(day)))
    return max(days)


def test_a_refit_now_on_data_older_than_its_window_says_what_to_do(
    engine: Engine,
    refit_settings: Settings,
    oddsboost: Oddsboost,
    season_file: Callable[[str], Path],
) -> None:
    newest = newest_settled_day(season_file)
    advice = (
        f"the newest settled match is {newest:%Y-%m-%d}, older than the 1095-day window "
        f"ending today; pass --until {newest + dt.timedelta(days=1):%Y-%m-%d} or widen "
        "ODDSBOOST_REFIT_WINDOW_DAYS"
    )
    outcome = run_refit(engine, refit_settings, trigger=RunTrigger.SCHEDULER)
    assert outcome.status == "failed"
    assert outcome.message.startswith(advice), outcome.message
    result = oddsboost.run("refit", env=settings_environment(refit_settings))
    assert result.returncode == 1
    assert advice in result.stdout
    assert versions(engine) == []
    # Ending on a day given, it says that day.
    later = run_refit(
        engine,
        refit_settings.model_copy(update={"refit_window_days": 30}),
        trigger=RunTrigger.CLI,
        until=UNTIL + dt.timedelta(days=60),
    )
    assert later.message.startswith(
        f"the newest settled match is {newest:%Y-%m-%d}, older than the 30-day window ending "
        f"on {UNTIL + dt.timedelta(days=60):%Y-%m-%d}; pass --until"
    ), later.message


def scheduler_environment(refit_settings: Settings, **variables: str) -> dict[str, str]:
    """``oddsboost scheduler --run-now`` with a cron that never fires during the test."""
    return child_environment(
        refit_settings,
        ODDSBOOST_REFIT_CRON="0 3 1 1 *",
        # The scheduler refits as of now; the test seasons end in 2018.
        ODDSBOOST_REFIT_WINDOW_DAYS="5000",
        **variables,
    )


SCHEDULER = ["scheduler", "--run-now"]


@pytest.mark.slow
def test_the_scheduler_refits_now_and_stops_on_sigterm(
    engine: Engine, refit_settings: Settings, tmp_path: Path
) -> None:
    with running(
        SCHEDULER, scheduler_environment(refit_settings), tmp_path / "scheduler.log"
    ) as process:
        wait_until(
            lambda: any(run.status in ("succeeded", "failed") for run in runs(engine)),
            "the scheduled refit finished",
            alive=process.popen,
        )
        process.send_signal(signal.SIGTERM)
        assert process.wait() == 0
    output = process.output()
    assert "scheduled refit run 1 succeeded" in output
    assert "SIGTERM received" in output
    with refit_lock(engine) as held:
        assert held.taken


@pytest.mark.slow
def test_the_scheduler_logs_a_failed_refit_as_failed(migrated_url: str, tmp_path: Path) -> None:
    environment = child_environment(
        Settings(database_url=migrated_url),
        ODDSBOOST_REFIT_CRON="0 3 1 1 *",
        ODDSBOOST_LOG_FORMAT="json",
    )
    # An empty database: the refit fails for want of matches.
    with running(SCHEDULER, environment, tmp_path / "scheduler.log") as process:
        wait_until(
            lambda: "scheduled refit run 1" in process.output(),
            "the scheduled refit finished",
            alive=process.popen,
        )
        process.send_signal(signal.SIGTERM)
        assert process.wait() == 0
    lines = [json.loads(line) for line in process.output().splitlines() if line.startswith("{")]
    (job,) = [line for line in lines if "scheduled refit run 1" in line["message"]]
    assert job["level"] == "ERROR"
    assert job["message"].startswith("scheduled refit run 1 failed: ")
    assert not [line for line in lines if "executed successfully" in line["message"]]


def received_sigterm(process: Process) -> bool:
    return "SIGTERM received" in process.output()


@pytest.mark.slow
def test_sigterm_during_a_refit_records_it_and_frees_the_lock(
    engine: Engine, refit_settings: Settings, fit_gate: FitGate, tmp_path: Path
) -> None:
    environment = scheduler_environment(refit_settings, **fit_gate.environment())
    with running(SCHEDULER, environment, tmp_path / "scheduler.log") as process:
        fit_gate.wait_until_reached(process)  # the refit is running: it waits at the gate
        assert any(run.status == "running" for run in runs(engine))
        process.send_signal(signal.SIGTERM)
        wait_until(lambda: received_sigterm(process), "the scheduler saw the signal")
        fit_gate.release()
        assert process.wait() == 0, process.output()
    (run,) = runs(engine)
    assert run.status == "failed"
    assert run.message is not None
    assert "stopped by a shutdown" in run.message
    assert versions(engine) == []
    with refit_lock(engine) as held:
        assert held.taken


@pytest.mark.slow
def test_sigterm_ends_the_scheduler_within_its_graceful_time_whatever_its_jobs_do(
    engine: Engine, refit_settings: Settings, fit_gate: FitGate, tmp_path: Path
) -> None:
    """A refit held at its fit never reaches a checkpoint: the scheduler waits for it
    ODDSBOOST_GRACEFUL_SHUTDOWN_SECONDS, then exits without it (status 1), and the next
    refit closes the run it left running."""
    environment = scheduler_environment(
        refit_settings, ODDSBOOST_GRACEFUL_SHUTDOWN_SECONDS="1", **fit_gate.environment()
    )
    with running(SCHEDULER, environment, tmp_path / "scheduler.log") as process:
        fit_gate.wait_until_reached(process)
        process.send_signal(signal.SIGTERM)
        assert process.wait() == 1, process.output()
    assert "jobs still running 1 s after the signal" in process.output()
    (left,) = runs(engine)
    assert left.status == "running"
    run_refit(engine, refit_settings, trigger=RunTrigger.CLI, until=UNTIL)
    closed = runs(engine)[0]
    assert (closed.status, closed.message) == (
        "failed",
        "abandoned: the process running it stopped before it finished",
    )


@pytest.mark.slow
def test_the_api_refit_answers_at_once_and_runs_in_its_own_process(
    refit_settings: Settings, fit_gate: FitGate, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fastapi.testclient import TestClient

    from app.main import create_app

    headers = {"X-API-Key": ADMIN_KEY}
    for name, value in fit_gate.environment().items():
        monkeypatch.setenv(name, value)  # the refit process inherits this environment
    with TestClient(create_app(refit_settings)) as client:

        def refit_run(run_id: int) -> dict[str, Any]:
            run: dict[str, Any] = client.get(f"/admin/refits/{run_id}", headers=headers).json()
            return run

        accepted = client.post("/admin/refit", json={"until": UNTIL.isoformat()}, headers=headers)
        assert accepted.status_code == 202
        run_id = accepted.json()["run_id"]
        assert accepted.json() == {
            "run_id": run_id,
            "status": "queued",
            "detail": f"/admin/refits/{run_id}",
        }
        # It answered before the refit was done: the refit is still held at its fit, and
        # another process holds it there.
        fit_gate.wait_until_reached()
        assert client.get(f"/admin/refits/{run_id}", headers=headers).json()["status"] == (
            "running"
        )
        assert client.get("/models/active").status_code == 404
        fit_gate.release()
        wait_until(
            lambda: refit_run(run_id)["status"] not in ("queued", "running"),
            "the refit finished",
        )
        run = refit_run(run_id)
        assert run["status"] == "succeeded", run
        assert run["trigger"] == "api"
        engine = make_engine(refit_settings.database_url)
        with make_session_factory(engine)() as session:
            stored = session.get(RefitRun, run_id)
            assert stored is not None
            assert stored.pid is not None
            assert stored.pid != os.getpid()
        engine.dispose()
        active = client.get("/models/active").json()
        assert active["id"] == run["version_id"]
        assert client.get("/admin/refits", headers=headers).json()["total"] == 1
        assert client.get("/admin/refits/999", headers=headers).status_code == 404
        assert client.post("/admin/refit", headers={"X-API-Key": "wrong"}).status_code == 403


def environment_of(pid: int) -> dict[str, str]:
    """The environment a running process was started with."""
    variables = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(v.decode().split("=", 1) for v in variables if b"=" in v)


def wait_for_the_end(client: Any, run_id: int, headers: dict[str, str]) -> dict[str, Any]:
    def finished() -> bool:
        status = client.get(f"/admin/refits/{run_id}", headers=headers).json()["status"]
        return status not in ("queued", "running")

    wait_until(finished, f"refit run {run_id} finished", seconds=300)
    run: dict[str, Any] = client.get(f"/admin/refits/{run_id}", headers=headers).json()
    return run


@pytest.mark.slow
def test_a_refit_asked_for_while_one_is_under_way_is_answered_with_that_one(
    refit_settings: Settings, fit_gate: FitGate, monkeypatch: pytest.MonkeyPatch, engine: Engine
) -> None:
    from fastapi.testclient import TestClient

    from app.main import create_app

    headers = {"X-API-Key": ADMIN_KEY}
    for name, value in fit_gate.environment().items():
        monkeypatch.setenv(name, value)  # the refit process inherits this environment
    monkeypatch.setenv("ODDSBOOST_ADMIN_API_KEY", ADMIN_KEY)  # as a server is configured
    # A run queued long ago whose process never started does not hold up a new one.
    factory = make_session_factory(engine, for_writes=True)
    forgotten = create_run(factory, trigger=RunTrigger.API, until=UNTIL)
    with session_scope(factory) as session:
        stored = session.get(RefitRun, forgotten)
        assert stored is not None
        stored.started_at -= dt.timedelta(hours=1)
    with TestClient(create_app(refit_settings)) as client:
        first = client.post("/admin/refit", json={"until": UNTIL.isoformat()}, headers=headers)
        assert first.status_code == 202
        run_id = first.json()["run_id"]
        assert run_id != forgotten
        for _ in range(5):
            again = client.post("/admin/refit", headers=headers)
            assert again.status_code == 200
            assert again.json()["run_id"] == run_id
        fit_gate.wait_until_reached()
        running_now = client.post("/admin/refit", headers=headers)
        assert (running_now.status_code, running_now.json()) == (
            200,
            {
                "run_id": run_id,
                "status": "running",
                "detail": f"/admin/refits/{run_id}",
                "message": f"refit run {run_id} is already running; no new run was started",
            },
        )
        (pid,) = [run.pid for run in runs(engine) if run.id == run_id]
        assert pid is not None
        child = environment_of(pid)
        assert child["ODDSBOOST_DATABASE_URL"] == refit_settings.database_url
        assert "ODDSBOOST_ADMIN_API_KEY" not in child
        assert ADMIN_KEY not in "\0".join(child.values())
        fit_gate.release()
        assert wait_for_the_end(client, run_id, headers)["status"] == "succeeded"
        assert [run.id for run in runs(engine)] == [forgotten, run_id]
        # Once it is over, the next request starts a run of its own.
        after = client.post("/admin/refit", json={"until": UNTIL.isoformat()}, headers=headers)
        assert after.status_code == 202
        assert after.json()["run_id"] > run_id
        wait_for_the_end(client, after.json()["run_id"], headers)


def test_stale_running_runs_are_closed_by_the_next_refit(
    engine: Engine, refit_settings: Settings
) -> None:
    factory = make_session_factory(engine, for_writes=True)
    stale = create_run(factory, trigger=RunTrigger.CLI, until=UNTIL, status=RunStatus.RUNNING)
    run_refit(engine, refit_settings, trigger=RunTrigger.CLI, until=UNTIL)
    by_id = {run.id: run for run in runs(engine)}
    assert by_id[stale].status == "failed"
    assert "abandoned" in (by_id[stale].message or "")


def test_settings_environment_round_trips(
    seeded_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in settings_environment(seeded_settings).items():
        monkeypatch.setenv(key, value)
    rebuilt = Settings()
    assert rebuilt.refit_rounds_grid == seeded_settings.refit_rounds_grid
    assert rebuilt.database_url == seeded_settings.database_url
    assert "ODDSBOOST_ADMIN_API_KEY" not in settings_environment(seeded_settings)
    assert np.isclose(rebuilt.model_refresh_seconds, seeded_settings.model_refresh_seconds)


def test_the_refit_command_fits_toward_the_target_asked(
    engine: Engine, refit_settings: Settings, oddsboost: Oddsboost
) -> None:
    environment = settings_environment(
        refit_settings.model_copy(update={"refit_fit_target": FitTarget.RESULT})
    )

    refused = oddsboost.run(*REFIT, "--fit-target", "odds", env=environment)
    toward_close = oddsboost.run(*REFIT, "--fit-target", "close", env=environment)

    assert refused.returncode == 2
    assert "'odds' is not one of 'result', 'close'" in refused.stderr
    assert toward_close.returncode == 0, toward_close.stderr + toward_close.stdout
    (version,) = versions(engine)
    assert version.validation.options is not None
    assert version.validation.options.fit_target == FitTarget.CLOSE
    # The seeded seasons have Pinnacle's close: the rounds were chosen by the cross-entropy
    # to it, which no grid point's log loss on the results equals.
    on_results = run_refit(
        engine,
        refit_settings.model_copy(update={"refit_fit_target": FitTarget.RESULT}),
        trigger=RunTrigger.CLI,
        until=UNTIL,
    )
    assert on_results.status == "succeeded", on_results.message
    result_version = versions(engine)[-1]
    assert result_version.validation.options is not None
    assert result_version.validation.options.fit_target == FitTarget.RESULT
    assert [g.log_loss for g in version.rounds_grid] != [
        g.log_loss for g in result_version.rounds_grid
    ]
