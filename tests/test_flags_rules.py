"""The flag ledger's rules on plain records: the diff of a new evaluation, the closing line
chosen, and a flag's scores (every expected figure worked out by hand)."""

from __future__ import annotations

import datetime as dt

import pytest

from app.domain.flags import (
    CloseOrigin,
    FlagChange,
    FlagState,
    FlagStatus,
    FlagToScore,
    ReferenceQuote,
    Standing,
    closing_line,
    flag_changes,
    score_flags,
)
from app.domain.vocabulary import Phase

KICKOFF = dt.datetime(2026, 1, 10, 15, 0, tzinfo=dt.UTC)
WINDOW = dt.timedelta(minutes=30)


def standing(outcome: str, net_price: float) -> Standing:
    return Standing(outcome, net_price, net_price, "B365", 0.1, 0.3)


def test_a_new_flag_is_raised_and_a_standing_one_only_improves() -> None:
    stored = [FlagState(1, 10, "2", FlagStatus.OPEN, 4.0)]
    raises, changes = flag_changes(
        stored,
        {10: standing("2", 3.9), 11: standing("1", 2.5)},
        {},
    )
    assert [(r.match_id, r.standing.outcome) for r in raises] == [(11, "1")]
    assert changes == []  # a lower price is no event: the flag stands as it was

    _, better = flag_changes(stored, {10: standing("2", 4.2)}, {})
    assert [(c.flag_id, c.change) for c in better] == [(1, FlagChange.IMPROVED)]


def test_a_flag_no_longer_chosen_is_withdrawn_and_may_be_raised_again() -> None:
    open_flag = FlagState(1, 10, "2", FlagStatus.OPEN, 4.0)
    now_priced = {(10, "2"): standing("2", 3.5)}
    raises, changes = flag_changes([open_flag], {10: None}, now_priced)
    assert raises == []
    assert [(c.flag_id, c.change, c.standing) for c in changes] == [
        (1, FlagChange.WITHDRAWN, standing("2", 3.5))
    ]
    # Another outcome chosen instead: the old one withdrawn, the new one raised.
    raises, changes = flag_changes([open_flag], {10: standing("X", 3.4)}, {})
    assert [(r.match_id, r.standing.outcome) for r in raises] == [(10, "X")]
    assert [c.change for c in changes] == [FlagChange.WITHDRAWN]

    withdrawn = FlagState(1, 10, "2", FlagStatus.WITHDRAWN, 4.0)
    _, again = flag_changes([withdrawn], {10: standing("2", 3.8)}, {})
    assert [c.change for c in again] == [FlagChange.RAISED_AGAIN]
    # A withdrawn flag still not chosen, or a match not evaluated, changes nothing.
    assert flag_changes([withdrawn], {10: None}, {}) == ([], [])
    assert flag_changes([open_flag], {}, {}) == ([], [])


def quote(
    phase: Phase, minutes_before: float | None, prices: tuple[float, float, float]
) -> ReferenceQuote:
    captured = None if minutes_before is None else KICKOFF - dt.timedelta(minutes=minutes_before)
    return ReferenceQuote(phase, prices, captured)


def test_the_close_is_the_last_live_quote_in_the_window_else_the_season_file_s() -> None:
    early = quote(Phase.PRE, 45, (2.0, 4.0, 4.0))
    late = quote(Phase.PRE, 10, (1.6, 4.0, 8.0))
    closer = quote(Phase.PRE, 20, (1.7, 4.0, 6.0))
    season = quote(Phase.CLOSING, None, (2.5, 5.0, 2.5))
    after_kickoff = quote(Phase.PRE, -5, (1.1, 9.0, 20.0))

    live = closing_line([early, closer, late, season, after_kickoff], KICKOFF, WINDOW)
    assert live is not None
    assert (live.prices, live.origin) == ((1.6, 4.0, 8.0), CloseOrigin.LIVE)
    assert live.captured_at == KICKOFF - dt.timedelta(minutes=10)

    filed = closing_line([early, season, after_kickoff], KICKOFF, WINDOW)
    assert filed is not None
    assert (filed.prices, filed.origin) == ((2.5, 5.0, 2.5), CloseOrigin.SEASON_FILE)

    assert closing_line([early, after_kickoff], KICKOFF, WINDOW) is None


def test_scores_of_a_won_and_a_lost_flag_against_a_close_without_margin() -> None:
    # A book without margin is its own fair line (power's exponent is 1): 1/2, 1/4, 1/4.
    close = closing_line([quote(Phase.PRE, 5, (2.0, 4.0, 4.0))], KICKOFF, WINDOW)
    flags = [FlagToScore(1, "2", 4.4), FlagToScore(2, "1", 1.9)]
    won, lost = score_flags(flags, "2", close)
    assert won.flat_return == pytest.approx(3.4)  # 4.4 − 1
    assert won.closing_probability == pytest.approx(0.25)
    assert won.clv == pytest.approx(0.1)  # 4.4 × 0.25 − 1
    assert lost.flat_return == -1.0
    assert lost.clv == pytest.approx(-0.05)  # 1.9 × 0.5 − 1

    (unclosed,) = score_flags(flags[:1], "X", None)
    assert (unclosed.flat_return, unclosed.closing_probability, unclosed.clv) == (-1.0, None, None)


def test_a_price_seen_to_hold_into_the_window_is_the_live_close() -> None:
    kickoff = KICKOFF
    moved = kickoff - dt.timedelta(hours=3)  # the price last changed three hours before

    def held(seen_minutes_before: float, prices: tuple[float, float, float]) -> ReferenceQuote:
        seen = kickoff - dt.timedelta(minutes=seen_minutes_before)
        return ReferenceQuote(Phase.PRE, prices, moved, seen)

    season = quote(Phase.CLOSING, None, (2.5, 5.0, 2.5))
    # Seen again 11 minutes before kickoff: a live close, captured hours before.
    close = closing_line([held(11, (2.0, 4.0, 4.0)), season], kickoff, WINDOW)
    assert close is not None
    assert (close.prices, close.origin) == ((2.0, 4.0, 4.0), CloseOrigin.LIVE)
    assert (close.captured_at, close.seen_at) == (moved, kickoff - dt.timedelta(minutes=11))
    # Seen last 31 minutes before: not known to hold, so the season file's close.
    stale = closing_line([held(31, (2.0, 4.0, 4.0)), season], kickoff, WINDOW)
    assert stale is not None
    assert (stale.origin, stale.seen_at) == (CloseOrigin.SEASON_FILE, None)
    # Seen after kickoff, unchanged: it held until kickoff, and is counted so.
    after = closing_line([held(-20, (2.0, 4.0, 4.0))], kickoff, WINDOW)
    assert after is not None
    assert (after.origin, after.seen_at) == (CloseOrigin.LIVE, kickoff)
    # The close is the latest price captured before kickoff: an older one seen later
    # (a stale sighting of a price since replaced) is not.
    replaced = ReferenceQuote(Phase.PRE, (1.8, 4.0, 5.0), moved - dt.timedelta(hours=1), kickoff)
    latest = closing_line([replaced, held(11, (2.0, 4.0, 4.0))], kickoff, WINDOW)
    assert latest is not None
    assert latest.prices == (2.0, 4.0, 4.0)
