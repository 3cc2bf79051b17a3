"""The evaluation page's tables, rendered from the backtest's own JSON reports.

Runs of ``oddsboost backtest`` make the figures (``COMMANDS``, each writing into
``reports/<name>``); each one's ``report.json`` is kept as it was written, as
``docs/figures/<name>.json``, and the page's tables are rendered from those files into
``docs/explanation/evaluation.md`` between markers by the one writer of generated blocks
(``benchmarks/pages.py``). After running the commands::

    .venv/bin/python -m benchmarks.evaluation_figures reports

copies every report found under ``reports/`` in and writes every block; with no argument it
renders the committed reports again. Nothing here computes a figure but one product (the
total CLV of a run's bets, their mean CLV times their number): each is read from a report.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from app.domain import defaults
from app.domain.backtest.folds import BASE_RATES, BEST, CONSENSUS, ENSEMBLE, PINNACLE_CLOSING
from benchmarks import pages
from benchmarks.pages import EVALUATION_PAGE

Report = Mapping[str, Any]

FILES = "../shared/data/football-data"
# The probability sources measured: single links and fallback chains (see
# app.domain.value_sources), the ensemble first and the consensus among them, as the
# comparison blocks read them.
VALUE_SOURCES = (
    "ensemble",
    "consensus",
    "PS",
    "PS,consensus",
    "consensus,PS",
    "PS,ensemble",
    "PS,consensus,ensemble",
)
VALUE_RUN = (
    "--leagues E0,E1,SP1,I1,D1,F1 "
    "--test-seasons 2012/13,2013/14,2014/15,2015/16,2016/17,2017/18,2018/19 --value-bets "
    f"--value-sources '{';'.join(VALUE_SOURCES)}'"
)
# The fitting options whose value bets are measured against the defaults': each a run of
# the value backtest with that option, the ensemble and the consensus at EV > 2 % only.
FIT_OPTIONS = {
    "per_competition": "--per-competition",
    "rounds_200": "--rounds-grid 200",
    "rounds_50": "--rounds-grid 50",
    "half_life_365": "--half-life-days 365",
    "calibrate": "--calibrate",
    "fit_target_result": "--fit-target result",
}
# The two runs whose ensembles differ only in what they were fitted toward: the defaults'
# and the other target's. The rule for the default: fitting toward the close wins if its
# bets' pooled 95 % CLV interval lies above 0 and their CLV sums to more.
FIT_TARGET_RUNS = ("backtest_value", "backtest_value_fit_target_result")
# The command that writes each report (into reports/<name>).
COMMANDS = {
    "backtest": (
        "--leagues E0,SP1,I1,D1,F1 --test-seasons 2015/16,2016/17,2017/18,2018/19 "
        "--compare-variants --compare-algorithms"
    ),
    "backtest_value": VALUE_RUN,
    **{
        f"backtest_value_{name}": (
            f"{VALUE_RUN.split(' --value-sources')[0]} --value-sources 'ensemble;consensus' "
            f"--value-thresholds 0.02 {option}"
        )
        for name, option in FIT_OPTIONS.items()
    },
}


def command(name: str) -> str:
    """The whole command that writes the report ``name``."""
    return f".venv/bin/oddsboost backtest {FILES} {COMMANDS[name]} --output reports/{name}"


INTRO = "# Evaluation\n\n"
# The threshold whose bets the page looks at season by season.
SEASON_THRESHOLD = 0.02
FIXED = (ENSEMBLE, CONSENSUS, BEST)


def load_report(name: str) -> Report:
    loaded: Report = json.loads(pages.figures_file(name).read_text())
    return loaded


# ---------------------------------------------------------------- log loss and friends


def overall_block(report: Report) -> str:
    whole = report["overall"]
    scores = whole["scores"]
    others = {*FIXED, BASE_RATES, *whole["algorithms"]}
    bookmakers = sorted(
        (name for name in scores if name not in others), key=lambda name: scores[name]["log_loss"]
    )
    closing = whole["closing"]
    on_closing = (
        [
            f"* On the {closing['rows']:,} matches with Pinnacle's closing odds: "
            + ", ".join(
                f"{name} {score['log_loss']:.4f}" for name, score in closing["scores"].items()
            )
            + "."
        ]
        if closing["rows"]
        else []
    )
    lines = [
        f"{whole['rows']:,} test matches ({_seasons(report)}), {report['source']}.",
        "",
        "| forecast | matches | log loss | Brier | RPS | accuracy |",
        "|---|---:|---:|---:|---:|---:|",
        *(_score_row(name, scores[name]) for name in (*FIXED, *bookmakers, BASE_RATES)),
        *(
            [
                _score_row(
                    f"{PINNACLE_CLOSING} (its matches only)", closing["scores"][PINNACLE_CLOSING]
                )
            ]
            if PINNACLE_CLOSING in closing["scores"]
            else []
        ),
        "",
        f"* M2 ensemble − consensus: {_difference(whole['ensemble_vs_consensus'])}.",
        f"* M2 ensemble − best bookmaker: {_difference(whole['ensemble_vs_best'])}.",
        *on_closing,
        "",
    ]
    return "\n".join(lines)


def seasons_block(report: Report) -> str:
    lines = [
        "| season | matches | M2 ensemble | consensus | best bookmaker | ensemble − consensus "
        "| rounds |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for season in report["seasons"]:
        scores = season["scores"]
        lines.append(
            f"| {season['season']} | {season['rows']:,} | {scores[ENSEMBLE]['log_loss']:.4f} | "
            f"{scores[CONSENSUS]['log_loss']:.4f} | {scores[BEST]['log_loss']:.4f} "
            f"({season['best_bookmaker']}) | {_difference(season['ensemble_vs_consensus'])} | "
            f"{_rounds(season['rounds'])} |"
        )
    return "\n".join(lines) + "\n"


def algorithms_block(report: Report) -> str:
    whole = report["overall"]
    scores = whole["scores"]
    lines = [
        "| algorithm | log loss | accuracy | M2 minus it |",
        "|---|---:|---:|---:|",
        f"| AdaBoost.M2 | {scores[ENSEMBLE]['log_loss']:.4f} | {scores[ENSEMBLE]['accuracy']:.4f} "
        "| |",
        *(
            f"| {name} | {scores[name]['log_loss']:.4f} | {scores[name]['accuracy']:.4f} | "
            f"{_difference(versus)} |"
            for name, versus in whole["algorithms"].items()
        ),
    ]
    return "\n".join(lines) + "\n"


def variants_block(report: Report) -> str:
    plain = report["overall"]["scores"][ENSEMBLE]["log_loss"]
    lines = [
        "| option | log loss | versus plain M2 |",
        "|---|---:|---:|",
        f"| plain M2 (the default) | {plain:.4f} | |",
        *(
            f"| {name} | {variant['overall']['log_loss']:.4f} | "
            f"{_difference(variant['versus_baseline'])} |"
            for name, variant in report["variants"].items()
        ),
    ]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- value bets


def value_rules_block(report: Report) -> str:
    value = report["value"]
    whole = value["overall"]
    lines = [
        f"{whole['matches']:,} test matches ({_seasons(report)}), CLV on the "
        f"{whole['closing_matches']:,} with {value['config']['reference']}'s closing line.",
        "",
        "| source | EV > | bets | CLV [95 % CI] | ROI [95 % CI] | slope | "
        f"{value['config']['kelly_fraction']:g} Kelly end | max drawdown |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
        *(
            f"| {rule['source']} | {rule['threshold']:.0%} | {rule['bets']:,} | "
            f"{_interval(rule['clv'])} | {_interval(rule['roi'], 1)} | "
            f"{_optional(rule['slope'])} | {rule['bankroll']['final']:.2f} | "
            f"{rule['bankroll']['max_drawdown']:.0%} |"
            for rule in whole["rules"]
        ),
        f"| bet every outcome (baseline) | | {whole['matches']:,} matches | | "
        f"{_interval(whole['every_outcome'], 1)} | | | |",
    ]
    return "\n".join(lines) + "\n"


def value_seasons_block(report: Report) -> str:
    """The ensemble's bets at ``SEASON_THRESHOLD`` season by season, beside the CLV of every
    other source's at the same threshold."""
    # Single links only: every chain's seasons are in the sources' own block.
    sources = report["value"]["config"]["sources"]
    others = [s for s in sources if s != "ensemble" and "," not in s]
    lines = [
        "| season | matches with a close | bets | CLV [95 % CI] | ROI [95 % CI] | "
        + " | ".join(f"{source} CLV" for source in others)
        + " |",
        "|---|---:|---:|---:|---:|" + "---:|" * len(others),
    ]
    for period in report["value"]["seasons"]:
        rule = _rule(period, "ensemble")
        lines.append(
            f"| {period['season']} | {period['closing_matches']:,} | {rule['bets']:,} | "
            f"{_interval(rule['clv'])} | {_interval(rule['roi'], 1)} | "
            + " | ".join(_interval(_rule(period, source)["clv"], bounds=False) for source in others)
            + " |"
        )
    return "\n".join(lines) + "\n"


