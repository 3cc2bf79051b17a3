"""What each page of the dashboard shows, gathered from the services the API answers with
(the upcoming board, ``predict_stored``, the model versions, the track record). Read only."""

from __future__ import annotations

import asyncio
import datetime as dt
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import partial

import numpy as np
from sqlalchemy import func, select
from sqlalchemy.orm import Session, joinedload

from app.db.orm import (
    AlertDelivery,
    Competition,
    Match,
    ModelActivation,
    ModelVersion,
    OddsQuote,
    PredictionLogEntry,
    ValueFlag,
    ValueFlagEvent,
    utcnow,
)
from app.domain import defaults
from app.domain.bookmakers import bookmaker_key
from app.domain.odds import demargin
from app.domain.prediction import MatchPrediction, QuotedOdds
from app.domain.records import OUTCOME_INDEX
from app.domain.reliability import ReliabilityCurve
from app.domain.scoring import scores
from app.domain.track_record_aggregates import reliability_of_sums
from app.domain.value import MatchValue, ValueTerms
from app.domain.vocabulary import MatchStatus, Method
from app.services import model_versions, queries, track_record, track_record_aggregates
from app.services.alerts import FlagAlertState, alerts_of_flags
from app.services.flags import FlagFilter, LedgerFlag, list_flags
from app.services.pagination import Paged, PageWindow
from app.services.prediction import PredictionAnswer, predict_stored
from app.services.serving import ServingSnapshot
from app.services.track_record_aggregates import Stamp
from app.services.track_record_answers import TrackRecordAnswers
from app.services.upcoming import UpcomingBoards, UpcomingMatch, UpcomingPage, UpcomingQuery
from app.settings import Settings

# The upcoming page shows one board page: more rows than a person reads.
UPCOMING_ROWS = 500
# The model page lists the newest versions and activations.
HISTORY_ROWS = 50
# A match has at most one flag per outcome: the match page lists them all.
FLAG_ROWS = 3
FLAG_PAGE = PageWindow(FLAG_ROWS, 0)


class BoardOrder(StrEnum):
    """How the upcoming page orders its rows: by kickoff (the board's order), or by the
    expected value of each match's best outcome, highest first."""

    KICKOFF = "kickoff"
    EV = "ev"


@dataclass(frozen=True, slots=True)
class UpcomingView:
    """The board; its rows as the page shows them (in ``order``, only those with a value bet
    when ``value_only``); the competitions of the window the filter offers; the bookmakers
    that quoted its matches, for the choice of those the user bets with."""

    board: UpcomingPage
    rows: tuple[UpcomingMatch, ...]
    competitions: tuple[str, ...]
    competition: str | None
    days: int
    bookmakers: tuple[str, ...]
    order: BoardOrder
    value_only: bool


async def upcoming_view(
    boards: UpcomingBoards,
    session: Session,
    query: UpcomingQuery,
    *,
    order: BoardOrder = BoardOrder.KICKOFF,
    value_only: bool = False,
    now: dt.datetime | None = None,
) -> UpcomingView:
    """The board of ``query`` at ``now`` (None: the boards' clock, read when their check
    starts), as GET /upcoming answers it, its rows in ``order`` (``value_only``: those with a
    value bet), and the competitions that have matches in its window."""
    board = await boards.page(query, PageWindow(UPCOMING_ROWS, 0), now=now)
    if query.competition is None:
        # A stored match has its competition: the check is for the type.
        codes = {item.match.competition for item in board.shown}
        competitions = tuple(sorted(code for code in codes if code is not None))
    else:
        # The filtered board knows only its own competition: the others are read, not built.
        competitions = await asyncio.to_thread(
            competitions_between,
            session,
            board.kickoff_from,
            board.kickoff_to,
            board.answered_at,
        )
    return UpcomingView(
        board,
        board_rows(board.items, order, value_only=value_only),
        competitions,
        query.competition,
        query.horizon.days,
        quoting_bookmakers(board.shown, query.terms),
        order,
        value_only,
    )


