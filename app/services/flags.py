"""The flag ledger: the board's value flags recorded when first raised, their later events,
and their scores once their matches are settled (rules in :mod:`app.domain.flags`).

Written only by writers, in their transaction: after an ingest of quotes or results
(:func:`after_ingest`) and after a model activation (:func:`record_upcoming_flags`); never by
a read. Only the matches a write touched are evaluated. Two writers raising the same flag at
once store it once (a unique match and outcome, inserted on conflict do nothing); an event
is appended only by the writer whose conditional update changed the flag's state.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from sqlalchemy import ColumnElement, Table, Update, case, insert, select, update
from sqlalchemy.orm import Session

from app.db.orm import (
    Bookmaker,
    Competition,
    Match,
    OddsQuote,
    Team,
    ValueFlag,
    ValueFlagEvent,
)
from app.domain import defaults
from app.domain.bookmakers import bookmaker_key
from app.domain.flags import (
    CLOSING_WINDOW,
    Change,
    ClosingLine,
    FlagChange,
    FlagState,
    FlagStatus,
    FlagToScore,
    Raise,
    ReferenceQuote,
    Standing,
    closing_line,
    flag_changes,
    score_flags,
)
from app.domain.prediction import MatchInfo
from app.domain.track_record_scores import CLOSING_REFERENCE
from app.domain.value import MatchValue, ValueTerms
from app.domain.vocabulary import Method, Phase
from app.services.alerts import AlertTerms, queue_alerts
from app.services.bulk import chunks, insert_new
from app.services.model_versions import active_version, ensemble_of
from app.services.pagination import Paged, PageWindow, paginate
from app.services.prediction import Answer, PredictionAnswer, predict_stored
from app.services.serving import ServingSnapshot
from app.settings import Settings

FLAGS = cast(Table, ValueFlag.__table__)
EVENTS = cast(Table, ValueFlagEvent.__table__)


@dataclass(frozen=True, slots=True)
class FlagTerms:
    """What the ledger judges by: the operator's default value terms, the method and phase
    read before any model is fitted, and how long before kickoff a quote is a live close."""

    value: ValueTerms = field(default_factory=ValueTerms)
    default_method: Method = defaults.METHOD
    default_phase: Phase = defaults.PHASE
    closing_window: dt.timedelta = CLOSING_WINDOW
    alerts: AlertTerms = field(default_factory=AlertTerms)

    @classmethod
    def of(cls, settings: Settings) -> FlagTerms:
        return cls(
            value=settings.value_terms(),
            default_method=settings.demargin_method,
            default_phase=settings.refit_phase,
            closing_window=dt.timedelta(minutes=settings.closing_window_minutes),
            alerts=AlertTerms.of(settings),
        )


DEFAULT_FLAG_TERMS = FlagTerms()


@dataclass
class LedgerWrites:
    """What one pass over the ledger wrote."""

    raised: int = 0
    events: int = 0
    scored: int = 0


def after_ingest(
    session: Session, match_ids: Collection[int], now: dt.datetime, terms: FlagTerms
) -> LedgerWrites:
    """The ledger after a write of quotes or results for ``match_ids``: the upcoming ones'
    flags recorded, the settled ones' flags scored and their bets settled."""
    # Imported here: the bets are settled against this module's closing lines.
    from app.services.bets import settle_match_bets

    writes = record_flags(session, match_ids, now, terms)
    writes.scored = score_settled_flags(session, match_ids, now, terms)
    settle_match_bets(session, match_ids, now, terms.closing_window)
    return writes


def record_upcoming_flags(
    session: Session, now: dt.datetime, terms: FlagTerms, snapshot: ServingSnapshot | None = None
) -> LedgerWrites:
    """Every upcoming match evaluated again (after a model activation)."""
    ids = session.scalars(select(Match.id).where(Match.kickoff > now, Match.result.is_(None)))
    return record_flags(session, list(ids), now, terms, snapshot)


