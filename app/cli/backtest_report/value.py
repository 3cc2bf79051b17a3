"""The value-bet section of report.md (``--value-bets``)."""

from __future__ import annotations

from app.domain.backtest.value_bets import ValueBetConfig
from app.domain.evaluation import MeanInterval
from app.domain.value_summary import (
    ClosingDistance,
    RuleComparison,
    ValueRule,
    ValueSummary,
)
from app.domain.wording import counted

# A bin of fewer bets is too noisy to draw as a point of the curve (the table lists it).
FEWEST_BETS_PLOTTED = 10
VALUE_PLOTS = {
    "value_bankroll.png": "Kelly bankroll of each source",
    "value_ev_vs_clv.png": "Claimed EV against realised CLV",
}


def value_markdown(value: ValueSummary, *, plots_written: bool) -> list[str]:
    config = value.config
    whole = value.overall
    return [
        "",
        "## Value bets",
        "",
        f"Each source bets at most once a match: the outcome of highest expected value above "
        f"the threshold, at the best pre-match price of {', '.join(config.bookmakers)}. The "
        f"closing-line value (CLV) of a bet is its price against {config.reference}'s closing "
        f"line de-margined ({config.method}), on the {counted(whole.closing_matches, 'match')} "
        f"of the {counted(whole.matches, 'test match')} that have it; the return (ROI) is at flat "
        "stakes; the bankroll stakes "
        f"{config.kelly_fraction:g} Kelly of the current bankroll, at most "
        f"{config.stake_cap:.0%} a bet, bets sharing a kickoff staked from the same "
        "bankroll. The slope is the least-squares slope of CLV on claimed EV (1: the whole "
        "claimed edge is real). Intervals are 95 % (mean ± t·s/√n).",
        "",
        _commissions_applied(config),
        "",
        "EV is an estimate. ROI over a few hundred bets is noise (see its intervals); CLV "
        "says more with fewer bets. Bookmakers limit the accounts of bettors who win.",
        "",
        "### All test seasons",
        "",
        "| source | EV > | bets | CLV | ROI | slope | Kelly end | max drawdown |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
        *[f"| {_rule_cells(rule)} |" for rule in whole.rules],
        f"| bet every outcome (baseline) | | {counted(whole.every_outcome.n, 'match')} | | "
        f"{_interval(whole.every_outcome, 1)} | | | |",
        "",
        "### By season",
        "",
        "| season | source | EV > | bets | CLV | ROI | slope | Kelly end | max drawdown |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
        *[
            f"| {season.season} | {_rule_cells(rule)} |"
            for season in value.seasons
            for rule in season.rules
        ],
        "",
        "Bet every outcome, by season: "
        + "; ".join(
            f"{season.season} {_interval(season.every_outcome, 1)}" for season in value.seasons
        )
        + ".",
        "",
        *_comparisons(value),
        *_distances(value),
        *_bins(value),
        *_value_plots(plots_written),
    ]


def _commissions_applied(config: ValueBetConfig) -> str:
    """Which prices were taken net of an exchange's commission, so the figures can be read."""
    rates = config.commission_of_bookmakers()
    pairs = zip(config.bookmakers, rates, strict=True)
    charged = [f"{code} {rate * 100:g} %" for code, rate in pairs if rate]
    if not charged:
        return (
            "Commission applied: none (no price-taking bookmaker is an exchange of "
            "ODDSBOOST_EXCHANGE_COMMISSION); every price is taken as quoted."
        )
    return (
        f"Commission applied: {', '.join(charged)} on net winnings; those prices are taken "
        "net, 1 + (price − 1) × (1 − commission), in the EV, the stakes, the return and the CLV."
    )


def _rule_cells(rule: ValueRule) -> str:
    slope = "" if rule.slope is None else f"{rule.slope:.2f}"
    bankroll = rule.bankroll
    return (
        f"{rule.source} | {rule.threshold:.0%} | {rule.bets} | {_interval(rule.clv, 2)} | "
        f"{_interval(rule.roi, 1)} | {slope} | {bankroll.final:.2f} | "
        f"{bankroll.max_drawdown:.0%}"
    )


