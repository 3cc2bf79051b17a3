"""The seasons of a walk-forward backtest: which are tested, what each competition trains
on, and a season's training and test tables (no look-ahead)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from app.domain.tables import MatchTable, QuoteTable, restrict

# Per competition, the seasons it trains on.
TrainingPlan = dict[str, tuple[str, ...]]


def seasons_of(matches: MatchTable) -> list[str]:
    return sorted({str(season) for season in matches.season if season})


def training_plan(matches: MatchTable, season: str, count: int) -> tuple[TrainingPlan, list[str]]:
    """Per competition playing ``season``: its own ``count`` latest seasons before it.

    Competitions with fewer earlier seasons are not tested; a competition missing a season
    of the data trains across the gap. Both are said in the notes."""
    every_season = seasons_of(matches)
    plan: TrainingPlan = {}
    notes: list[str] = []
    for competition in sorted(set(matches.competition[matches.season == season].tolist())):
        own = sorted(
            {
                str(s)
                for s in matches.season[matches.competition == competition].tolist()
                if s and s < season
            }
        )
        if len(own) < count:
            notes.append(
                f"{competition} is not tested: {len(own)} earlier season(s) in the data, "
                f"{count} needed"
            )
            continue
        chosen = tuple(own[-count:])
        gaps = [s for s in every_season if chosen[0] < s < season and s not in chosen]
        if gaps:
            notes.append(
                f"{competition} has no {', '.join(gaps)} in the data: "
                f"trained on {', '.join(chosen)}"
            )
        plan[competition] = chosen
    return plan, notes


def seasons_to_test(
    matches: MatchTable, count: int, asked: tuple[str, ...] | None
) -> list[tuple[str, TrainingPlan, list[str]]]:
    """Each season asked for (None: every season some competition can be tested in), with
    its training plan ``count`` seasons deep and its notes; ``ValueError`` if one cannot be
    tested."""
    seasons = seasons_of(matches)
    if not seasons:
        raise ValueError("there are no matches to evaluate")
    plans = {season: training_plan(matches, season, count) for season in seasons}
    if asked is None:
        asked = tuple(season for season in seasons if plans[season][0])
        if not asked:
            raise ValueError(
                f"no season can be tested: none has a competition with {count} earlier "
                f"season(s) in the data ({len(seasons)} season(s) given)"
            )
    for season in asked:
        if season not in plans:
            raise ValueError(f"no matches of season {season!r} in the data")
        if not plans[season][0]:
            raise ValueError(
                f"season {season} cannot be tested: its competitions have fewer earlier "
                f"seasons than the {count} needed to train"
            )
    return [(season, *plans[season]) for season in asked]


@dataclass(frozen=True)
class Split:
    """A fold's training and test tables, and when its test season began."""

    train_matches: MatchTable
    train_quotes: QuoteTable
    test_matches: MatchTable
    test_quotes: QuoteTable
    test_start: float
    untested: int  # matches of the season whose competition has too few earlier seasons


def split_season(matches: MatchTable, quotes: QuoteTable, season: str, plan: TrainingPlan) -> Split:
    """The training tables of ``plan`` before ``season`` began, and the season's tests."""
    of_season = matches.season == season
    in_test = of_season & np.isin(matches.competition, list(plan))
    test_start = float(matches.kickoff[in_test].min())
    in_train = np.zeros(len(matches), dtype=bool)
    for competition, seasons in plan.items():
        in_train |= (matches.competition == competition) & np.isin(matches.season, seasons)
    # The no-look-ahead rule: training matches kicked off before the test season began.
    in_train &= matches.kickoff < test_start
    train_matches, train_quotes = restrict(matches, quotes, in_train)
    test_matches, test_quotes = restrict(matches, quotes, in_test)
    return Split(
        train_matches,
        train_quotes,
        test_matches,
        test_quotes,
        test_start,
        untested=int((of_season & ~in_test).sum()),
    )