def record_flags(
    session: Session,
    match_ids: Collection[int],
    now: dt.datetime,
    terms: FlagTerms = DEFAULT_FLAG_TERMS,
    snapshot: ServingSnapshot | None = None,
) -> LedgerWrites:
    """Evaluate the board's value of the upcoming ones of ``match_ids`` with ``terms`` and
    the active model (or ``snapshot``), and write the difference to the ledger at ``now``."""
    upcoming = _upcoming(session, match_ids, now)
    if not upcoming:
        return LedgerWrites()
    snapshot = snapshot or active_snapshot(session, terms)
    answers = predict_stored(session, upcoming, snapshot, terms.value)
    standing: dict[int, Standing | None] = {}
    values: dict[tuple[int, str], Standing] = {}
    for match_id, answer in answers.items():
        if isinstance(answer, PredictionAnswer):
            standing[match_id] = _standing(answer.value, match_id, values)
    stored = _stored_flags(session, list(standing))
    raises, changes = flag_changes(stored, standing, values)
    version = snapshot.version
    links = {match_id: _link_of(answers[match_id]) for match_id in standing}
    raised = _raise(session, raises, _Pricing(links, terms.value.source), version, now)
    applied = _apply(session, changes, version, now)
    queue_alerts(session, raised, applied, version, now, terms.alerts, terms.value)
    return LedgerWrites(raised=len(raised), events=len(applied))


def active_snapshot(session: Session, terms: FlagTerms) -> ServingSnapshot:
    """The model the database says is active, as an answer would work with it."""
    version = active_version(session)
    if version is None:
        return ServingSnapshot(None, terms.default_phase, terms.default_method)
    ensemble = ensemble_of(version)
    return ServingSnapshot(ensemble, ensemble.phase, ensemble.method)


def _upcoming(session: Session, match_ids: Collection[int], now: dt.datetime) -> list[int]:
    found: list[int] = []
    for part in chunks(sorted(set(match_ids))):
        found.extend(
            session.scalars(
                select(Match.id).where(
                    Match.id.in_(part), Match.kickoff > now, Match.result.is_(None)
                )
            )
        )
    return found


def _standing(
    value: MatchValue, match_id: int, values: dict[tuple[int, str], Standing]
) -> Standing | None:
    """The match's flagged outcome (None: none); every priced outcome goes into ``values``."""
    flagged: Standing | None = None
    for outcome in value.outcomes:
        # Unpriced, or priced where no link of the value source has a line: no standing.
        if (
            outcome.price is None
            or outcome.net_price is None
            or outcome.bookmaker is None
            or outcome.expected_value is None
            or outcome.probability is None
        ):
            continue
        seen = Standing(
            outcome.outcome,
            outcome.price,
            outcome.net_price,
            outcome.bookmaker,
            outcome.expected_value,
            outcome.probability,
        )
        values[(match_id, outcome.outcome)] = seen
        if outcome.flagged:
            flagged = seen
    return flagged


def _stored_flags(session: Session, match_ids: Sequence[int]) -> list[FlagState]:
    """The flags of ``match_ids`` not settled yet."""
    columns = (
        ValueFlag.id,
        ValueFlag.match_id,
        ValueFlag.outcome,
        ValueFlag.status,
        ValueFlag.best_net_price,
    )
    flags: list[FlagState] = []
    for part in chunks(match_ids):
        rows = session.execute(
            select(*columns).where(
                ValueFlag.match_id.in_(part), ValueFlag.status != FlagStatus.SETTLED
            )
        )
        flags.extend(FlagState(*row) for row in rows)
    return flags


@dataclass(frozen=True, slots=True)
class _Pricing:
    """What priced the flags of one evaluation: per match, the link of the value source's
    chain that had a line, and the chain in force (normalised)."""

    links: dict[int, str]
    chain: str


def _raise(
    session: Session,
    raises: Sequence[Raise],
    pricing: _Pricing,
    version: int | None,
    now: dt.datetime,
) -> list[int]:
    """Insert the first record of each raised flag; one raised at once by another writer
    is left as that writer stored it. The ids of those inserted."""
    if not raises:
        return []
    rows = [
        {
            "match_id": item.match_id,
            "outcome": item.standing.outcome,
            "bookmaker": item.standing.bookmaker,
            "price": item.standing.price,
            "net_price": item.standing.net_price,
            "expected_value": item.standing.expected_value,
            "probability": item.standing.probability,
            # A link is a model's word or a known bookmaker's code, and a normalised chain
            # five of them at most: both fit their columns.
            "value_source": pricing.links[item.match_id],
            "value_chain": pricing.chain,
            "model_version": version,
            "raised_at": now,
            "status": FlagStatus.OPEN,
            "best_net_price": item.standing.net_price,
        }
        for item in raises
    ]
    # Counted by what comes back: a driver's row count is not one over many rows.
    statement = insert_new(session, FLAGS).returning(FLAGS.c.id)
    return list(session.scalars(statement, rows))