def value_sources_block(report: Report) -> str:
    """Every source and chain pooled at each threshold: its bets, their CLV with its
    interval and its sum (in units staked, over the bets with a close: n × mean), and the
    sources the rule for the default chooses at the default threshold."""
    value = report["value"]
    lines = [
        "| source | EV > | bets | with a close | CLV [95 % CI] | sum of CLV |",
        "|---|---:|---:|---:|---:|---:|",
        *(
            f"| {rule['source']} | {rule['threshold']:.0%} | {rule['bets']:,} | "
            f"{rule['clv']['n']:,} | {_interval(rule['clv'])} | {_clv_sum(rule):+.1f} |"
            for rule in sorted(value["overall"]["rules"], key=lambda r: r["threshold"])
        ),
        "",
        f"Chosen by the rule at EV > {defaults.MIN_EV:.0%} (interval above 0, then the most "
        f"total CLV): {', '.join(f'`{s}`' for s in chosen_sources(value, defaults.MIN_EV))}.",
    ]
    return "\n".join(lines) + "\n"


def value_source_seasons_block(report: Report) -> str:
    """Each source's CLV at ``SEASON_THRESHOLD``, season by season."""
    sources = report["value"]["config"]["sources"]
    lines = [
        "| season | " + " | ".join(f"`{source}`" for source in sources) + " |",
        "|---|" + "---:|" * len(sources),
        *(
            f"| {period['season']} | "
            + " | ".join(_interval(_rule(period, source)["clv"]) for source in sources)
            + " |"
            for period in report["value"]["seasons"]
        ),
    ]
    return "\n".join(lines) + "\n"


