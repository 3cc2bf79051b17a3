"""The bettor's book: bets recorded (from the API, the command line or an import), each
change appended to their audit trail, settled against their match's result and the flag
ledger's closing line (:func:`app.services.flags.closing_lines`). Rules in
:mod:`app.domain.bets`."""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sqlalchemy import ColumnElement, Select, select
from sqlalchemy.orm import Session, joinedload

from app.db.orm import Bet, BetChange, Competition, Match, ValueFlag
from app.domain.bets import (
    BET_NOTE_MAX_LENGTH,
    PRICE_TEXT_MAX_LENGTH,
    BetChangeKind,
    BetChannel,
    BetDraft,
    BetSettlement,
    BetStatus,
    BetToSettle,
    PriceFormatError,
    decimal_price,
    settle_bets,
    stake_problem,
)
from app.domain.bookmakers import commission_code
from app.domain.flags import CLOSING_WINDOW, CloseOrigin, ClosingLine
from app.domain.records import CODE_MAX_LENGTH, check_text
from app.domain.wording import counted

# The module, not its names: the flag ledger imports the ingest, which imports this module.
from app.services import flags
from app.services.bulk import chunks
from app.services.locks import serialise_match_rewrites
from app.services.pagination import Paged, PageWindow, paginate


@dataclass(frozen=True, slots=True)
class DraftProblem:
    """Why one draft of a batch cannot be recorded: its place in the batch, the field and
    what is wrong with it."""

    index: int
    field: str
    message: str


class BetDraftError(ValueError):
    """One or more drafts of a batch cannot be recorded; nothing of the batch was."""

    def __init__(self, problems: Sequence[DraftProblem]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(f"{p.index}.{p.field}: {p.message}" for p in self.problems))


class BetNotFoundError(LookupError):
    """No bet with that id is stored (never was, or was deleted)."""

    def __init__(self, bet_id: int) -> None:
        self.bet_id = bet_id
        super().__init__(f"no bet {bet_id} is stored")


def record_bets(
    session: Session,
    drafts: Sequence[BetDraft],
    channel: BetChannel,
    now: dt.datetime,
    window: dt.timedelta = CLOSING_WINDOW,
) -> list[Bet]:
    """Record ``drafts`` in the caller's transaction, each with its ``created`` change, or
    none of them (:class:`BetDraftError` names every draft that cannot be recorded). A bet
    of a match whose result is stored is settled at once (its close read with ``window``)."""
    # A deletion or a team merge of their matches at the same time commits first, then the
    # bets find what it left (PostgreSQL; SQLite's write sessions take turns already).
    serialise_match_rewrites(session)
    matches = _matches(session, {draft.match_id for draft in drafts}, lock=True)
    flags = _flags(session, {d.flag_id for d in drafts if d.flag_id is not None})
    problems: list[DraftProblem] = []
    bets: list[Bet] = []
    for index, draft in enumerate(drafts):
        found = _draft_problems(index, draft, matches, flags, now)
        problems.extend(found)
        if not found:
            flag = flags.get(draft.flag_id) if draft.flag_id is not None else None
            bets.append(_bet_of(draft, flag, now))
    if problems:
        raise BetDraftError(problems)
    session.add_all(bets)
    session.flush()
    session.add_all(
        BetChange(
            bet_id=bet.id,
            change=BetChangeKind.CREATED,
            channel=channel,
            at=now,
            before=None,
            after=bet_fields(bet),
        )
        for bet in bets
    )
    _settle(session, bets, matches, now, window)
    return bets


def bet_fields(bet: Bet) -> dict[str, Any]:
    """The user's fields of a bet, as its audit trail keeps them (JSON)."""
    return {
        "match_id": bet.match_id,
        "outcome": bet.outcome,
        "bookmaker": bet.bookmaker,
        "price": bet.price,
        "price_text": bet.price_text,
        "stake": bet.stake,
        "placed_at": bet.placed_at.isoformat(),
        "flag_id": bet.flag_id,
        "source": bet.source,
        "note": bet.note,
        "status": str(bet.status),
    }