def _link_of(answer: Answer) -> str:
    assert isinstance(answer, PredictionAnswer)  # only answered matches have a standing
    assert answer.value.source is not None  # a flagged match was priced by a link
    return answer.value.source


def _apply(
    session: Session, changes: Sequence[Change], version: int | None, now: dt.datetime
) -> list[Change]:
    """Apply the changes to the flags still as they were read (another writer may have got
    there first), one statement per kind of change, and append an event for each applied;
    those applied."""
    applied: set[int] = set()
    for kind in FlagChange:
        of_kind = [change for change in changes if change.change is kind]
        if of_kind:
            applied.update(session.scalars(_update_of(kind, of_kind)))
    done = [change for change in changes if change.flag_id in applied]
    if done:
        session.execute(insert(EVENTS), [_event_row(change, version, now) for change in done])
    return done


def _update_of(kind: FlagChange, changes: Sequence[Change]) -> Update:
    """The conditional update of ``changes`` (all of ``kind``), returning the ids it changed."""
    ids = [change.flag_id for change in changes]
    statement = update(FLAGS).where(FLAGS.c.id.in_(ids)).returning(FLAGS.c.id)
    if kind is FlagChange.WITHDRAWN:
        return statement.where(FLAGS.c.status == FlagStatus.OPEN).values(
            status=FlagStatus.WITHDRAWN
        )
    price = case(
        {change.flag_id: change.standing.net_price for change in changes if change.standing},
        value=FLAGS.c.id,
    )
    if kind is FlagChange.IMPROVED:
        statement = statement.where(
            FLAGS.c.status == FlagStatus.OPEN, FLAGS.c.best_net_price < price
        )
        return statement.values(best_net_price=price)
    # A raise again at a lower price keeps the best: "improved" then means better than any
    # price since the flag was first raised, the one a bettor following it could have had.
    best = case((FLAGS.c.best_net_price < price, price), else_=FLAGS.c.best_net_price)
    statement = statement.where(FLAGS.c.status == FlagStatus.WITHDRAWN)
    return statement.values(status=FlagStatus.OPEN, best_net_price=best)


def _event_row(change: Change, version: int | None, now: dt.datetime) -> dict[str, Any]:
    seen = change.standing
    return {
        "flag_id": change.flag_id,
        "change": change.change,
        "at": now,
        "bookmaker": None if seen is None else seen.bookmaker,
        "price": None if seen is None else seen.price,
        "net_price": None if seen is None else seen.net_price,
        "expected_value": None if seen is None else seen.expected_value,
        "probability": None if seen is None else seen.probability,
        "model_version": version,
    }


def score_settled_flags(
    session: Session, match_ids: Collection[int], now: dt.datetime, terms: FlagTerms
) -> int:
    """Score the flags of the settled ones of ``match_ids`` (again: a close that came later
    is filled in, a corrected result counted); how many were scored."""
    flags: dict[int, list[FlagToScore]] = {}
    matches: dict[int, tuple[str, dt.datetime]] = {}
    for part in chunks(sorted(set(match_ids))):
        rows = session.execute(
            select(
                ValueFlag.id,
                ValueFlag.outcome,
                ValueFlag.net_price,
                Match.id,
                Match.result,
                Match.kickoff,
            )
            .join(Match, ValueFlag.match_id == Match.id)
            .where(Match.id.in_(part), Match.result.is_not(None))
        )
        for flag_id, outcome, net, match_id, result, kickoff in rows:
            flags.setdefault(match_id, []).append(FlagToScore(flag_id, outcome, net))
            matches[match_id] = (str(result), kickoff)
    if not flags:
        return 0
    closes = closing_lines(session, matches, terms.closing_window)
    scored = 0
    for match_id, (result, _) in matches.items():
        close = closes.get(match_id)
        for score in score_flags(flags[match_id], result, close):
            session.execute(
                update(FLAGS)
                .where(FLAGS.c.id == score.id)
                .values(
                    status=FlagStatus.SETTLED,
                    result=score.result,
                    flat_return=score.flat_return,
                    close_home=None if close is None else close.prices[0],
                    close_draw=None if close is None else close.prices[1],
                    close_away=None if close is None else close.prices[2],
                    close_origin=None if close is None else close.origin,
                    close_captured_at=None if close is None else close.captured_at,
                    close_seen_at=None if close is None else close.seen_at,
                    closing_probability=score.closing_probability,
                    clv=score.clv,
                    settled_at=now,
                )
            )
            scored += 1
    return scored