def chosen_sources(value: Mapping[str, Any], threshold: float) -> tuple[str, ...]:
    """The rule for the default source: of the sources whose pooled 95 % CLV interval at
    ``threshold`` is above 0, those with the most total CLV (several when they tie, to a
    millionth of a unit: chains that differ only where no match was bet)."""
    rules = [
        rule
        for rule in value["overall"]["rules"]
        if rule["threshold"] == threshold
        and rule["clv"]["low"] is not None
        and rule["clv"]["low"] > 0
    ]
    if not rules:
        return ()
    most = max(round(_clv_sum(rule), 6) for rule in rules)
    return tuple(rule["source"] for rule in rules if round(_clv_sum(rule), 6) == most)


def _clv_sum(rule: Mapping[str, Any]) -> float:
    clv = rule["clv"]
    return 0.0 if clv["mean"] is None else float(clv["n"] * clv["mean"])


def value_comparison_block(report: Report) -> str:
    """Ensemble against consensus at ``SEASON_THRESHOLD``, season by season and pooled."""
    fits = {season["season"]: season for season in report["seasons"]}
    value = report["value"]
    lines = [
        "| season | rounds: bookmakers with weight | both bet: ensemble − consensus (p) | "
        "ensemble alone: bets, CLV, claimed | consensus alone: bets, CLV, claimed | "
        "distance to the close, ensemble / consensus |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for period in (*value["seasons"], value["overall"]):
        name = period["season"] or "all"
        fit = _weighted(fits[name]) if name in fits else ""
        compared = _comparison(period)
        distances = {d["source"]: d["mean_absolute"] for d in period["closing_distances"]}
        lines.append(
            f"| {name} | {fit} | {_clv_difference(compared['clv_difference'])} | "
            f"{_alone(compared['first_only'], compared['first_only_claimed_ev'])} | "
            f"{_alone(compared['second_only'], compared['second_only_claimed_ev'])} | "
            f"{_optional(distances.get('ensemble'))} / {_optional(distances.get('consensus'))} |"
        )
    return "\n".join(lines) + "\n"


def value_bins_block(report: Report) -> str:
    lines = [
        "| source | claimed EV | bets | mean claimed | CLV [95 % CI] |",
        "|---|---|---:|---:|---:|",
        *(
            f"| {b['source']} | {_bin(b['low'], b['high'])} | {b['clv']['n']:,} | "
            f"{b['claimed_ev']:+.2%} | {_interval(b['clv'])} |"
            for b in report["value"]["ev_bins"]
        ),
    ]
    return "\n".join(lines) + "\n"


def value_options_block(reports: Reports) -> str:
    """The ensemble's bets at ``SEASON_THRESHOLD`` fitted with each of ``FIT_OPTIONS``,
    against the defaults' and the consensus rule's (the same in every run)."""
    value = reports["backtest_value"]["value"]
    lines = [
        "| ensemble fitted with | bets | CLV [95 % CI] | slope | seasons whose interval "
        "excludes 0 | both bet: ensemble − consensus (p) | ensemble alone: bets, CLV, claimed |",
        "|---|---:|---:|---:|---|---:|---:|",
        _option_row("the defaults (no option)", value),
        *(
            _option_row(f"`{option}`", reports[f"backtest_value_{name}"]["value"])
            for name, option in FIT_OPTIONS.items()
        ),
    ]
    consensus = _rule(value["overall"], "consensus")
    lines.append(
        f"| (the consensus rule) | {consensus['bets']:,} | {_interval(consensus['clv'])} | "
        f"{_optional(consensus['slope'])} | {_seasons_clear(value, 'consensus')} | | |"
    )
    return "\n".join(lines) + "\n"


def _target_figures(report: Report) -> dict[str, Any]:
    rule = _rule(report["value"]["overall"], "ensemble")
    clv = rule["clv"]
    return {
        "target": report["config"]["fit"]["fit_target"],
        "log_loss": report["overall"]["scores"][ENSEMBLE]["log_loss"],
        "bets": rule["bets"],
        "clv": clv,
        # CLV is counted on the bets whose match has a close; its sum is in units staked.
        "total": clv["mean"] * clv["n"],
    }


def fit_target_winner(reports: Reports) -> str:
    """The fit target the rule chooses: ``close`` if its pooled CLV interval lies above 0
    and its total CLV beats the results', else ``result``."""
    runs = [_target_figures(reports[name]) for name in FIT_TARGET_RUNS]
    by_target = {run["target"]: run for run in runs}
    close, result = by_target["close"], by_target["result"]
    wins = close["clv"]["low"] > 0 and close["total"] > result["total"]
    return "close" if wins else "result"


def fit_target_block(reports: Reports) -> str:
    """The ensemble's bets at ``SEASON_THRESHOLD`` fitted toward each target, and the rule's
    choice."""
    lines = [
        "| fitted toward | log loss | bets | bets on matches with a close | CLV [95 % CI] | "
        "total CLV (units) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name in FIT_TARGET_RUNS:
        run = _target_figures(reports[name])
        lines.append(
            f"| {run['target']} | {run['log_loss']:.5f} | {run['bets']:,} | {run['clv']['n']:,} "
            f"| {_interval(run['clv'])} | {run['total']:+.1f} |"
        )
    lines += ["", f"By the rule the default is `{fit_target_winner(reports)}`."]
    return "\n".join(lines) + "\n"


def _clear(interval: Mapping[str, Any]) -> bool:
    """Whether a 95 % interval leaves 0 out."""
    low, high = interval["low"], interval["high"]
    return low is not None and high is not None and (low > 0 or high < 0)


def _option_row(label: str, value: Mapping[str, Any]) -> str:
    rule = _rule(value["overall"], "ensemble")
    compared = _comparison(value["overall"])
    return (
        f"| {label} | {rule['bets']:,} | {_interval(rule['clv'])} | {_optional(rule['slope'])} | "
        f"{_seasons_clear(value, 'ensemble')} | {_clv_difference(compared['clv_difference'])} | "
        f"{_alone(compared['first_only'], compared['first_only_claimed_ev'])} |"
    )


def _seasons_clear(value: Mapping[str, Any], source: str) -> str:
    """``5 of 7 (not 2013/14, 2014/15)``: the seasons whose CLV interval is above 0."""
    seasons = value["seasons"]
    below = [period["season"] for period in seasons if not _clear(_rule(period, source)["clv"])]
    missed = f" (not {', '.join(below)})" if below else ""
    return f"{len(seasons) - len(below)} of {len(seasons)}{missed}"


# ---------------------------------------------------------------- formats


def _score_row(name: str, score: Mapping[str, float]) -> str:
    return (
        f"| {name} | {score['rows']:,.0f} | {score['log_loss']:.4f} | {score['brier']:.4f} | "
        f"{score['rps']:.4f} | {score['accuracy']:.4f} |"
    )


def _difference(paired: Mapping[str, float]) -> str:
    return f"{paired['mean']:+.5f} ± {paired['standard_error']:.5f} ({_p(paired['p_value'])})"


def _clv_difference(paired: Mapping[str, float] | None) -> str:
    if paired is None:
        return ""
    return (
        f"{paired['n']:,}: {paired['mean'] * 100:+.2f} ± {paired['standard_error'] * 100:.2f} "
        f"({_p(paired['p_value'])})"
    )


def _p(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:.2f}"


def _interval(interval: Mapping[str, Any], digits: int = 2, *, bounds: bool = True) -> str:
    mean, low, high = interval["mean"], interval["low"], interval["high"]
    if mean is None:
        return ""
    text = f"{mean * 100:+.{digits}f} %"
    if not bounds or low is None or high is None:
        return text
    return f"{text} [{low * 100:+.{digits}f}, {high * 100:+.{digits}f}]"


def _alone(interval: Mapping[str, Any], claimed: float | None) -> str:
    claimed_text = "" if claimed is None else f", {claimed * 100:+.2f} %"
    return f"{interval['n']:,}: {_interval(interval, bounds=False)}{claimed_text}"


def _optional(value: float | None) -> str:
    return "" if value is None else f"{value:.4f}" if abs(value) < 0.1 else f"{value:.2f}"


def _bin(low: float, high: float | None) -> str:
    return f"{low:.0%} and more" if high is None else f"{low:.0%} to {high:.0%}"


def _rule(period: Mapping[str, Any], source: str) -> Mapping[str, Any]:
    rule: Mapping[str, Any] = next(
        r for r in period["rules"] if r["source"] == source and r["threshold"] == SEASON_THRESHOLD
    )
    return rule


def _comparison(period: Mapping[str, Any]) -> Mapping[str, Any]:
    compared: Mapping[str, Any] = next(
        c
        for c in period["comparisons"]
        if (c["first"], c["second"]) == ("ensemble", "consensus")
        and c["threshold"] == SEASON_THRESHOLD
    )
    return compared


def _weighted(season: Mapping[str, Any]) -> str:
    """``200: B365 1.60, VC 0.24``: the rounds, then the bookmakers with weight, heaviest
    first."""
    parts = []
    for competition, weights in season["weights"].items():
        kept = sorted(((w, code) for code, w in weights.items() if round(w, 2) > 0), reverse=True)
        named = ", ".join(f"{code} {w:.2f}" for w, code in kept)
        label = f"{competition} " if competition else ""
        parts.append(f"{label}{season['rounds'][competition]}: {named}")
    return "; ".join(parts)


def _rounds(rounds: Mapping[str, int]) -> str:
    return ", ".join(f"{c}: {r}" if c else str(r) for c, r in rounds.items())


def _seasons(report: Report) -> str:
    seasons = report["config"]["test_seasons"]
    return f"{seasons[0]} to {seasons[-1]}" if len(seasons) > 1 else seasons[0]


# ---------------------------------------------------------------- the page

Reports = Mapping[str, Report]


# Each block of the page, rendered from the reports.
def commands_block(_: Reports) -> str:
    """The commands that regenerate every report and then the page."""
    return "\n".join(
        [
            "```sh",
            ".venv/bin/pip install -e '.[report]'",
            *(" \\\n    --".join(command(name).split(" --")) for name in COMMANDS),
            ".venv/bin/python -m benchmarks.evaluation_figures reports",
            "```",
            "",
        ]
    )


BLOCKS: dict[str, Callable[[Reports], str]] = {
    "backtest_commands": commands_block,
    "backtest_overall": lambda reports: overall_block(reports["backtest"]),
    "backtest_seasons": lambda reports: seasons_block(reports["backtest"]),
    "backtest_algorithms": lambda reports: algorithms_block(reports["backtest"]),
    "backtest_variants": lambda reports: variants_block(reports["backtest"]),
    "backtest_value_rules": lambda reports: value_rules_block(reports["backtest_value"]),
    "backtest_value_seasons": lambda reports: value_seasons_block(reports["backtest_value"]),
    "backtest_value_sources": lambda reports: value_sources_block(reports["backtest_value"]),
    "backtest_value_source_seasons": lambda reports: value_source_seasons_block(
        reports["backtest_value"]
    ),
    "backtest_value_comparison": lambda reports: value_comparison_block(reports["backtest_value"]),
    "backtest_value_options": value_options_block,
    "backtest_value_bins": lambda reports: value_bins_block(reports["backtest_value"]),
    "backtest_value_fit_target": fit_target_block,
}


def render_blocks() -> dict[str, str]:
    """Every block of the page, rendered from the committed reports."""
    reports = {name: load_report(name) for name in COMMANDS}
    return {block: render(reports) for block, render in BLOCKS.items()}


# The plots the page shows, by the run that draws them (copied into docs/ as they are).
PLOTS = {
    "backtest": ("log_loss_by_season.png", "reliability.png"),
    "backtest_value": ("value_bankroll.png", "value_ev_vs_clv.png"),
}


def main(arguments: list[str]) -> None:
    """Copy the reports and plots found in the folder given (``reports/<name>/``) in, then
    render every block into the page."""
    for folder in arguments[:1]:
        for name in COMMANDS:
            written = Path(folder) / name
            if (written / "report.json").is_file():
                shutil.copyfile(written / "report.json", pages.figures_file(name))
            for plot in PLOTS.get(name, ()):
                if (written / plot).is_file():
                    shutil.copyfile(written / plot, pages.ROOT / "docs" / plot)
    for block, text in render_blocks().items():
        pages.write_block(EVALUATION_PAGE, block, text, INTRO)
    print(f"written: {EVALUATION_PAGE}")


if __name__ == "__main__":
    main(sys.argv[1:])
