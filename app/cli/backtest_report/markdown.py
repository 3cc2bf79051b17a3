"""report.md: the backtest's figures for people, section by section."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from app.cli.backtest_report.value import p_value, value_markdown
from app.domain.backtest.algorithms import OTHER_ALGORITHMS
from app.domain.backtest.folds import BASE_RATES, BEST, CONSENSUS, ENSEMBLE, PINNACLE_CLOSING
from app.domain.backtest_summary import (
    ClosingComparison,
    OverallSummary,
    ScoredForecast,
    SeasonSummary,
    VariantSummary,
)
from app.domain.evaluation import PairedDifference
from app.domain.wording import counted
from app.services.backtest import Evaluation

SIGNIFICANCE = 0.05
# The plots' files and captions, in the order they are drawn.
PLOTS = {
    "reliability.png": "Reliability of ensemble and consensus",
    "weights.png": "Ensemble weights per season",
    "margins.png": "Cumulative distribution of training margins",
    "log_loss_by_season.png": "Log loss per season",
}


def markdown(evaluation: Evaluation, *, plots_written: bool) -> str:
    summary = evaluation.summary
    lines = [
        *_introduction(evaluation),
        *_overall(summary.overall),
        *_closing(summary.overall.closing),
        *_by_season(summary.seasons),
        *_rows_compared(summary.seasons),
        *_other_algorithms(summary.overall, summary.seasons),
        *_variants(summary.overall, evaluation.variants),
        *(
            value_markdown(evaluation.value, plots_written=plots_written)
            if evaluation.value is not None
            else []
        ),
        *_plots(plots_written),
    ]
    return "\n".join(lines) + "\n"


def _introduction(evaluation: Evaluation) -> list[str]:
    config, options = evaluation.config, evaluation.config.options
    test_seasons = ", ".join(season.season for season in evaluation.summary.seasons)
    return [
        "# Walk-forward backtest",
        "",
        f"Source: {evaluation.source}. Test seasons {test_seasons}, each "
        f"fitted on each competition's own {counted(config.train_seasons, 'season')} before it "
        "(only matches that kicked off before the test season's first match). The pool of "
        "bookmakers, the number of rounds and the best single bookmaker (the lowest training "
        "log loss among those that quoted almost all of the last training season) are all "
        "chosen on those training seasons; the consensus is the mean of every pool bookmaker "
        "present.",
        "",
        f"Fitting: phase `{options.phase}`, method(s) "
        f"{', '.join(str(method) for method in options.methods)}, rounds grid "
        f"{list(options.rounds_grid)} chosen on the last {options.validation_fraction:.0%} of "
        f"each training window, bookmakers with at least {counted(options.min_quotes, 'quote')}"
        + (
            f" that quoted at least {options.recent_share:.0%} of some competition's matches in "
            f"its last {options.recent_days:g} days of the window"
            if options.recent_days is not None
            else ""
        )
        + (
            f", time decay half-life {_days(options.half_life_days)}"
            if options.half_life_days
            else ""
        )
        + (", calibrated" if options.calibrate else "")
        + (", one pool per competition" if config.per_competition else "")
        + ".",
        "",
    ]


def _overall(whole: OverallSummary) -> list[str]:
    return [
        "## Overall",
        "",
        f"All test seasons together, {counted(whole.rows, 'match')}. Every forecast is scored "
        "on exactly these rows: settled matches that every compared bookmaker quoted before "
        "kickoff. The single bookmakers, the consensus and the base rates use the first "
        "method. Lower is better for log loss, Brier and RPS.",
        "",
        *_score_rows(whole.scores, _order(whole.scores)),
        "",
        f"* The M2 ensemble is {_verdict(whole.ensemble_vs_consensus, 'consensus')}.",
        f"* The M2 ensemble is {_verdict(whole.ensemble_vs_best, 'best single bookmaker')}.",
        "",
        "Differences are in mean log loss per match (ensemble minus other) with their standard "
        "error and a paired t-test's two-sided p-value.",
        "",
    ]


def _closing(closing: ClosingComparison) -> list[str]:
    if not closing.rows:
        return []
    return [
        "### Against Pinnacle's closing odds",
        "",
        f"On the {closing.rows} of those matches whose file has Pinnacle closing odds. "
        "Closing odds are set at kickoff with everything known by then: a strong "
        "reference, not a fair competitor for forecasts made from earlier odds.",
        "",
        *_score_rows(closing.scores, [ENSEMBLE, CONSENSUS, PINNACLE_CLOSING]),
        "",
    ]


def _by_season(seasons: Sequence[SeasonSummary]) -> list[str]:
    lines = [
        "## By season",
        "",
        "| season | rows | ensemble | consensus | best bookmaker | base rates "
        "| ensemble − consensus | rounds |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for season in seasons:
        losses = {name: scored.scores.log_loss for name, scored in season.scores.items()}
        lines.append(
            f"| {season.season} | {season.rows} | {losses[ENSEMBLE]:.4f} | "
            f"{losses[CONSENSUS]:.4f} | {losses[BEST]:.4f} "
            f"({season.best_bookmaker}) | {losses[BASE_RATES]:.4f} | "
            f"{difference(season.ensemble_vs_consensus)} | "
            f"{_by_competition(season.rounds)} |"
        )
    lines += ["", "Log loss per season. Weights of the ensemble per season:", ""]
    codes = sorted({code for s in seasons for w in s.weights.values() for code in w})
    lines += ["| season | " + " | ".join(codes) + " |", "|---|" + "---:|" * len(codes)]
    for season in seasons:
        for competition, weights in season.weights.items():
            label = season.season + (f" {competition}" if competition else "")
            cells = " | ".join(f"{weights.get(code, 0.0):.2f}" for code in codes)
            lines.append(f"| {label} | {cells} |")
    return lines


def _rows_compared(seasons: Sequence[SeasonSummary]) -> list[str]:
    lines = ["", "## Rows compared and rows left out", ""]
    for season in seasons:
        reasons = "; ".join(f"{count} {reason}" for reason, count in season.dropped.items())
        lines.append(
            f"* {season.season}: {counted(season.rows, 'match')} compared "
            f"(bookmakers scored alone: {', '.join(season.compared)}); "
            f"left out: {reasons or 'none'}."
        )
        lines.append(f"  Trained on {_training_seasons(season.train_seasons)}.")
        if len(season.best_used) > 1:
            lines.append(
                "  Best bookmaker, row by row: "
                + ", ".join(f"{code} on {count}" for code, count in season.best_used.items())
                + "."
            )
        lines.extend(f"  {note}." for note in season.notes)
    return lines


def _other_algorithms(whole: OverallSummary, seasons: Sequence[SeasonSummary]) -> list[str]:
    if not whole.algorithms and not any(season.algorithms for season in seasons):
        return []
    lines = [
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
            f"{season.season}: {_by_competition(season.algorithms[name].rounds)}"
            for season in seasons
            if name in season.algorithms
        )
        if name in whole.algorithms:
            versus, score = whole.algorithms[name], whole.scores[name].scores
            lines.append(
                f"| {name} | {score.log_loss:.4f} | {score.accuracy:.4f} | "
                f"{difference(versus)} | {p_value(versus.p_value)} | {rounds} |"
            )
        elif rounds:
            lines.append(f"| {name} | not fitted every season (see the notes) | | | | {rounds} |")
    return lines


def _variants(whole: OverallSummary, variants: Mapping[str, VariantSummary]) -> list[str]:
    if not variants:
        return []
    lines = [
        "",
        "## Beyond plain M2",
        "",
        "Each option on the same walk-forward and the same rows; the difference is the "
        "option's log loss minus plain M2's (negative is better).",
        "",
        "| variant | log loss | vs plain M2 | p | vs consensus |",
        "|---|---:|---:|---:|---:|",
        f"| plain M2 | {whole.scores[ENSEMBLE].scores.log_loss:.4f} | | | "
        f"{difference(whole.ensemble_vs_consensus)} |",
    ]
    for name, variant in variants.items():
        versus = variant.versus_baseline
        lines.append(
            f"| {name} | {variant.overall.scores.log_loss:.4f} | {difference(versus)} | "
            f"{versus.p_value:.2f} | {difference(variant.versus_consensus)} |"
        )
    return lines


def _plots(plots_written: bool) -> list[str]:
    shown = [f"![{caption}]({name})" for name, caption in PLOTS.items()]
    if not plots_written:
        shown = [
            "No plots: matplotlib is not installed. Install the report extra "
            "(`pip install '.[report]'`) and run the backtest again."
        ]
    return ["", "## Plots", "", *shown]


def difference(paired: PairedDifference) -> str:
    """``+0.0012 ± 0.0008``: a mean difference of log loss and its standard error."""
    return f"{paired.mean:+.4f} ± {paired.standard_error:.4f}"


def _verdict(paired: PairedDifference, other: str) -> str:
    p, shown = paired.p_value, difference(paired)
    if p >= SIGNIFICANCE:
        return f"not significantly different from the {other} (difference {shown}, p = {p:.2f})"
    side = "better" if paired.mean < 0 else "worse"
    return f"significantly {side} than the {other} (difference {shown}, p = {p:.3f})"


def _score_rows(scores: Mapping[str, ScoredForecast], order: Sequence[str]) -> list[str]:
    lines = [
        "| forecast | rows | log loss | Brier | RPS | accuracy |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name in order:
        if name not in scores:
            continue
        row = scores[name].scores
        lines.append(
            f"| {name} | {scores[name].rows} | {row.log_loss:.4f} | {row.brier:.4f} | "
            f"{row.rps:.4f} | {row.accuracy:.4f} |"
        )
    return lines


def _order(scores: Mapping[str, ScoredForecast]) -> list[str]:
    fixed = [ENSEMBLE, CONSENSUS, BEST, BASE_RATES]
    algorithms = [name for name in OTHER_ALGORITHMS if name in scores]
    return (
        fixed
        + algorithms
        + sorted(name for name in scores if name not in fixed and name not in algorithms)
    )


def _by_competition(rounds: Mapping[str, int]) -> str:
    """``12`` for one pool, ``E0: 12, SP1: 5`` for one per competition."""
    return ", ".join(f"{c}: {r}" if c else str(r) for c, r in rounds.items())


def _training_seasons(plan: Mapping[str, Sequence[str]]) -> str:
    """``E0, SP1: 2015/16, 2016/17; I1: 2014/15, 2016/17``: competitions grouped by seasons."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for competition, seasons in plan.items():
        groups.setdefault(tuple(seasons), []).append(competition)
    return "; ".join(
        f"{', '.join(competitions)}: {', '.join(seasons)}"
        for seasons, competitions in groups.items()
    )


def _days(days: float) -> str:
    """A number of days, whole or not: "1 day", "365 days", "182.5 days"."""
    return counted(int(days), "day") if days.is_integer() else f"{days:g} days"