def closing_lines(
    session: Session, matches: dict[int, tuple[str, dt.datetime]], window: dt.timedelta
) -> dict[int, ClosingLine]:
    """Each match's close by :func:`app.domain.flags.closing_line`, from the quotes of the
    closing reference (however its code is spelled): ``matches`` maps each match's id to its
    result and kickoff. The one close the flags and the bets are settled against."""
    reference = bookmaker_key(CLOSING_REFERENCE)
    bookmakers = [
        bookmaker_id
        for bookmaker_id, code in session.execute(select(Bookmaker.id, Bookmaker.code))
        if bookmaker_key(code) == reference
    ]
    if not bookmakers:
        return {}
    quotes: dict[int, list[ReferenceQuote]] = {}
    for part in chunks(sorted(matches)):
        rows = session.execute(
            select(
                OddsQuote.match_id,
                OddsQuote.phase,
                OddsQuote.home,
                OddsQuote.draw,
                OddsQuote.away,
                OddsQuote.credible_captured_at,
                OddsQuote.seen_at,
            ).where(OddsQuote.match_id.in_(part), OddsQuote.bookmaker_id.in_(bookmakers))
        )
        for match_id, phase, home, draw, away, captured, seen in rows:
            quotes.setdefault(match_id, []).append(
                ReferenceQuote(Phase(phase), (home, draw, away), _utc(captured), seen)
            )
    found: dict[int, ClosingLine] = {}
    for match_id, match_quotes in quotes.items():
        line = closing_line(match_quotes, matches[match_id][1], window)
        if line is not None:
            found[match_id] = line
    return found


def _utc(moment: dt.datetime | None) -> dt.datetime | None:
    # A CASE over a UTC column comes back without the type's conversion on SQLite.
    if moment is not None and moment.tzinfo is None:
        return moment.replace(tzinfo=dt.UTC)
    return moment


# --- reading the ledger ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FlagFilter:
    """Which flags a list shows: priced by one of the links ``sources`` (normalised), raised
    in [``raised_from``, ``raised_to``]."""

    competition: str | None = None
    sources: tuple[str, ...] | None = None
    status: FlagStatus | None = None
    raised_from: dt.datetime | None = None
    raised_to: dt.datetime | None = None
    match_id: int | None = None


@dataclass(frozen=True, slots=True)
class FlagEventRecord:
    change: FlagChange
    at: dt.datetime
    bookmaker: str | None
    price: float | None
    net_price: float | None
    expected_value: float | None
    probability: float | None
    model_version: int | None


@dataclass(frozen=True, slots=True)
class FlagClose:
    """The closing line a flag was scored against."""

    home: float
    draw: float
    away: float
    origin: str
    captured_at: dt.datetime | None
    seen_at: dt.datetime | None


@dataclass(frozen=True, slots=True)
class LedgerFlag:
    """One flag of the ledger as a list shows it."""

    id: int
    match: MatchInfo
    outcome: str
    bookmaker: str
    price: float
    net_price: float
    expected_value: float
    probability: float
    value_source: str
    value_chain: str | None
    model_version: int | None
    raised_at: dt.datetime
    status: FlagStatus
    best_net_price: float
    result: str | None
    flat_return: float | None
    close: FlagClose | None
    closing_probability: float | None
    clv: float | None
    settled_at: dt.datetime | None
    events: tuple[FlagEventRecord, ...]