def best_expected_value(item: UpcomingMatch) -> float | None:
    """The expected value of the match's best outcome (None: no outcome has one)."""
    if item.value is None:
        return None
    found = [o.expected_value for o in item.value.outcomes if o.expected_value is not None]
    return max(found, default=None)


def board_rows(
    items: Sequence[UpcomingMatch], order: BoardOrder, *, value_only: bool
) -> tuple[UpcomingMatch, ...]:
    """``items`` (in the board's order: by kickoff) in ``order``; with ``value_only``, only
    the matches with a value bet. By EV, equal ones keep the board's order and a match
    with no EV comes last."""
    rows = [item for item in items if item.value_bets] if value_only else list(items)
    if order is BoardOrder.EV:

        def highest_first(item: UpcomingMatch) -> float:
            value = best_expected_value(item)
            return math.inf if value is None else -value

        rows.sort(key=highest_first)  # stable: ties keep the board's order
    return tuple(rows)


def quoting_bookmakers(items: Iterable[UpcomingMatch], terms: ValueTerms) -> tuple[str, ...]:
    """The codes of the bookmakers that quoted ``items`` and of those ``terms`` allow (one
    per bookmaker however spelled), sorted."""
    found: dict[str, str] = {}
    for item in items:
        if item.prediction is not None:
            quoted = [line.code for line in item.prediction.used]
            quoted.extend(line.code for line in item.prediction.ignored)
            found.update((bookmaker_key(code), code) for code in quoted)
    for key in terms.bookmakers or ():
        found.setdefault(key, key)
    return tuple(sorted(found.values()))


def competitions_between(
    session: Session, kickoff_from: dt.datetime, kickoff_to: dt.datetime, now: dt.datetime
) -> tuple[str, ...]:
    """The codes of the competitions with a match upcoming at ``now`` in the window, sorted."""
    filters = queries.MatchFilter(kickoff_from=kickoff_from, kickoff_to=kickoff_to)
    statement = select(Competition.code).join(Match, Match.competition_id == Competition.id)
    statement = queries.upcoming_only(statement, filters, now).distinct()
    return tuple(sorted(session.scalars(statement)))


@dataclass(frozen=True, slots=True)
class PricePoint:
    at: dt.datetime
    home: float
    draw: float
    away: float


@dataclass(frozen=True, slots=True)
class PriceHistory:
    """One bookmaker's prices of a match, by the moment each was captured (or received)."""

    bookmaker: str
    points: tuple[PricePoint, ...]


@dataclass(frozen=True, slots=True)
class Settlement:
    """The prediction served at a settled match's kickoff, scored."""

    served: tuple[float, float, float]
    served_log_loss: float
    consensus_log_loss: float
    model_version: int | None


@dataclass(frozen=True, slots=True)
class BookmakerLine:
    """A bookmaker's line de-margined, and its weight (None: no model, or ``ignored``)."""

    code: str
    probabilities: tuple[float, float, float]
    weight: float | None
    ignored: str | None


@dataclass(frozen=True, slots=True)
class MatchPage:
    """The match, its prediction from its stored quotes now (None with no usable quote),
    each bookmaker's latest prices (those the prediction read) and the value of each
    outcome at the best of them by ``terms``, each bookmaker's price history, the flags the
    ledger raised on it with their events, and, once settled, the prediction served
    scored."""

    match: Match
    status: MatchStatus
    prediction: MatchPrediction | None
    bookmakers: tuple[BookmakerLine, ...]
    snapshot: ServingSnapshot
    history: tuple[PriceHistory, ...]
    settlement: Settlement | None
    prices: tuple[QuotedOdds, ...]
    value: MatchValue | None
    terms: ValueTerms
    flags: tuple[LedgerFlag, ...]
    alerts: Mapping[int, tuple[FlagAlertState, ...]]  # by flag

    def commission(self, bookmaker: str) -> float:
        """The commission on net winnings ``terms`` take off the bookmaker's prices (0: none)."""
        return dict(self.terms.commissions).get(bookmaker_key(bookmaker), 0.0)

    @property
    def has_history(self) -> bool:
        """Whether a bookmaker quoted more than once: a history to draw."""
        return any(len(line.points) > 1 for line in self.history)