def _matches(session: Session, ids: Collection[int], *, lock: bool = False) -> dict[int, Match]:
    """The stored matches of ``ids``; ``lock`` reads them ``FOR SHARE``, in id order.

    A writer of a match's result (which updates its row) and a writer of its bets then
    take turns, and the one that commits second sees the other's write: bets recorded or
    corrected wait for a result being stored and are settled by it, and a result waits for
    them and then settles them (PostgreSQL reads the row afresh after the wait). SQLite's
    write sessions take turns already."""
    found: dict[int, Match] = {}
    for part in chunks(sorted(set(ids))):
        statement = select(Match).where(Match.id.in_(part)).order_by(Match.id)
        if lock:
            statement = statement.with_for_update(read=True).execution_options(
                populate_existing=True
            )
        found.update((row.id, row) for row in session.scalars(statement))
    return found


def _flags(session: Session, ids: set[int]) -> dict[int, ValueFlag]:
    found: dict[int, ValueFlag] = {}
    for part in chunks(sorted(ids)):
        rows = session.scalars(select(ValueFlag).where(ValueFlag.id.in_(part)))
        found.update((row.id, row) for row in rows)
    return found


def _draft_problems(
    index: int,
    draft: BetDraft,
    matches: Mapping[int, Match],
    flags: Mapping[int, ValueFlag],
    now: dt.datetime,
) -> list[DraftProblem]:
    problems: list[DraftProblem] = []
    if draft.match_id not in matches:
        problems.append(DraftProblem(index, "match_id", f"no match {draft.match_id} is stored"))
    problems.extend(DraftProblem(index, name, message) for name, message in _field_problems(draft))
    if draft.placed_at.tzinfo is not None and draft.placed_at > now:
        problems.append(
            DraftProblem(
                index,
                "placed_at",
                f"{draft.placed_at.isoformat()} is in the future (now is {now.isoformat()})",
            )
        )
    flag_problem = _flag_problem(draft, flags)
    if flag_problem is not None:
        problems.append(DraftProblem(index, "flag_id", flag_problem))
    return problems


def _field_problems(draft: BetDraft) -> list[tuple[str, str]]:
    """What is wrong with the draft's own fields, by field."""
    problems: list[tuple[str, str]] = []
    if draft.outcome not in ("1", "X", "2"):
        problems.append(("outcome", f"{draft.outcome!r} is not 1, X or 2"))
    if (stake := stake_problem(draft.stake)) is not None:
        problems.append(("stake", stake))
    if draft.placed_at.tzinfo is None:
        problems.append(("placed_at", "a time placed needs its time zone"))
    texts = [("bookmaker", draft.bookmaker, CODE_MAX_LENGTH)]
    if draft.note is not None:
        texts.append(("note", draft.note, BET_NOTE_MAX_LENGTH))
    for name, text, longest in texts:
        try:
            check_text(text, name, longest)
        except ValueError as error:
            problems.append((name, str(error)))
    if len(draft.price_text.strip()) > PRICE_TEXT_MAX_LENGTH:
        at_most = counted(PRICE_TEXT_MAX_LENGTH, "character")
        problems.append(("price", f"a price is at most {at_most}"))
    else:
        try:
            decimal_price(draft.price_text)
        except PriceFormatError as error:
            problems.append(("price", str(error)))
    return problems


def _flag_problem(draft: BetDraft, flags: Mapping[int, ValueFlag]) -> str | None:
    if draft.flag_id is None:
        return None
    flag = flags.get(draft.flag_id)
    if flag is None:
        return f"no flag {draft.flag_id} is stored"
    if flag.match_id != draft.match_id or flag.outcome != draft.outcome:
        return (
            f"flag {flag.id} is outcome {flag.outcome} of match {flag.match_id}, "
            f"not outcome {draft.outcome} of match {draft.match_id}"
        )
    return None