def list_flags(session: Session, filters: FlagFilter, window: PageWindow) -> Paged[LedgerFlag]:
    """The ledger's flags that fit ``filters``, newest raised first, with their events."""
    statement = select(ValueFlag).where(*_conditions(filters))
    page: Paged[ValueFlag] = paginate(
        session, statement.order_by(ValueFlag.raised_at.desc(), ValueFlag.id.desc()), window
    )
    ids = [flag.match_id for flag in page.items]
    names = _match_names(session, ids)
    events = _events_of(session, [flag.id for flag in page.items])
    return page.map(lambda flag: _ledger_flag(flag, names[flag.match_id], events.get(flag.id, ())))


def _conditions(filters: FlagFilter) -> list[ColumnElement[bool]]:
    conditions: list[ColumnElement[bool]] = []
    if filters.competition is not None:
        in_competition = (
            select(Match.id)
            .join(Competition, Match.competition_id == Competition.id)
            .where(Competition.code == filters.competition)
        )
        conditions.append(ValueFlag.match_id.in_(in_competition))
    if filters.sources is not None:
        conditions.append(ValueFlag.value_source.in_(filters.sources))
    if filters.status is not None:
        conditions.append(ValueFlag.status == filters.status)
    if filters.raised_from is not None:
        conditions.append(ValueFlag.raised_at >= filters.raised_from)
    if filters.raised_to is not None:
        conditions.append(ValueFlag.raised_at <= filters.raised_to)
    if filters.match_id is not None:
        conditions.append(ValueFlag.match_id == filters.match_id)
    return conditions


def _match_names(session: Session, match_ids: Sequence[int]) -> dict[int, MatchInfo]:
    if not match_ids:
        return {}
    home, away = Team.__table__.alias("home"), Team.__table__.alias("away")
    rows = session.execute(
        select(Match.id, Competition.code, home.c.name, away.c.name, Match.kickoff, Match.season)
        .join(Competition, Match.competition_id == Competition.id)
        .join(home, Match.home_team_id == home.c.id)
        .join(away, Match.away_team_id == away.c.id)
        .where(Match.id.in_(sorted(set(match_ids))))
    )
    return {row[0]: MatchInfo(*row) for row in rows}


def _events_of(session: Session, flag_ids: Sequence[int]) -> dict[int, tuple[FlagEventRecord, ...]]:
    if not flag_ids:
        return {}
    found: dict[int, list[FlagEventRecord]] = {}
    rows = session.scalars(
        select(ValueFlagEvent)
        .where(ValueFlagEvent.flag_id.in_(flag_ids))
        .order_by(ValueFlagEvent.id)
    )
    for event in rows:
        found.setdefault(event.flag_id, []).append(
            FlagEventRecord(
                event.change,
                event.at,
                event.bookmaker,
                event.price,
                event.net_price,
                event.expected_value,
                event.probability,
                event.model_version,
            )
        )
    return {flag_id: tuple(items) for flag_id, items in found.items()}


def _ledger_flag(
    flag: ValueFlag, match: MatchInfo, events: tuple[FlagEventRecord, ...]
) -> LedgerFlag:
    close = None
    if flag.close_home is not None and flag.close_draw is not None and flag.close_away is not None:
        assert flag.close_origin is not None
        close = FlagClose(
            flag.close_home,
            flag.close_draw,
            flag.close_away,
            flag.close_origin,
            flag.close_captured_at,
            flag.close_seen_at,
        )
    return LedgerFlag(
        id=flag.id,
        match=match,
        outcome=flag.outcome,
        bookmaker=flag.bookmaker,
        price=flag.price,
        net_price=flag.net_price,
        expected_value=flag.expected_value,
        probability=flag.probability,
        value_source=flag.value_source,
        value_chain=flag.value_chain,
        model_version=flag.model_version,
        raised_at=flag.raised_at,
        status=flag.status,
        best_net_price=flag.best_net_price,
        result=flag.result,
        flat_return=flag.flat_return,
        close=close,
        closing_probability=flag.closing_probability,
        clv=flag.clv,
        settled_at=flag.settled_at,
        events=events,
    )