@dataclass(frozen=True, slots=True)
class MatchStamp:
    """What a match page shows changes only with these (``shown``): the match row, its
    quotes (their number, newest receipt and revision: a write received earlier can commit
    later), the entry logged at its kickoff, its flags (their number, newest event, newest
    scoring and newest close seen) and their alerts (newest, attempts), and its status at
    ``at``, the moment they were read."""

    updated_at: dt.datetime
    quotes: int
    newest_receipt: dt.datetime | None
    quotes_revision: int
    logged: int | None
    flags: tuple[object, ...]
    status: MatchStatus
    at: dt.datetime

    @property
    def shown(self) -> tuple[object, ...]:
        return (
            self.updated_at,
            self.quotes,
            self.newest_receipt,
            self.quotes_revision,
            self.logged,
            self.flags,
            self.status,
        )


def match_stamp(
    session: Session, match_id: int, *, now: dt.datetime | None = None
) -> MatchStamp | None:
    """The stamp of the match's page at ``now`` (None: the present), in one indexed read
    (None: no such match)."""
    at = now or utcnow()
    of_match = OddsQuote.match_id == Match.id
    flagged = ValueFlag.match_id == Match.id
    row = session.execute(
        select(
            Match,
            select(func.count()).where(of_match).scalar_subquery(),
            select(func.max(OddsQuote.received_at)).where(of_match).scalar_subquery(),
            # As a column: a match already in the session keeps the revision it was read with.
            Match.quotes_revision,
            select(PredictionLogEntry.id)
            .where(PredictionLogEntry.match_id == Match.id)
            .limit(1)
            .scalar_subquery(),
            select(func.count(ValueFlag.id)).where(flagged).scalar_subquery(),
            select(func.max(ValueFlagEvent.id))
            .join(ValueFlag, ValueFlagEvent.flag_id == ValueFlag.id)
            .where(flagged)
            .scalar_subquery(),
            select(func.max(ValueFlag.settled_at)).where(flagged).scalar_subquery(),
            select(func.max(ValueFlag.close_seen_at)).where(flagged).scalar_subquery(),
            # An alert queued or tried (each attempt counted) changes what the page says.
            select(func.max(AlertDelivery.id))
            .join(ValueFlag, AlertDelivery.flag_id == ValueFlag.id)
            .where(flagged)
            .scalar_subquery(),
            select(func.sum(AlertDelivery.attempts))
            .join(ValueFlag, AlertDelivery.flag_id == ValueFlag.id)
            .where(flagged)
            .scalar_subquery(),
        ).where(Match.id == match_id)
    ).one_or_none()
    if row is None:
        return None
    match, quotes, newest, revision, logged, *flagged_rows = row
    status = queries.status_of(match, at)
    return MatchStamp(
        match.updated_at,
        int(quotes),
        newest,
        int(revision),
        logged,
        tuple(flagged_rows),
        status,
        at,
    )


def match_page(
    session: Session,
    snapshot: ServingSnapshot,
    terms: ValueTerms,
    match_id: int,
    *,
    now: dt.datetime | None = None,
) -> MatchPage | None:
    """The page of the match at ``now`` (None: the present), predicted with ``snapshot``,
    its value judged by ``terms``; None: no such match."""
    match = queries.match_with_names(session, match_id)
    if match is None:
        return None
    answer = predict_stored(session, [match_id], snapshot, terms)[match_id]
    prediction: MatchPrediction | None = None
    lines: tuple[BookmakerLine, ...] = ()
    prices: tuple[QuotedOdds, ...] = ()
    value: MatchValue | None = None
    if isinstance(answer, PredictionAnswer):
        prediction = answer.prediction
        lines = _lines(answer.odds, prediction, snapshot.method)
        prices, value = tuple(answer.odds), answer.value
    raised = list_flags(session, FlagFilter(match_id=match_id), FLAG_PAGE)
    return MatchPage(
        match,
        queries.status_of(match, now or utcnow()),
        prediction,
        lines,
        snapshot,
        _price_history(session, match_id, match.kickoff),
        _settlement(session, match),
        prices,
        value,
        terms,
        tuple(raised.items),
        alerts_of_flags(session, [flag.id for flag in raised.items]),
    )