def _bet_of(draft: BetDraft, flag: ValueFlag | None, now: dt.datetime) -> Bet:
    return Bet(
        match_id=draft.match_id,
        outcome=draft.outcome,
        bookmaker=commission_code(check_text(draft.bookmaker, "bookmaker", CODE_MAX_LENGTH)),
        price=decimal_price(draft.price_text),
        price_text=draft.price_text.strip(),
        stake=draft.stake,
        placed_at=draft.placed_at,
        flag_id=draft.flag_id,
        source=None if flag is None else flag.value_source,
        note=None if draft.note is None else check_text(draft.note, "note", BET_NOTE_MAX_LENGTH),
        status=BetStatus.VOID if draft.void else BetStatus.OPEN,
        created_at=now,
        updated_at=now,
    )


# --- settlement ----------------------------------------------------------------------------


def settle_match_bets(
    session: Session,
    match_ids: Collection[int],
    now: dt.datetime,
    window: dt.timedelta = CLOSING_WINDOW,
) -> int:
    """Settle the bets of ``match_ids`` against their results and closes (again: a corrected
    result, or a close that came later, settles them anew); how many bets changed."""
    bets: list[Bet] = []
    for part in chunks(sorted(set(match_ids))):
        bets.extend(session.scalars(_locked_bets(Bet.match_id.in_(part))))
    if not bets:
        return 0
    return _settle(session, bets, _matches(session, {bet.match_id for bet in bets}), now, window)


@dataclass(frozen=True, slots=True)
class _Settled:
    """The settlement columns of a bet, as they are or should be."""

    result: str | None = None
    returned: float | None = None
    profit: float | None = None
    close_price: float | None = None
    closing_probability: float | None = None
    clv: float | None = None
    close_origin: CloseOrigin | None = None
    close_captured_at: dt.datetime | None = None

    @classmethod
    def of_bet(cls, bet: Bet) -> _Settled:
        return cls(
            bet.result,
            bet.returned,
            bet.profit,
            bet.close_price,
            bet.closing_probability,
            bet.clv,
            None if bet.close_origin is None else CloseOrigin(bet.close_origin),
            bet.close_captured_at,
        )


def _settle(
    session: Session,
    bets: Sequence[Bet],
    matches: Mapping[int, Match],
    now: dt.datetime,
    window: dt.timedelta,
) -> int:
    """Bring each bet's settlement up to date with its match: a void one returns its stake,
    one of a match with a result is won or lost, any other is open. Only a bet whose
    settlement changes is written (and its ``settled_at`` moved to ``now``)."""
    settled = {
        match_id: (str(match.result), match.kickoff)
        for match_id, match in matches.items()
        if match.result is not None
    }
    playing = {bet.match_id for bet in bets if bet.status != BetStatus.VOID} & set(settled)
    closes = (
        flags.closing_lines(session, {i: settled[i] for i in playing}, window) if playing else {}
    )
    changed = 0
    for bet in bets:
        status, target = _settlement_of(bet, settled.get(bet.match_id), closes.get(bet.match_id))
        if status == bet.status and target == _Settled.of_bet(bet):
            continue
        bet.status = status
        for name in _Settled.__slots__:
            setattr(bet, name, getattr(target, name))
        bet.settled_at = None if status == BetStatus.OPEN else now
        changed += 1
    session.flush()
    return changed


def _settlement_of(
    bet: Bet, match: tuple[str, dt.datetime] | None, close: ClosingLine | None
) -> tuple[BetStatus, _Settled]:
    if bet.status == BetStatus.VOID:
        # Void: the stake comes back, nothing won or lost, no CLV (left out of both).
        return BetStatus.VOID, _Settled(returned=bet.stake, profit=0.0)
    if match is None:
        return BetStatus.OPEN, _Settled()
    (settlement,) = settle_bets(
        [BetToSettle(bet.id, bet.outcome, bet.price, bet.stake)], match[0], close
    )
    return settlement.status, _settled_of(settlement, close)


def _settled_of(settlement: BetSettlement, close: ClosingLine | None) -> _Settled:
    return _Settled(
        result=settlement.result,
        returned=settlement.returned,
        profit=settlement.profit,
        close_price=settlement.close_price,
        closing_probability=settlement.closing_probability,
        clv=settlement.clv,
        close_origin=None if close is None else close.origin,
        close_captured_at=None if close is None else close.captured_at,
    )


