"""The seasons of a walk-forward backtest: which are tested, what each competition trains
on before a test season, and the training and test tables of a season (no look-ahead)."""

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


class SeasonPlans:
    """The training plan of every season of the tables, each ``count`` seasons deep."""

    def __init__(self, matches: MatchTable, count: int) -> None:
        self.seasons = seasons_of(matches)
        if not self.seasons:
            raise ValueError("there are no matches to evaluate")
        self.count = count
        self._plans = {season: training_plan(matches, season, count) for season in self.seasons}

    def to_test(self, asked: tuple[str, ...] | None) -> tuple[str, ...]:
        """The seasons asked for, or (None) every season some competition can be tested in."""
        if asked is not None:
            return asked
        testable = tuple(season for season in self.seasons if self._plans[season][0])
        if not testable:
            raise ValueError(
                f"no season can be tested: none has a competition with {self.count} earlier "
                f"season(s) in the data ({len(self.seasons)} season(s) given)"
            )
        return testable

    def of(self, season: str) -> tuple[TrainingPlan, list[str]]:
        """The plan of a test season and its notes; ``ValueError`` if it cannot be tested."""
        if season not in self._plans:
            raise ValueError(f"no matches of season {season!r} in the data")
        plan, notes = self._plans[season]
        if not plan:
            raise ValueError(
                f"season {season} cannot be tested: its competitions have fewer earlier "
                f"seasons than the {self.count} needed to train"
            )
        return plan, notes


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
