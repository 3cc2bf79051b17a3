"""The report's PNG plots (matplotlib, the ``[report]`` extra): reliability, weights,
training margins and log loss by season. Without matplotlib there are none."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from app.domain.backtest import BEST, CONSENSUS, ENSEMBLE, Fold
from app.domain.backtest_summary import SeasonSummary, overall
from app.domain.reliability import reliability
from app.domain.wording import counted
from app.services.backtest import Evaluation

if TYPE_CHECKING:
    from matplotlib.figure import Figure

PLOTS = {
    "reliability": "reliability.png",
    "weights": "weights.png",
    "margins": "margins.png",
    "log_loss": "log_loss_by_season.png",
}
# No version or date in the files: the same inputs give the same bytes.
METADATA = {"Software": None}


def write_plots(evaluation: Evaluation, directory: Path) -> list[Path]:
    try:
        import matplotlib
    except ImportError:
        return []
    matplotlib.use("Agg")
    from app.cli.backtest_report.value import write_value_plots

    folds = evaluation.folds
    written = [
        save_figure(_reliability(folds), directory / PLOTS["reliability"]),
        save_figure(_weights(evaluation.summary.seasons), directory / PLOTS["weights"]),
        save_figure(_margins(folds), directory / PLOTS["margins"]),
        save_figure(_log_loss(evaluation.summary.seasons), directory / PLOTS["log_loss"]),
    ]
    if evaluation.value is not None:
        written += write_value_plots(evaluation.value, directory)
    return written


def _reliability(folds: Sequence[Fold]) -> Figure:
    import matplotlib.pyplot as plt

    y, forecasts = overall(folds)
    figure, axes = plt.subplots(1, 3, figsize=(12, 4), sharey=True)
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
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(8, 4))
    codes = sorted({code for season in seasons for w in season.weights.values() for code in w})
    for code in codes:
        weights = [sum(w.get(code, 0.0) for w in season.weights.values()) for season in seasons]
        axis.plot([season.season for season in seasons], weights, marker="o", label=code)
    axis.set_ylabel("weight Σ ln(1/β)")
    axis.set_title("Bookmaker weights of the ensemble, per test season")
    axis.legend(ncol=4, fontsize="small")
    return figure


def _margins(folds: Sequence[Fold]) -> Figure:
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(8, 4))
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
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(8, 4))
    labels = [season.season for season in seasons]
    for name in (ENSEMBLE, CONSENSUS, BEST):
        losses = [season.scores[name].scores.log_loss for season in seasons]
        axis.plot(labels, losses, marker="o", label=name)
    axis.set_ylabel("log loss")
    axis.set_title("Log loss per test season")
    axis.legend()
    return figure


def save_figure(figure: Figure, path: Path) -> Path:
    import matplotlib.pyplot as plt

    figure.tight_layout()
    figure.savefig(path, dpi=110, metadata=METADATA)
    plt.close(figure)
    return path