# --- corrections ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BetCorrection:
    """A correction of a bet: the fields ``given`` take the values here (a note or flag
    given as None is removed); ``void`` True voids the bet, False undoes a void."""

    outcome: str | None = None
    bookmaker: str | None = None
    price_text: str | None = None
    stake: float | None = None
    placed_at: dt.datetime | None = None
    note: str | None = None
    flag_id: int | None = None
    void: bool | None = None
    given: frozenset[str] = field(default_factory=frozenset)


def correct_bet(
    session: Session,
    bet_id: int,
    correction: BetCorrection,
    channel: BetChannel,
    now: dt.datetime,
    window: dt.timedelta = CLOSING_WINDOW,
) -> Bet:
    """Apply ``correction`` to bet ``bet_id``, checked as a new draft would be, append a
    ``corrected`` change with its fields before and after, and settle it again; a correction
    that changes nothing appends nothing."""
    serialise_match_rewrites(session)
    # The match before the bet, in the order a result's settlement locks them (the match's
    # row, then its bets): the two wait for each other rather than deadlock. The bet's match
    # stays: only a merge moves bets, and it waits for the lock above.
    match_id = session.scalar(select(Bet.match_id).where(Bet.id == bet_id))
    if match_id is None:
        raise BetNotFoundError(bet_id)
    matches = _matches(session, [match_id], lock=True)
    bet = _bet(session, bet_id)
    draft = _corrected_draft(bet, correction)
    flags = _flags(session, set() if draft.flag_id is None else {draft.flag_id})
    problems = _draft_problems(0, draft, matches, flags, now)
    if problems:
        raise BetDraftError(problems)
    before = bet_fields(bet)
    flag = flags.get(draft.flag_id) if draft.flag_id is not None else None
    fresh = _bet_of(draft, flag, now)
    for name in ("outcome", "bookmaker", "price", "price_text", "stake", "placed_at"):
        setattr(bet, name, getattr(fresh, name))
    bet.flag_id, bet.source, bet.note = fresh.flag_id, fresh.source, fresh.note
    if draft.void != (bet.status == BetStatus.VOID):
        bet.status = BetStatus.VOID if draft.void else BetStatus.OPEN
    after = bet_fields(bet)
    if after == before:
        return bet
    bet.updated_at = now
    session.add(
        BetChange(
            bet_id=bet.id,
            change=BetChangeKind.CORRECTED,
            channel=channel,
            at=now,
            before=before,
            after=after,
        )
    )
    _settle(session, [bet], matches, now, window)
    return bet


def _corrected_draft(bet: Bet, correction: BetCorrection) -> BetDraft:
    draft = BetDraft(
        match_id=bet.match_id,
        outcome=bet.outcome,
        bookmaker=bet.bookmaker,
        price_text=bet.price_text,
        stake=bet.stake,
        placed_at=bet.placed_at,
        flag_id=bet.flag_id,
        note=bet.note,
        void=bet.status == BetStatus.VOID,
    )
    given: dict[str, Any] = {
        name: getattr(correction, name)
        for name in ("outcome", "bookmaker", "price_text", "stake", "placed_at", "note", "flag_id")
        if name in correction.given
    }
    if "void" in correction.given and correction.void is not None:
        given["void"] = correction.void
    return replace(draft, **given)


def delete_bet(session: Session, bet_id: int, channel: BetChannel, now: dt.datetime) -> None:
    """Delete bet ``bet_id``; its trail keeps a ``deleted`` change holding what it was."""
    bet = _bet(session, bet_id)
    session.add(
        BetChange(
            bet_id=bet.id,
            change=BetChangeKind.DELETED,
            channel=channel,
            at=now,
            before=bet_fields(bet),
            after=None,
        )
    )
    session.delete(bet)
    session.flush()


def _bet(session: Session, bet_id: int) -> Bet:
    """Bet ``bet_id`` read afresh ``FOR UPDATE``: a settlement, correction or deletion of it
    under way commits first, and what it wrote is what this change starts from."""
    bet = session.scalar(_locked_bets(Bet.id == bet_id))
    if bet is None:
        raise BetNotFoundError(bet_id)
    return bet