def _comparisons(value: ValueSummary) -> list[str]:
    periods = [*value.seasons, value.overall]
    if not value.overall.comparisons:
        return []
    lines = [
        "### Sources compared bet by bet",
        "",
        "On the matches both sources bet on (with a closing line): how often they chose the "
        "same outcome and the paired difference of their CLV (first minus second, ± its "
        "standard error); then the CLV of the bets each made alone (on matches with a "
        "closing line the other did not bet on), with the mean EV those bets claimed.",
        "",
        "| season | first vs second | EV > | both bet | same outcome | CLV difference | p "
        "| first alone | its claimed EV | second alone | its claimed EV |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for period in periods:
        season = period.season or "all"
        lines += [f"| {season} | {_comparison_cells(c)} |" for c in period.comparisons]
    return [*lines, ""]


def _comparison_cells(comparison: RuleComparison) -> str:
    difference = comparison.clv_difference
    paired = (
        "|"
        if difference is None
        else f"{difference.mean * 100:+.2f} % ± {difference.standard_error * 100:.2f} | "
        f"{p_value(difference.p_value)}"
    )
    return (
        f"{comparison.first} vs {comparison.second} | {comparison.threshold:.0%} | "
        f"{comparison.matches} | {comparison.same_outcome} | {paired} | "
        f"{_interval(comparison.first_only, 2)} ({comparison.first_only.n}) | "
        f"{_percent(comparison.first_only_claimed_ev)} | "
        f"{_interval(comparison.second_only, 2)} ({comparison.second_only.n}) | "
        f"{_percent(comparison.second_only_claimed_ev)}"
    )


def _distances(value: ValueSummary) -> list[str]:
    lines = [
        "### Distance to the closing line",
        "",
        "Mean absolute difference between each source's probabilities and the reference's "
        "closing line, per outcome, and the mean signed difference for 1, X and 2: a source "
        "nearer the close has less of its own noise to mistake for value.",
        "",
        "| season | source | matches | mean absolute | bias 1 | bias X | bias 2 |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for period in [*value.seasons, value.overall]:
        season = period.season or "all"
        lines += [f"| {season} | {_distance_cells(d)} |" for d in period.closing_distances]
    return [*lines, ""]


def _distance_cells(distance: ClosingDistance) -> str:
    if distance.mean_absolute is None or distance.bias is None:
        return f"{distance.source} | 0 | | | |"
    home, draw, away = distance.bias
    return (
        f"{distance.source} | {distance.matches} | {distance.mean_absolute:.4f} | "
        f"{home:+.4f} | {draw:+.4f} | {away:+.4f}"
    )


def _bins(value: ValueSummary) -> list[str]:
    lines = [
        "### Claimed EV against realised CLV",
        "",
        f"Every source's bets at the lowest threshold ({min(value.config.thresholds):.0%}), "
        "pooled, by claimed EV (the plot leaves out bins of fewer than "
        f"{counted(FEWEST_BETS_PLOTTED, 'bet')}).",
        "",
        "| source | claimed EV | bets | mean claimed | mean CLV |",
        "|---|---|---:|---:|---:|",
    ]
    for ev_bin in value.ev_bins:
        upper = "" if ev_bin.high is None else f"{ev_bin.high:.0%}"
        lines.append(
            f"| {ev_bin.source} | {ev_bin.low:.0%} – {upper} | {ev_bin.clv.n} | "
            f"{ev_bin.claimed_ev:+.2%} | {_interval(ev_bin.clv, 2)} |"
        )
    return lines


def _value_plots(plots_written: bool) -> list[str]:
    shown = [f"![{caption}]({name})" for name, caption in VALUE_PLOTS.items()]
    return ["", *shown] if plots_written else []


def p_value(p: float) -> str:
    return "< 0.01" if p < 0.005 else f"{p:.2f}"


def _percent(share: float | None) -> str:
    return "" if share is None else f"{share * 100:+.2f} %"


def _interval(interval: MeanInterval, digits: int) -> str:
    """``+1.53 % [+1.20, +1.86]``; without values, empty."""
    if interval.mean is None:
        return ""
    text = f"{interval.mean * 100:+.{digits}f} %"
    if interval.low is None or interval.high is None:
        return text
    return f"{text} [{interval.low * 100:+.{digits}f}, {interval.high * 100:+.{digits}f}]"
