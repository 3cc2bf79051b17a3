"""The bettor's book: bets recorded (from the API, the command line or an import), each
change appended to their audit trail. Rules in :mod:`app.domain.bets`."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db.orm import Bet, BetChange, Match, ValueFlag
from app.domain.bets import (
    BetChangeKind,
    BetChannel,
    BetDraft,
    BetStatus,
    PriceFormatError,
    decimal_price,
)
from app.domain.bookmakers import commission_code
from app.services.ingest.bulk import chunks


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


def record_bets(
    session: Session, drafts: Sequence[BetDraft], channel: BetChannel, now: dt.datetime
) -> list[Bet]:
    """Record ``drafts`` in the caller's transaction, each with its ``created`` change, or
    none of them (:class:`BetDraftError` names every draft that cannot be recorded)."""
    matches = _matches(session, {draft.match_id for draft in drafts})
    flags = _flags(session, {d.flag_id for d in drafts if d.flag_id is not None})
    problems: list[DraftProblem] = []
    bets: list[Bet] = []
    for index, draft in enumerate(drafts):
        found = _draft_problems(index, draft, matches, flags)
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


def _matches(session: Session, ids: set[int]) -> dict[int, Match]:
    found: dict[int, Match] = {}
    for part in chunks(sorted(ids)):
        found.update(
            (row.id, row) for row in session.scalars(select(Match).where(Match.id.in_(part)))
        )
    return found


def _flags(session: Session, ids: set[int]) -> dict[int, ValueFlag]:
    found: dict[int, ValueFlag] = {}
    for part in chunks(sorted(ids)):
        rows = session.scalars(select(ValueFlag).where(ValueFlag.id.in_(part)))
        found.update((row.id, row) for row in rows)
    return found


def _draft_problems(
    index: int, draft: BetDraft, matches: dict[int, Match], flags: dict[int, ValueFlag]
) -> list[DraftProblem]:
    problems: list[DraftProblem] = []
    if draft.match_id not in matches:
        problems.append(DraftProblem(index, "match_id", f"no match {draft.match_id} is stored"))
    if draft.outcome not in ("1", "X", "2"):
        problems.append(DraftProblem(index, "outcome", f"{draft.outcome!r} is not 1, X or 2"))
    if not (math.isfinite(draft.stake) and draft.stake > 0):
        problems.append(DraftProblem(index, "stake", f"stake {draft.stake:g} must be above 0"))
    if draft.placed_at.tzinfo is None:
        problems.append(DraftProblem(index, "placed_at", "a time placed needs its time zone"))
    try:
        decimal_price(draft.price_text)
    except PriceFormatError as error:
        problems.append(DraftProblem(index, "price", str(error)))
    if draft.flag_id is not None:
        flag = flags.get(draft.flag_id)
        if flag is None:
            problems.append(DraftProblem(index, "flag_id", f"no flag {draft.flag_id} is stored"))
        elif flag.match_id != draft.match_id or flag.outcome != draft.outcome:
            problems.append(
                DraftProblem(
                    index,
                    "flag_id",
                    f"flag {flag.id} is outcome {flag.outcome} of match {flag.match_id}, "
                    f"not outcome {draft.outcome} of match {draft.match_id}",
                )
            )
    return problems


def _bet_of(draft: BetDraft, flag: ValueFlag | None, now: dt.datetime) -> Bet:
    return Bet(
        match_id=draft.match_id,
        outcome=draft.outcome,
        bookmaker=commission_code(draft.bookmaker),
        price=decimal_price(draft.price_text),
        price_text=draft.price_text.strip(),
        stake=draft.stake,
        placed_at=draft.placed_at,
        flag_id=draft.flag_id,
        source=None if flag is None else flag.value_source,
        note=draft.note,
        status=BetStatus.VOID if draft.void else BetStatus.OPEN,
        created_at=now,
        updated_at=now,
    )
