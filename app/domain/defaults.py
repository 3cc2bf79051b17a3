"""Default choices of the model, apart from the numeric code so the settings load light."""

from __future__ import annotations

from app.domain.vocabulary import FitTarget, Method, Phase

# Power de-margining keeps the favourite-longshot bias and is among the most accurate on
# football (see app/domain/odds.py).
METHOD = Method.POWER
PHASE = Phase.PRE
# What the weights are fitted toward: the closing line, whose bets had more closing-line
# value in the value backtest (docs/explanation/evaluation.md measures both).
FIT_TARGET = FitTarget.CLOSE
# The closing line that measures CLV and that a fit toward the close learns from:
# Pinnacle's, de-margined with the power method.
CLOSING_BOOKMAKER = "PS"
CLOSING_METHOD = Method.POWER
ROUNDS_GRID: tuple[int, ...] = (1, 2, 5, 10, 20, 50, 100, 200)
# The most recent share of a training window held out to choose the number of rounds.
VALIDATION_FRACTION = 0.2
# A bookmaker with fewer usable quotes in the window is left out of the pool.
MIN_QUOTES = 100
# A bookmaker that has stopped quoting is left out of the pool too: it stays only if, in at
# least one competition, it quoted at least POOL_RECENT_SHARE of the matches of that
# competition's last POOL_RECENT_DAYS days in the window. 30 days are about four rounds of
# a weekly league: a bookmaker that stopped shows within a month, and a few days missing
# from a feed leave one that still quotes above half.
POOL_RECENT_DAYS = 30
POOL_RECENT_SHARE = 0.5
# Under this share of the model's weight present, an answer is mostly the consensus of
# bookmakers the model barely trusts: counted in /metrics, warned of on the dashboard.
LOW_WEIGHT_PRESENT = 0.5
# Seasons of each competition a backtest trains on before each test season.
TRAIN_SEASONS = 3

# Value bets: a quarter of the Kelly stake, at most 2 % of the bankroll on one bet and 10 %
# on one day's matches, for outcomes whose expected value is above 2 %.
KELLY_FRACTION = 0.25
STAKE_CAP = 0.02
DAILY_EXPOSURE_CAP = 0.10
MIN_EV = 0.02
# Where value's probability comes from (a chain, see app/domain/value_sources.py):
# Pinnacle's de-margined line, else the consensus of the bookmakers that quoted the match.
# Chosen by its closing-line value (docs/explanation/evaluation.md); the ensemble stays the
# served forecast.
VALUE_SOURCE = "PS,consensus"
# An exchange's commission on net winnings, by bookmaker code: its prices are taken net,
# 1 + (price − 1) × (1 − commission). Betfair Exchange's base rate is 5 %.
EXCHANGE_COMMISSION: tuple[tuple[str, float], ...] = (("BFE", 0.05),)
