"""The backtest report: Markdown for people, JSON with every figure, and PNG plots.

Plots need matplotlib, the project's ``[report]`` extra; without it the report says so and
the Markdown and JSON are written all the same. Nothing in the report depends on the time
it was made, so the same inputs give the same report.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from app.domain.backtest import (
    BASE_RATES,
    BEST,
    CONSENSUS,
    ENSEMBLE,
    PINNACLE_CLOSING,
    overall,
    reliability,
)
from app.domain.fitting import OTHER_ALGORITHMS, describe
from app.services.backtest import Evaluation

SIGNIFICANCE = 0.05
PLOTS = {
    "reliability": "reliability.png",
    "weights": "weights.png",
    "margins": "margins.png",
    "log_loss": "log_loss_by_season.png",
}


def report_data(evaluation: Evaluation) -> dict[str, Any]:
    y, forecasts = overall(evaluation.folds)
    return {
        "source": evaluation.source,
        "config": {
            "train_seasons": evaluation.config.train_seasons,
            "test_seasons": [fold.season for fold in evaluation.folds],
            "per_competition": evaluation.config.per_competition,
            "compare_share": evaluation.config.compare_share,
            "algorithms": list(evaluation.config.algorithms),
            "fit": describe(evaluation.config.options),
        },
        **evaluation.summary,
        "reliability": {name: reliability(y, forecasts[name]) for name in (ENSEMBLE, CONSENSUS)},
        "training_margins": {
            fold.season: np.quantile(
                fold.training_margins, [0, 0.1, 0.25, 0.5, 0.75, 0.9, 1]
            ).tolist()
            for fold in evaluation.folds
        },
        "variants": evaluation.variants,
    }


def write_report(evaluation: Evaluation, directory: Path) -> list[Path]:
    """Write report.md, report.json and the plots; return the paths written."""
    directory.mkdir(parents=True, exist_ok=True)
    data = report_data(evaluation)
    written = []
    json_path = directory / "report.json"
    json_path.write_text(json.dumps(data, indent=2, sort_keys=True, allow_nan=False) + "\n")
    written.append(json_path)
    plots = write_plots(evaluation, directory)
    written.extend(plots)
    markdown_path = directory / "report.md"
    markdown_path.write_text(markdown(data, plots_written=bool(plots)))
    written.append(markdown_path)
    return written


# --- Markdown ------------------------------------------------------------------------------


def _verdict(difference: dict[str, float], other: str) -> str:
    mean, se, p = difference["mean"], difference["standard_error"], difference["p_value"]
    if p >= SIGNIFICANCE:
        return (
            f"not significantly different from the {other} (difference {mean:+.4f} ± "
            f"{se:.4f}, p = {p:.2f})"
        )
    side = "better" if mean < 0 else "worse"
    return f"significantly {side} than the {other} (difference {mean:+.4f} ± {se:.4f}, p = {p:.3f})"


def _score_rows(scores: dict[str, dict[str, float]], order: Sequence[str]) -> list[str]:
    lines = [
        "| forecast | rows | log loss | Brier | RPS | accuracy |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name in order:
        if name not in scores:
            continue
        row = scores[name]
        lines.append(
            f"| {name} | {int(row['rows'])} | {row['log_loss']:.4f} | {row['brier']:.4f} | "
            f"{row['rps']:.4f} | {row['accuracy']:.4f} |"
        )
    return lines


def _p_value(p: float) -> str:
    return "< 0.01" if p < 0.005 else f"{p:.2f}"


def _order(scores: dict[str, dict[str, float]]) -> list[str]:
    fixed = [ENSEMBLE, CONSENSUS, BEST, BASE_RATES]
    algorithms = [name for name in OTHER_ALGORITHMS if name in scores]
    return (
        fixed
        + algorithms
        + sorted(name for name in scores if name not in fixed and name not in algorithms)
    )


def _training_seasons(plan: dict[str, list[str]]) -> str:
    """``E0, SP1: 2015/16, 2016/17; I1: 2014/15, 2016/17``: competitions grouped by seasons."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for competition, seasons in plan.items():
        groups.setdefault(tuple(seasons), []).append(competition)
    return "; ".join(
        f"{', '.join(competitions)}: {', '.join(seasons)}"
        for seasons, competitions in groups.items()
    )