def _lines(
    odds: Sequence[QuotedOdds], prediction: MatchPrediction, method: Method
) -> tuple[BookmakerLine, ...]:
    """Every quote's line de-margined as the prediction de-margined it, with the weight the
    prediction gave it (the prediction names a bookmaker as the pool spells it)."""
    probabilities = demargin([[q.home, q.draw, q.away] for q in odds], method).probabilities
    used = iter(prediction.used)
    ignored = {bookmaker.code: bookmaker.reason for bookmaker in prediction.ignored}
    lines = []
    for quote, row in zip(odds, probabilities.tolist(), strict=True):
        reason = ignored.get(quote.bookmaker)
        weight = None if reason is not None else next(used).weight
        lines.append(BookmakerLine(quote.bookmaker, (row[0], row[1], row[2]), weight, reason))
    return tuple(lines)


def _price_history(
    session: Session, match_id: int, kickoff: dt.datetime
) -> tuple[PriceHistory, ...]:
    quotes = session.scalars(
        select(OddsQuote)
        .where(OddsQuote.match_id == match_id)
        .options(joinedload(OddsQuote.bookmaker))
    ).all()
    by_bookmaker: dict[str, list[PricePoint]] = {}
    for quote in quotes:
        at = quote.credible_captured_at or quote.received_at
        if at <= kickoff:
            point = PricePoint(at, quote.home, quote.draw, quote.away)
            by_bookmaker.setdefault(quote.bookmaker.code, []).append(point)
    return tuple(
        PriceHistory(code, tuple(sorted(points, key=lambda point: point.at)))
        for code, points in sorted(by_bookmaker.items())
    )


def _settlement(session: Session, match: Match) -> Settlement | None:
    if match.result is None:
        return None
    logged = select(PredictionLogEntry).where(PredictionLogEntry.match_id == match.id)
    entry = session.scalar(logged)
    if entry is None:
        return None
    y = np.array([OUTCOME_INDEX[match.result]], dtype=np.intp)
    served = entry.served
    served_scores = scores(y, np.array([served.probabilities], dtype=np.float64))
    consensus_scores = scores(y, np.array([served.consensus], dtype=np.float64))
    return Settlement(
        served.probabilities,
        served_scores.log_loss,
        consensus_scores.log_loss,
        entry.model_version,
    )


@dataclass(frozen=True, slots=True)
class ServedReliability:
    """Per outcome, the reliability of what was served at kickoff of every settled match
    of the track record, whatever served it (no curve without one)."""

    matches: int
    bins: int
    curves: tuple[ReliabilityCurve, ...]


@dataclass(frozen=True, slots=True)
class WeightOnBoard:
    """How much of the serving model's weight quoted the matches of the upcoming board (the
    dashboard's first page, unfiltered): over the matches it predicted, the mean share of
    its weight present, and how many none of its weight quoted (answered by the consensus)."""

    days: int
    matches: int
    mean_present: float | None  # None: no match of the board was predicted by a model
    consensus_only: int

    @property
    def low(self) -> bool:
        """Whether the model's bookmakers have mostly stopped quoting what is coming."""
        return self.mean_present is not None and self.mean_present < defaults.LOW_WEIGHT_PRESENT


async def model_board(
    boards: UpcomingBoards, settings: Settings, *, now: dt.datetime | None = None
) -> UpcomingPage:
    """The board the upcoming page shows unfiltered at ``now`` (None: the boards' clock)."""
    query = UpcomingQuery(
        terms=settings.value_terms(), daily_exposure_cap=settings.value_daily_exposure_cap
    )
    return await boards.page(query, PageWindow(UPCOMING_ROWS, 0), now=now)