def _locked_bets(condition: ColumnElement[bool]) -> Select[Bet]:
    """The bets that fit ``condition``, in id order, locked ``FOR UPDATE`` and read afresh
    (after any wait for the lock) over what the session holds."""
    return (
        select(Bet)
        .where(condition)
        .order_by(Bet.id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )


def move_bets(
    session: Session, match_id: int, twin_id: int, now: dt.datetime, window: dt.timedelta
) -> int:
    """Move the bets of match ``match_id`` to ``twin_id`` (a team merge folds the one into
    the other), each move appended to its trail, and settle them with their new match.

    The folded match's flags go with it: a bet that followed one follows the twin's flag of
    the same outcome instead (taking its value source), or follows none; either way the
    trail's change says so."""
    bets = list(session.scalars(_locked_bets(Bet.match_id == match_id)))
    twin_flags = {
        flag.outcome: flag
        for flag in session.scalars(select(ValueFlag).where(ValueFlag.match_id == twin_id))
    }
    for bet in bets:
        before = bet_fields(bet)
        bet.match_id = twin_id
        if bet.flag_id is not None:
            flag = twin_flags.get(bet.outcome)
            bet.flag_id = None if flag is None else flag.id
            bet.source = None if flag is None else flag.value_source
        session.add(
            BetChange(
                bet_id=bet.id,
                change=BetChangeKind.CORRECTED,
                channel=BetChannel.MERGE,
                at=now,
                before=before,
                after=bet_fields(bet),
            )
        )
    session.flush()
    if bets:
        _settle(session, bets, _matches(session, [twin_id]), now, window)
    return len(bets)


def bet_ids_of_match(session: Session, match_id: int) -> list[int]:
    """The ids of the bets placed on match ``match_id``."""
    return list(session.scalars(select(Bet.id).where(Bet.match_id == match_id).order_by(Bet.id)))


# --- reading the book ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BetFilter:
    """Which bets the book's list, export and summary show: with a status, at a bookmaker
    (code or name), in a competition (its code), of a match, following a flag priced by one
    of the links ``sources`` (normalised), placed in [``placed_from``, ``placed_to``] (both
    ends included, as the flag ledger's window)."""

    status: BetStatus | None = None
    bookmaker: str | None = None
    competition: str | None = None
    match_id: int | None = None
    sources: tuple[str, ...] | None = None
    placed_from: dt.datetime | None = None
    placed_to: dt.datetime | None = None


@dataclass(frozen=True, slots=True)
class BetMatch:
    """A bet's match as the book shows it."""

    id: int
    competition: str
    home_team: str
    away_team: str
    kickoff: dt.datetime
    result: str | None


@dataclass(frozen=True, slots=True)
class BetClose:
    """The reference's close a bet was settled against: its price of the bet's outcome."""

    price: float
    origin: CloseOrigin
    captured_at: dt.datetime | None


@dataclass(frozen=True, slots=True)
class BetChangeRecord:
    """One change of a bet's audit trail."""

    id: int
    change: BetChangeKind
    channel: BetChannel
    at: dt.datetime
    before: dict[str, Any] | None
    after: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class BookBet:
    """A bet of the book with its match and how it fared; with its trail when read alone."""

    id: int
    match: BetMatch
    outcome: str
    bookmaker: str
    price: float
    price_text: str
    stake: float
    placed_at: dt.datetime
    flag_id: int | None
    source: str | None
    note: str | None
    status: BetStatus
    returned: float | None
    profit: float | None
    clv: float | None
    closing_probability: float | None
    close: BetClose | None
    settled_at: dt.datetime | None
    created_at: dt.datetime
    updated_at: dt.datetime
    changes: tuple[BetChangeRecord, ...] = ()


_WITH_MATCH = (
    joinedload(Bet.match).joinedload(Match.competition),
    joinedload(Bet.match).joinedload(Match.home_team),
    joinedload(Bet.match).joinedload(Match.away_team),
)


def list_bets(session: Session, filters: BetFilter, window: PageWindow) -> Paged[BookBet]:
    """The bets that fit ``filters``, latest placed first."""
    statement: Select[Bet] = (
        select(Bet)
        .where(*bet_conditions(filters))
        .options(*_WITH_MATCH)
        .order_by(Bet.placed_at.desc(), Bet.id.desc())
    )
    return paginate(session, statement, window).map(book_bet)


def bet_conditions(filters: BetFilter) -> list[ColumnElement[bool]]:
    """The conditions on :class:`app.db.orm.Bet` of ``filters``."""
    conditions: list[ColumnElement[bool]] = []
    if filters.status is not None:
        conditions.append(Bet.status == filters.status)
    if filters.bookmaker is not None:
        conditions.append(Bet.bookmaker == commission_code(filters.bookmaker))
    if filters.competition is not None:
        in_competition = (
            select(Match.id)
            .join(Competition, Match.competition_id == Competition.id)
            .where(Competition.code == filters.competition.strip())
        )
        conditions.append(Bet.match_id.in_(in_competition))
    if filters.match_id is not None:
        conditions.append(Bet.match_id == filters.match_id)
    if filters.sources is not None:
        conditions.append(Bet.source.in_(filters.sources))
    if filters.placed_from is not None:
        conditions.append(Bet.placed_at >= filters.placed_from)
    if filters.placed_to is not None:
        conditions.append(Bet.placed_at <= filters.placed_to)
    return conditions


def bet_with_trail(session: Session, bet_id: int) -> BookBet:
    """Bet ``bet_id`` with its audit trail, oldest change first."""
    bet = session.scalar(select(Bet).where(Bet.id == bet_id).options(*_WITH_MATCH))
    if bet is None:
        raise BetNotFoundError(bet_id)
    return replace(book_bet(bet), changes=trail_of(session, bet_id))


def trail_of(session: Session, bet_id: int) -> tuple[BetChangeRecord, ...]:
    """The changes of bet ``bet_id`` (deleted or not), oldest first."""
    rows = session.scalars(
        select(BetChange).where(BetChange.bet_id == bet_id).order_by(BetChange.id)
    )
    return tuple(
        BetChangeRecord(
            row.id,
            BetChangeKind(row.change),
            BetChannel(row.channel),
            row.at,
            row.before,
            row.after,
        )
        for row in rows
    )


def book_bet(bet: Bet) -> BookBet:
    """A stored bet (its match and names loaded) as the book shows it."""
    match = bet.match
    close = None
    if bet.close_price is not None and bet.close_origin is not None:
        close = BetClose(bet.close_price, CloseOrigin(bet.close_origin), bet.close_captured_at)
    return BookBet(
        id=bet.id,
        match=BetMatch(
            match.id,
            match.competition.code,
            match.home_team.name,
            match.away_team.name,
            match.kickoff,
            match.result,
        ),
        outcome=bet.outcome,
        bookmaker=bet.bookmaker,
        price=bet.price,
        price_text=bet.price_text,
        stake=bet.stake,
        placed_at=bet.placed_at,
        flag_id=bet.flag_id,
        source=bet.source,
        note=bet.note,
        status=BetStatus(bet.status),
        returned=bet.returned,
        profit=bet.profit,
        clv=bet.clv,
        closing_probability=bet.closing_probability,
        close=close,
        settled_at=bet.settled_at,
        created_at=bet.created_at,
        updated_at=bet.updated_at,
    )


# --- the API's and the command line's steps ---------------------------------------------


def add_bet(
    session: Session,
    draft: BetDraft,
    channel: BetChannel,
    now: dt.datetime,
    window: dt.timedelta = CLOSING_WINDOW,
) -> BookBet:
    """Record one bet (settled at once if its match has a result), as the book shows it."""
    (bet,) = record_bets(session, [draft], channel, now, window)
    return bet_with_trail(session, bet.id)


def corrected_bet(
    session: Session,
    bet_id: int,
    correction: BetCorrection,
    channel: BetChannel,
    now: dt.datetime,
    window: dt.timedelta = CLOSING_WINDOW,
) -> BookBet:
    """:func:`correct_bet`, then the bet with its trail."""
    correct_bet(session, bet_id, correction, channel, now, window)
    return bet_with_trail(session, bet_id)
