"""The bettor's book in and out: a CSV of bets imported (every bad row named, nothing
imported if any), the book exported in the same format, and its summary.

Formats and statistics in :mod:`app.domain.bet_csv` and :mod:`app.domain.bet_book`; bets
are recorded by the one path, :func:`app.services.bets.record_bets`.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from sqlalchemy import Row, select
from sqlalchemy.orm import Session, aliased

from app.db.engine import on_commit
from app.db.orm import Bet, Competition, Match, Team
from app.domain.bet_book import BookedBet, BookSummary, out_of_bounds, summarise_book
from app.domain.bet_csv import (
    BetRow,
    ExportedBet,
    MatchName,
    RowError,
    bets_csv,
    parse_bet_csv,
)
from app.domain.bets import BetChannel, BetDraft, BetStatus, decimal_price
from app.domain.bookmakers import commission_code
from app.domain.flags import CLOSING_WINDOW
from app.domain.records import settled_result
from app.domain.wording import counted
from app.services.bets import BetDraftError, BetFilter, bet_conditions, record_bets
from app.services.bulk import chunks, ids_by
from app.services.ingest.dimensions import resolve_teams
from app.services.ingest.matches import (
    MatchKey,
    StoredMatch,
    load_matches_by_id,
    load_matches_by_key,
)
from app.services.locks import serialise_match_rewrites

log = logging.getLogger(__name__)

# A user's kickoff day may be a day off the stored (UTC) one: their time zone, or a late
# kickoff written on the day it ended.
KICKOFF_DAYS_AROUND = 1


class BetImportError(ValueError):
    """A file with bad rows: every error, by line; nothing was imported."""

    def __init__(self, errors: Sequence[RowError]) -> None:
        self.errors = sorted(errors, key=lambda error: (error.line, error.column or ""))
        first = self.errors[0]
        super().__init__(
            f"{counted(len(self.errors), 'error')}, the first on line {first.line}: {first.message}"
        )


@dataclass(frozen=True, slots=True)
class ImportReport:
    """What an import recorded (or, in a dry run, would record): the new bets' ids, and the
    lines of rows already in the book (the same match, outcome, bookmaker, price, stake and
    time placed), which are not recorded twice."""

    dry_run: bool
    imported: int
    bet_ids: list[int] = field(default_factory=list)
    already_recorded: list[int] = field(default_factory=list)


def import_bets(
    session: Session,
    data: bytes | str,
    now: dt.datetime,
    *,
    dry_run: bool = False,
    window: dt.timedelta = CLOSING_WINDOW,
) -> ImportReport:
    """Record the bets of a CSV file in the caller's transaction, all or none
    (:class:`BetImportError` names every bad row); ``dry_run`` checks and records nothing.
    A bet of a match whose result is stored is settled at once, its close read with
    ``window`` (the operator's closing window)."""
    parsed = parse_bet_csv(data.encode() if isinstance(data, str) else data)
    if parsed.errors and not parsed.rows:
        raise BetImportError(parsed.errors)
    errors = list(parsed.errors)
    # Before the rows already in the book are looked for: the same file sent twice at once
    # is then recorded once (the second finds the first's bets), as record_bets serialises.
    serialise_match_rewrites(session)
    match_ids = _resolve_matches(session, parsed.rows, parsed.names_of_bad_rows, errors)
    rows = [row for row in parsed.rows if row.line in match_ids]
    new_rows, repeated = _new_rows(session, rows, match_ids)
    drafts = [_draft(row, match_ids[row.line]) for row in new_rows]
    with session.begin_nested() as attempt:
        try:
            bets = record_bets(session, drafts, BetChannel.IMPORT, now, window)
        except BetDraftError as error:
            errors.extend(
                RowError(new_rows[problem.index].line, problem.field, problem.message)
                for problem in error.problems
            )
            bets = []
        if errors or dry_run:
            attempt.rollback()
    if errors:
        raise BetImportError(errors)
    report = ImportReport(
        dry_run=dry_run,
        imported=len(drafts),
        bet_ids=[] if dry_run else [bet.id for bet in bets],
        already_recorded=repeated,
    )
    if not dry_run:
        on_commit(session, lambda: _log_import(report))
    return report


def _log_import(report: ImportReport) -> None:
    log.info(
        "imported %s (%d already in the book)",
        counted(report.imported, "bet"),
        len(report.already_recorded),
    )


def _draft(row: BetRow, match_id: int) -> BetDraft:
    return BetDraft(
        match_id=match_id,
        outcome=row.outcome,
        bookmaker=row.bookmaker,
        price_text=row.price_text,
        stake=row.stake,
        placed_at=row.placed_at,
        flag_id=row.flag_id,
        note=row.note,
        void=row.void,
    )


def _resolve_matches(
    session: Session,
    rows: Sequence[BetRow],
    names_of_bad_rows: Mapping[int, MatchName],
    errors: list[RowError],
) -> dict[int, int]:
    """The stored match of each row, by line; rows whose match is not found, is found twice
    or contradicts the row's won or lost are reported in ``errors`` (and so are the names
    no stored match has in bad rows)."""
    names = {row.line: row.match_name for row in rows if row.match_name is not None}
    candidates = _matches_by_name(session, {**names, **names_of_bad_rows}, errors)
    for line, name in names_of_bad_rows.items():
        if candidates.get(line) == []:
            errors.append(_not_one_match(line, name, []))
    stored = load_matches_by_id(
        session, sorted({row.match_id for row in rows if row.match_id is not None})
    )
    found: dict[int, int] = {}
    for row in rows:
        match = _row_match(row, candidates.get(row.line), stored, errors)
        if match is not None and _agrees_with_result(row, match, errors):
            found[row.line] = match.id
    return found


def _row_match(
    row: BetRow,
    named: list[StoredMatch] | None,
    stored: dict[int, StoredMatch],
    errors: list[RowError],
) -> StoredMatch | None:
    """The row's match: the only one its names fit, or the one its id gives, which must be
    one of those its names fit. ``named`` is None where the row names no match or a name is
    unknown (already reported)."""
    if row.match_id is None:
        if named is not None and len(named) != 1:
            assert row.match_name is not None
            errors.append(_not_one_match(row.line, row.match_name, [m.id for m in named]))
        return named[0] if named is not None and len(named) == 1 else None
    match = stored.get(row.match_id)
    if match is None:
        errors.append(RowError(row.line, "match_id", f"no match {row.match_id} is stored"))
        return None
    if row.match_name is None:
        return match
    if named is None:
        return None
    if match.id not in {m.id for m in named}:
        errors.append(
            RowError(
                row.line,
                "match_id",
                f"match {match.id} is not the match the row names ({_named(row.match_name)}"
                f"{_ids_of(named)}); give one or make them agree",
            )
        )
        return None
    return match


def _ids_of(named: list[StoredMatch]) -> str:
    if not named:
        return ": no stored match"
    return ": match " + ", ".join(str(m.id) for m in named)


def _agrees_with_result(row: BetRow, match: StoredMatch, errors: list[RowError]) -> bool:
    """A row saying won or lost must say what the stored result says."""
    result = settled_result(match.home_goals, match.away_goals)
    if result is None or row.status not in (BetStatus.WON, BetStatus.LOST):
        return True
    actual = BetStatus.WON if row.outcome == result else BetStatus.LOST
    if row.status is actual:
        return True
    errors.append(
        RowError(
            row.line,
            "status",
            f"the row says {row.status}, but match {match.id} ended "
            f"{match.home_goals}-{match.away_goals} (result {result}): outcome {row.outcome} "
            f"{actual}; is it the right match and outcome?",
        )
    )
    return False


def _named(name: MatchName) -> str:
    return f"{name.competition} {name.home} v {name.away} on {name.kickoff.isoformat()}"


def _matches_by_name(
    session: Session, names: Mapping[int, MatchName], errors: list[RowError]
) -> dict[int, list[StoredMatch]]:
    """The stored matches each line's names fit, by line: its competition and teams (through
    the aliases), kicking off within a day of the line's day, by id. A line with an unknown
    name is reported in ``errors`` and left out."""
    codes = sorted({name.competition for name in names.values()})
    competitions = ids_by(session, Competition.code, Competition.id, codes)
    teams = resolve_teams(
        session, (team for n in names.values() for team in (n.home, n.away)), create=False
    )
    keys = {line: _keys(line, name, competitions, teams, errors) for line, name in names.items()}
    stored = load_matches_by_key(session, _date_ranges(k for ks in keys.values() for k in ks))
    return {
        line: sorted({stored[key] for key in line_keys if key in stored}, key=lambda m: m.id)
        for line, line_keys in keys.items()
        if line_keys
    }


def _keys(
    line: int,
    name: MatchName,
    competitions: dict[str, int],
    teams: dict[str, int],
    errors: list[RowError],
) -> list[MatchKey]:
    """The keys a line's match may have (its day and a day either side), or none with the
    unknown names reported."""
    competition = competitions.get(name.competition)
    if competition is None:
        errors.append(
            RowError(line, "competition", f"no competition {name.competition!r} is stored")
        )
    for column, team in (("home", name.home), ("away", name.away)):
        if team not in teams:
            errors.append(
                RowError(
                    line,
                    column,
                    f"no team or alias {team!r} is stored; map it to a stored team with "
                    f"`oddsboost teams alias {team!r} 'Stored Name'`",
                )
            )
    if competition is None or name.home not in teams or name.away not in teams:
        return []
    days = range(-KICKOFF_DAYS_AROUND, KICKOFF_DAYS_AROUND + 1)
    return [
        (competition, teams[name.home], teams[name.away], name.kickoff + dt.timedelta(days=d))
        for d in days
    ]


def _date_ranges(keys: Iterable[MatchKey]) -> dict[int, tuple[dt.date, dt.date]]:
    ranges: dict[int, tuple[dt.date, dt.date]] = {}
    for competition, _home, _away, day in keys:
        first, last = ranges.get(competition, (day, day))
        ranges[competition] = (min(first, day), max(last, day))
    return ranges


def _not_one_match(line: int, name: MatchName, ids: list[int]) -> RowError:
    named = _named(name)
    if not ids:
        message = f"no stored match {named} or a day either side"
    else:
        message = f"{named} could be matches {', '.join(map(str, ids))}: give match_id"
    return RowError(line, "kickoff", message)


BetKey = tuple[int, str, str, float, float, dt.datetime]
_BookRow = Row[Bet, str, str, str, dt.datetime]


def _new_rows(
    session: Session, rows: Sequence[BetRow], match_ids: dict[int, int]
) -> tuple[list[BetRow], list[int]]:
    """The rows not yet in the book, and the lines of those that are: a row is a stored bet
    when one has its match, outcome, bookmaker, price, stake and time placed (as many rows
    as there are such bets)."""
    stored: Counter[BetKey] = Counter()
    for part in chunks(sorted(set(match_ids.values()))):
        for bet in session.scalars(select(Bet).where(Bet.match_id.in_(part))):
            stored[
                (bet.match_id, bet.outcome, bet.bookmaker, bet.price, bet.stake, bet.placed_at)
            ] += 1
    new: list[BetRow] = []
    repeated: list[int] = []
    for row in rows:
        key = (
            match_ids[row.line],
            row.outcome,
            commission_code(row.bookmaker),
            decimal_price(row.price_text),
            row.stake,
            row.placed_at,
        )
        if stored[key] > 0:
            stored[key] -= 1
            repeated.append(row.line)
        else:
            new.append(row)
    return new, repeated


def _book_rows(session: Session, filters: BetFilter) -> Iterable[_BookRow]:
    home, away = aliased(Team), aliased(Team)
    statement = (
        select(Bet, Competition.code, home.name, away.name, Match.kickoff)
        .join(Match, Bet.match_id == Match.id)
        .join(Competition, Match.competition_id == Competition.id)
        .join(home, Match.home_team_id == home.id)
        .join(away, Match.away_team_id == away.id)
        .where(*bet_conditions(filters))
        .order_by(Bet.placed_at, Bet.id)
    )
    return session.execute(statement).all()


def export_bets(session: Session, filters: BetFilter) -> str:
    """The bets ``filters`` selects as CSV (the import's format plus the settlement's
    columns), in the order they were placed."""
    return bets_csv(
        ExportedBet(
            id=bet.id,
            placed_at=bet.placed_at,
            competition=code,
            kickoff=kickoff,
            home=home,
            away=away,
            outcome=bet.outcome,
            bookmaker=bet.bookmaker,
            price_text=bet.price_text,
            stake=bet.stake,
            status=str(bet.status),
            note=bet.note,
            match_id=bet.match_id,
            flag_id=bet.flag_id,
            result=bet.result,
            returned=bet.returned,
            profit=bet.profit,
            close_price=bet.close_price,
            closing_probability=bet.closing_probability,
            clv=bet.clv,
            close_origin=None if bet.close_origin is None else str(bet.close_origin),
            settled_at=bet.settled_at,
        )
        for bet, code, home, away, kickoff in _book_rows(session, filters)
    )


def summarise_bets(
    session: Session,
    filters: BetFilter,
    *,
    starting_bankroll: float = 0.0,
    time_zone: str = "UTC",
) -> BookSummary:
    """The summary of the bets ``filters`` selects (:func:`app.domain.bet_book.summarise_book`)."""
    booked = [
        BookedBet(
            id=bet.id,
            placed_at=bet.placed_at,
            bookmaker=bet.bookmaker,
            competition=code,
            source=bet.source,
            status=bet.status,
            stake=bet.stake,
            profit=bet.profit,
            clv=bet.clv,
            settled_at=bet.settled_at,
            kickoff=kickoff,
        )
        for bet, code, _home, _away, kickoff in _book_rows(session, filters)
    ]
    left_out = out_of_bounds(booked)
    if left_out:
        # Only a bet stored before stakes were bounded can be one; a correction mends it.
        log.warning(
            "%s out of bounds, left out of the summary: %s",
            counted(len(left_out), "bet"),
            ", ".join(map(str, left_out[:20])),
        )
    return summarise_book(booked, starting_bankroll=starting_bankroll, time_zone=time_zone)