def weight_on_board(board: UpcomingPage) -> WeightOnBoard:
    """The share of the model's weight present over ``board``."""
    days = (board.kickoff_to - board.kickoff_from).days
    shares = np.array(
        [
            item.prediction.model_weight_present
            for item in board.shown
            if item.prediction is not None and item.prediction.model_weight_present is not None
        ],
        dtype=np.float64,
    )
    mean = float(shares.mean()) if shares.size else None
    return WeightOnBoard(days, int(shares.size), mean, int((shares == 0).sum()))


@dataclass(frozen=True, slots=True)
class ModelPage:
    """The active version (None before the first fit), how much of its weight quoted the
    upcoming matches, the newest versions and activations, and the reliability of what was
    served."""

    active: ModelVersion | None
    on_board: WeightOnBoard
    versions: Paged[ModelVersion]
    activations: Paged[ModelActivation]
    reliability: ServedReliability


@dataclass(frozen=True, slots=True)
class VersionsStamp:
    """The model page's versions and activations change only with these: a version is
    stored (rejected or not) in one transaction, and each activation adds a row."""

    newest_version: int | None
    newest_activation: int | None


def versions_stamp(session: Session) -> VersionsStamp:
    row = session.execute(
        select(
            select(func.max(ModelVersion.id)).scalar_subquery(),
            select(func.max(ModelActivation.id)).scalar_subquery(),
        )
    ).one()
    return VersionsStamp(row[0], row[1])


@dataclass(frozen=True, slots=True)
class ModelPageStamp:
    """What the model page shows changes only with these (``shown``): the board the weight
    present is judged on, the track record (the reliability) and the versions."""

    board: UpcomingPage
    track_record: Stamp
    versions: VersionsStamp

    @property
    def shown(self) -> tuple[object, ...]:
        return (self.board.revision, self.track_record, self.versions)


async def model_page_stamp(
    boards: UpcomingBoards,
    answers: TrackRecordAnswers,
    session: Session,
    settings: Settings,
    *,
    now: dt.datetime | None = None,
) -> ModelPageStamp:
    """The model page's stamp at ``now`` (None: the boards' clock)."""
    board = await model_board(boards, settings, now=now)
    track_record_stamp = await answers.stamp(session)
    versions = await asyncio.to_thread(versions_stamp, session)
    return ModelPageStamp(board, track_record_stamp, versions)


async def model_view(
    session: Session, answers: TrackRecordAnswers, settings: Settings, stamp: ModelPageStamp
) -> ModelPage:
    """The model page as of ``stamp`` (its reliability kept with the track record's)."""
    reliability = await answers.answer(
        session,
        ("reliability",),
        partial(served_reliability, settings=settings),
        stamp=stamp.track_record,
    )
    return await asyncio.to_thread(model_page, session, weight_on_board(stamp.board), reliability)


def model_page(
    session: Session, on_board: WeightOnBoard, reliability: ServedReliability
) -> ModelPage:
    window = PageWindow(HISTORY_ROWS, 0)
    return ModelPage(
        model_versions.active_version(session),
        on_board,
        model_versions.list_versions(session, window),
        model_versions.list_activations(session, window),
        reliability,
    )


def served_reliability(session: Session, settings: Settings) -> ServedReliability:
    """Read from the track record's aggregates (their bins)."""
    terms = track_record.answer_terms(session, settings)
    found = track_record_aggregates.reliability_sums(session, terms)
    bins = terms.reliability_bins
    return ServedReliability(found.matches, bins, reliability_of_sums(found.bins, bins))


@dataclass(frozen=True, slots=True)
class TrackRecordPage:
    report: track_record.PerformanceReport
    competitions: tuple[str, ...]


def track_record_page(
    session: Session, query: track_record.PerformanceQuery, settings: Settings
) -> TrackRecordPage:
    """The track record of ``query`` as GET /performance answers it, and every stored
    competition for the filter."""
    report = track_record.performance(session, query, settings)
    # The codes alone: counting each competition's matches would read every match.
    codes = tuple(session.scalars(select(Competition.code).order_by(Competition.code)))
    return TrackRecordPage(report, codes)