def markdown(data: dict[str, Any], *, plots_written: bool) -> str:
    config, whole, seasons = data["config"], data["overall"], data["seasons"]
    fit = config["fit"]
    lines = [
        "# Walk-forward backtest",
        "",
        f"Source: {data['source']}. Test seasons {', '.join(config['test_seasons'])}, each "
        f"fitted on each competition's own {config['train_seasons']} seasons before it (only "
        "matches that kicked off before the test season's first match). The pool of "
        "bookmakers, the number of rounds and the best single bookmaker (the lowest training "
        "log loss among those that quoted almost all of the last training season) are all "
        "chosen on those training seasons; the consensus is the mean of every pool bookmaker "
        "present.",
        "",
        f"Fitting: phase `{fit['phase']}`, method(s) {', '.join(fit['methods'])}, rounds grid "
        f"{fit['rounds_grid']} chosen on the last {fit['validation_fraction']:.0%} of each "
        f"training window, bookmakers with at least {fit['min_quotes']} quotes"
        + (f", time decay half-life {fit['half_life_days']} days" if fit["half_life_days"] else "")
        + (", calibrated" if fit["calibrate"] else "")
        + (", one pool per competition" if config["per_competition"] else "")
        + ".",
        "",
        "## Overall",
        "",
        f"All test seasons together, {whole['rows']} matches. Every forecast is scored on "
        "exactly these rows: settled matches that every compared bookmaker quoted before "
        "kickoff. The single bookmakers, the consensus and the base rates use the first "
        "method. Lower is better for log loss, Brier and RPS.",
        "",
        *_score_rows(whole["scores"], _order(whole["scores"])),
        "",
        f"* The M2 ensemble is {_verdict(whole['ensemble_vs_consensus'], 'consensus')}.",
        f"* The M2 ensemble is {_verdict(whole['ensemble_vs_best'], 'best single bookmaker')}.",
        "",
        "Differences are in mean log loss per match (ensemble minus other) with their standard "
        "error and a paired t-test's two-sided p-value.",
        "",
    ]
    closing = whole["closing"]
    if closing["rows"]:
        lines += [
            "### Against Pinnacle's closing odds",
            "",
            f"On the {closing['rows']} of those matches whose file has Pinnacle closing odds. "
            "Closing odds are set at kickoff with everything known by then: a strong "
            "reference, not a fair competitor for forecasts made from earlier odds.",
            "",
            *_score_rows(closing["scores"], [ENSEMBLE, CONSENSUS, PINNACLE_CLOSING]),
            "",
        ]
    lines += ["## By season", ""]
    lines += [
        "| season | rows | ensemble | consensus | best bookmaker | base rates "
        "| ensemble − consensus | rounds |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for season in seasons:
        scores = season["scores"]
        difference = season["ensemble_vs_consensus"]
        rounds = ", ".join(f"{c}: {r}" if c else str(r) for c, r in season["rounds"].items())
        lines.append(
            f"| {season['season']} | {season['rows']} | {scores[ENSEMBLE]['log_loss']:.4f} | "
            f"{scores[CONSENSUS]['log_loss']:.4f} | {scores[BEST]['log_loss']:.4f} "
            f"({season['best_bookmaker']}) | {scores[BASE_RATES]['log_loss']:.4f} | "
            f"{difference['mean']:+.4f} ± {difference['standard_error']:.4f} | {rounds} |"
        )
    lines += ["", "Log loss per season. Weights of the ensemble per season:", ""]
    codes = sorted({code for s in seasons for w in s["weights"].values() for code in w})
    lines += ["| season | " + " | ".join(codes) + " |", "|---|" + "---:|" * len(codes)]
    for season in seasons:
        for competition, weights in season["weights"].items():
            label = season["season"] + (f" {competition}" if competition else "")
            lines.append(
                f"| {label} | "
                + " | ".join(f"{weights.get(code, 0.0):.2f}" for code in codes)
                + " |"
            )
    lines += ["", "## Rows compared and rows left out", ""]
    for season in seasons:
        reasons = (
            "; ".join(f"{count} {reason}" for reason, count in season["dropped"].items()) or "none"
        )
        lines.append(
            f"* {season['season']}: {season['rows']} matches compared "
            f"(bookmakers scored alone: {', '.join(season['compared'])}); left out: {reasons}."
        )
        lines.append(f"  Trained on {_training_seasons(season['train_seasons'])}.")
        if len(season["best_used"]) > 1:
            lines.append(
                "  Best bookmaker, row by row: "
                + ", ".join(f"{code} on {count}" for code, count in season["best_used"].items())
                + "."
            )
        lines.extend(f"  {note}." for note in season["notes"])
    if whole["algorithms"] or any(season["algorithms"] for season in seasons):
        lines += [
            "",
            "## Other boosting algorithms over the same bookmakers",
            "",
            "Fitted on the same pools, methods and training windows as M2, their rounds "
            "chosen on the same held-out part. AdaBoost.M1 and SAMME see each bookmaker "
            "as its most probable outcome only; AdaBoost.MH sees 2p − 1 for each outcome. "
            "The difference is M2's log loss minus the algorithm's (negative: M2 is "
            "better).",
            "",
            "| algorithm | log loss | accuracy | M2 − algorithm | p | rounds by season |",
            "|---|---:|---:|---:|---:|---|",
        ]
        for name in OTHER_ALGORITHMS:
            rounds = "; ".join(
                f"{season['season']}: "
                + ", ".join(
                    f"{c}: {r}" if c else str(r)
                    for c, r in season["algorithms"][name]["rounds"].items()
                )
                for season in seasons
                if name in season["algorithms"]
            )
            if name in whole["algorithms"]:
                versus = whole["algorithms"][name]
                score = whole["scores"][name]
                lines.append(
                    f"| {name} | {score['log_loss']:.4f} | {score['accuracy']:.4f} | "
                    f"{versus['mean']:+.4f} ± {versus['standard_error']:.4f} | "
                    f"{_p_value(versus['p_value'])} | {rounds} |"
                )
            elif rounds:
                lines.append(
                    f"| {name} | not fitted every season (see the notes) | | | | {rounds} |"
                )
    if data["variants"]:
        lines += [
            "",
            "## Beyond plain M2",
            "",
            "Each option on the same walk-forward and the same rows; the difference is the "
            "option's log loss minus plain M2's (negative is better).",
            "",
            "| variant | log loss | vs plain M2 | p | vs consensus |",
            "|---|---:|---:|---:|---:|",
            f"| plain M2 | {whole['scores'][ENSEMBLE]['log_loss']:.4f} | | | "
            f"{whole['ensemble_vs_consensus']['mean']:+.4f} ± "
            f"{whole['ensemble_vs_consensus']['standard_error']:.4f} |",
        ]
        for name, variant in data["variants"].items():
            versus, consensus = variant["versus_baseline"], variant["versus_consensus"]
            lines.append(
                f"| {name} | {variant['overall']['log_loss']:.4f} | {versus['mean']:+.4f} ± "
                f"{versus['standard_error']:.4f} | {versus['p_value']:.2f} | "
                f"{consensus['mean']:+.4f} ± {consensus['standard_error']:.4f} |"
            )
    lines += ["", "## Plots", ""]
    if plots_written:
        lines += [
            f"![Reliability of ensemble and consensus]({PLOTS['reliability']})",
            f"![Ensemble weights per season]({PLOTS['weights']})",
            f"![Cumulative distribution of training margins]({PLOTS['margins']})",
            f"![Log loss per season]({PLOTS['log_loss']})",
        ]
    else:
        lines.append(
            "No plots: matplotlib is not installed. Install the report extra "
            "(`pip install '.[report]'`) and run the backtest again."
        )
    return "\n".join(lines) + "\n"


# --- plots --------------------------------------------------------------------------------


def write_plots(evaluation: Evaluation, directory: Path) -> list[Path]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    folds = evaluation.folds
    written = []
    metadata = {
        "Software": None
    }  # no version or date in the files: the same inputs, the same bytes

    y, forecasts = overall(folds)
    figure, axes = plt.subplots(1, 3, figsize=(12, 4), sharey=True)
    for outcome, (axis, label) in enumerate(
        zip(axes, ("home win (1)", "draw (X)", "away win (2)"), strict=True)
    ):
        axis.plot([0, 1], [0, 1], color="grey", linewidth=0.8, linestyle="--")
        for name, colour in ((ENSEMBLE, "tab:blue"), (CONSENSUS, "tab:orange")):
            curve = reliability(y, forecasts[name])[outcome]
            axis.plot(curve["predicted"], curve["observed"], marker="o", color=colour, label=name)
        axis.set_title(label)
        axis.set_xlabel("predicted probability")
        axis.set_xlim(0, 1)
        axis.set_ylim(0, 1)
    axes[0].set_ylabel("observed frequency")
    axes[0].legend()
    figure.suptitle(f"Reliability on {len(y)} test matches")
    written.append(_save(figure, directory / PLOTS["reliability"], metadata))

    figure, axis = plt.subplots(figsize=(8, 4))
    codes = sorted(
        {code for fold in folds for e in fold.ensembles.values() for code in e.bookmakers}
    )
    seasons = [fold.season for fold in folds]
    for code in codes:
        weights = [
            sum(
                float(e.weights[e.bookmakers.index(code)]) if code in e.bookmakers else 0.0
                for e in fold.ensembles.values()
            )
            for fold in folds
        ]
        axis.plot(seasons, weights, marker="o", label=code)
    axis.set_ylabel("weight Σ ln(1/β)")
    axis.set_title("Bookmaker weights of the ensemble, per test season")
    axis.legend(ncol=4, fontsize="small")
    written.append(_save(figure, directory / PLOTS["weights"], metadata))

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
    written.append(_save(figure, directory / PLOTS["margins"], metadata))

    figure, axis = plt.subplots(figsize=(8, 4))
    summary = evaluation.summary["seasons"]
    for name in (ENSEMBLE, CONSENSUS, BEST):
        axis.plot(seasons, [s["scores"][name]["log_loss"] for s in summary], marker="o", label=name)
    axis.set_ylabel("log loss")
    axis.set_title("Log loss per test season")
    axis.legend()
    written.append(_save(figure, directory / PLOTS["log_loss"], metadata))
    return written


def _save(figure: Any, path: Path, metadata: dict[str, Any]) -> Path:
    import matplotlib.pyplot as plt

    figure.tight_layout()
    figure.savefig(path, dpi=110, metadata=metadata)
    plt.close(figure)
    return path
