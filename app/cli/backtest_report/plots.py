"""The report's PNG plots, drawn with matplotlib (the ``[report]`` extra): this module is
imported only when it is installed."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from app.cli.backtest_report.markdown import PLOTS
from app.cli.backtest_report.value import FEWEST_BETS_PLOTTED, VALUE_PLOTS
from app.domain.backtest.folds import BEST, CONSENSUS, ENSEMBLE, Fold
from app.domain.backtest_summary import SeasonSummary, overall
from app.domain.reliability import reliability
from app.domain.value_summary import ValueSummary
from app.domain.wording import counted
from app.services.backtest import Evaluation

# No version or date in the files: the same inputs give the same bytes.
METADATA = {"Software": None}
# The threshold whose bankroll curves are plotted (the nearest measured one).
PLOTTED_THRESHOLD = 0.02


def write_plots(evaluation: Evaluation, directory: Path) -> list[Path]:
    folds, seasons = evaluation.folds, evaluation.summary.seasons
    drawn = [_reliability(folds), _weights(seasons), _margins(folds), _log_loss(seasons)]
    figures = dict(zip(PLOTS, drawn, strict=True))
    if evaluation.value is not None:
        drawn = [_bankroll(evaluation.value), _calibration(evaluation.value)]
        figures.update(zip(VALUE_PLOTS, drawn, strict=True))
    written = []
    for name, figure in figures.items():
        figure.tight_layout()
        figure.savefig(directory / name, dpi=110, metadata=METADATA)
        written.append(directory / name)
    return written


def _reliability(folds: Sequence[Fold]) -> Figure:
    y, forecasts = overall(folds)
    figure = Figure(figsize=(12, 4))
    axes = figure.subplots(1, 3, sharey=True)
    for outcome, (axis, label) in enumerate(
        zip(axes, ("home win (1)", "draw (X)", "away win (2)"), strict=True)
    ):
        axis.plot([0, 1], [0, 1], color="grey", linewidth=0.8, linestyle="--")
        for name, colour in ((ENSEMBLE, "tab:blue"), (CONSENSUS, "tab:orange")):
            curve = reliability(y, forecasts[name])[outcome]
            axis.plot(curve.predicted, curve.observed, marker="o", color=colour, label=name)
        axis.set_title(label)
        axis.set_xlabel("predicted probability")
        axis.set_xlim(0, 1)
        axis.set_ylim(0, 1)
    axes[0].set_ylabel("observed frequency")
    axes[0].legend()
    figure.suptitle(f"Reliability on {counted(len(y), 'test match')}")
    return figure


def _weights(seasons: Sequence[SeasonSummary]) -> Figure:
    figure = Figure(figsize=(8, 4))
    axis = figure.subplots()
    codes = sorted({code for season in seasons for w in season.weights.values() for code in w})
    for code in codes:
        weights = [sum(w.get(code, 0.0) for w in season.weights.values()) for season in seasons]
        axis.plot([season.season for season in seasons], weights, marker="o", label=code)
    axis.set_ylabel("weight Σ ln(1/β)")
    axis.set_title("Bookmaker weights of the ensemble, per test season")
    axis.legend(ncol=4, fontsize="small")
    return figure


def _margins(folds: Sequence[Fold]) -> Figure:
    figure = Figure(figsize=(8, 4))
    axis = figure.subplots()
    for fold in folds:
        margins = np.sort(fold.training_margins)
        axis.plot(
            margins, np.arange(1, len(margins) + 1) / len(margins), label=f"fit for {fold.season}"
        )
    axis.axvline(0, color="grey", linewidth=0.8)
    axis.set_xlabel("normalised margin")
    axis.set_ylabel("cumulative share of training matches")
    axis.set_title("Cumulative distribution of training margins (Schapire et al. 1998)")
    axis.legend(fontsize="small")
    return figure


def _log_loss(seasons: Sequence[SeasonSummary]) -> Figure:
    figure = Figure(figsize=(8, 4))
    axis = figure.subplots()
    labels = [season.season for season in seasons]
    for name in (ENSEMBLE, CONSENSUS, BEST):
        losses = [season.scores[name].scores.log_loss for season in seasons]
        axis.plot(labels, losses, marker="o", label=name)
    axis.set_ylabel("log loss")
    axis.set_title("Log loss per test season")
    axis.legend()
    return figure


def _bankroll(value: ValueSummary) -> Figure:
    config = value.config
    threshold = min(config.thresholds, key=lambda t: abs(t - PLOTTED_THRESHOLD))
    figure = Figure(figsize=(8, 4))
    axis = figure.subplots()
    for source in config.sources:
        curve = value.overall.rule(source, threshold).bankroll.curve
        axis.plot(np.arange(len(curve) + 1), np.r_[1.0, curve], label=source)
    axis.axhline(1.0, color="grey", linewidth=0.8)
    axis.set_yscale("log")
    axis.set_xlabel("kickoff times with bets, all test seasons in order")
    axis.set_ylabel("bankroll (log scale)")
    axis.set_title(
        f"{config.kelly_fraction:g} Kelly, EV > {threshold:.0%}, "
        f"at most {config.stake_cap:.0%} a bet"
    )
    axis.legend()
    return figure


def _calibration(value: ValueSummary) -> Figure:
    figure = Figure(figsize=(6, 5))
    axis = figure.subplots()
    top = max((b.claimed_ev for b in value.ev_bins if b.clv.n >= FEWEST_BETS_PLOTTED), default=0.1)
    axis.plot([0, top], [0, top], color="grey", linewidth=0.8, linestyle="--", label="y = x")
    for source in value.config.sources:
        points = [
            (b.claimed_ev, b.clv.mean)
            for b in value.ev_bins
            if b.source == source and b.clv.mean is not None and b.clv.n >= FEWEST_BETS_PLOTTED
        ]
        axis.plot([x for x, _ in points], [y for _, y in points], marker="o", label=source)
    axis.axhline(0.0, color="grey", linewidth=0.8)
    axis.set_xlabel("claimed EV (mean of the bin)")
    axis.set_ylabel("realised CLV (mean of the bin)")
    axis.set_title("Claimed EV against closing-line value")
    axis.legend()
    return figure
