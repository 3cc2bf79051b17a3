"""The figures in the docs are the benchmarks' and the backtest's own: each block between
markers is the rendering of the JSON results its benchmark (or the backtest) wrote, so no
figure is typed by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.domain import defaults
from app.domain.backtest.folds import ENSEMBLE
from benchmarks import (
    bench_history_size,
    bench_ingest,
    bench_latest_quotes,
    evaluation_figures,
    pages,
    throughput_figures,
)
from benchmarks.pages import EVALUATION_PAGE, PERFORMANCE_PAGE
from benchmarks.track_record_figures import (
    END_MARKER,
    FIGURES_FILE,
    START_MARKER,
    BackendRun,
    Cell,
    Figures,
    LogDatabase,
    load_figures,
    read_block,
    render_block,
    save_figures,
    with_run,
    write_block,
)


def test_the_performance_page_shows_the_rendering_of_the_track_record_figures() -> None:
    block = read_block(PERFORMANCE_PAGE.read_text())

    assert block is not None, f"{PERFORMANCE_PAGE} has no {START_MARKER} ... {END_MARKER} block"
    assert block == render_block(load_figures(FIGURES_FILE)), (
        f"the block of {PERFORMANCE_PAGE.name} is not the rendering of {FIGURES_FILE.name}: "
        "run benchmarks/bench_track_record.py instead of editing it"
    )


THROUGHPUT_BENCHMARKS = (
    "bench_predict",
    "bench_value_bets",
    "bench_upcoming",
    *(f"{name}_before" for name in ("bench_predict", "bench_value_bets", "bench_upcoming")),
)


@pytest.mark.parametrize("name", THROUGHPUT_BENCHMARKS)
def test_the_performance_page_shows_the_rendering_of_each_throughput_benchmark(name: str) -> None:
    block = pages.read_block(PERFORMANCE_PAGE.read_text(), name)

    assert block is not None, f"{PERFORMANCE_PAGE} has no block {name}"
    assert block == throughput_figures.render_block(throughput_figures.load_run(name), name), (
        f"the block {name} of {PERFORMANCE_PAGE.name} is not the rendering of "
        f"docs/figures/{name}.json: run benchmarks/{name}.py instead of editing it"
    )


@pytest.mark.parametrize("name", THROUGHPUT_BENCHMARKS)
def test_each_throughput_block_states_when_where_and_how_it_was_measured(name: str) -> None:
    run = throughput_figures.load_run(name)

    assert run is not None, f"docs/figures/{name}.json is missing"
    block = throughput_figures.render_block(run, name)
    assert run.benchmark == name
    for told in (run.measured.measured_on, run.measured.commit, run.measured.machine):
        assert told in block
    assert run.measured.options in block


def test_the_performance_page_shows_the_rendering_of_the_import_figures() -> None:
    block = pages.read_block(PERFORMANCE_PAGE.read_text(), bench_ingest.NAME)

    assert block is not None, f"{PERFORMANCE_PAGE} has no block {bench_ingest.NAME}"
    assert block == bench_ingest.render_block(bench_ingest.load_figures()), (
        f"the block {bench_ingest.NAME} of {PERFORMANCE_PAGE.name} is not the rendering of "
        "docs/figures/bench_ingest.json: run benchmarks/bench_ingest.py instead of editing it"
    )


def test_the_price_history_page_shows_the_rendering_of_the_history_size_figures() -> None:
    page = bench_history_size.PAGE
    block = pages.read_block(page.read_text(), bench_history_size.NAME)

    assert block is not None, f"{page} has no block {bench_history_size.NAME}"
    assert block == bench_history_size.render_block(bench_history_size.load_figures()), (
        f"the block {bench_history_size.NAME} of {page.name} is not the rendering of "
        "docs/figures/bench_history_size.json: run benchmarks/bench_history_size.py instead "
        "of editing it"
    )


@pytest.mark.parametrize("name", list(evaluation_figures.BLOCKS))
def test_the_evaluation_page_shows_the_rendering_of_the_backtest_reports(name: str) -> None:
    block = pages.read_block(EVALUATION_PAGE.read_text(), name)

    assert block is not None, f"{EVALUATION_PAGE} has no block {name}"
    assert block == pages.read_block(
        pages.with_block("", name, evaluation_figures.render_blocks()[name]), name
    ), (
        f"the block {name} of {EVALUATION_PAGE.name} is not the rendering of the backtest's "
        "reports in docs/figures/: run benchmarks/evaluation_figures.py instead of editing it"
    )


def test_the_evaluation_reports_are_the_backtests_own() -> None:
    # Each report is report.json as `oddsboost backtest` wrote it, from the command given.
    whole = evaluation_figures.load_report("backtest")
    value = evaluation_figures.load_report("backtest_value")

    assert set(whole["overall"]["algorithms"]) == {"AdaBoost.M1", "SAMME", "AdaBoost.MH"}
    assert whole["variants"]
    assert "--compare-variants" in evaluation_figures.COMMANDS["backtest"]
    assert value["value"]["overall"]["rules"]
    assert "--value-bets" in evaluation_figures.COMMANDS["backtest_value"]


def test_the_default_fit_target_is_the_one_the_value_backtest_chose() -> None:
    reports = {
        name: evaluation_figures.load_report(name) for name in evaluation_figures.FIT_TARGET_RUNS
    }
    fits = [dict(reports[name]["config"]["fit"]) for name in evaluation_figures.FIT_TARGET_RUNS]

    # The two runs differ in what they were fitted toward, and in nothing else.
    assert {fit.pop("fit_target") for fit in fits} == {"result", "close"}
    assert fits[0] == fits[1]
    assert evaluation_figures.fit_target_winner(reports) == defaults.FIT_TARGET


def target_report(target: str, mean: float, low: float, n: int) -> dict[str, object]:
    """The parts of a value report the fit-target rule reads."""
    clv = {"mean": mean, "low": low, "high": 2 * mean - low, "n": n}
    rule = {"source": "ensemble", "threshold": 0.02, "bets": n, "clv": clv}
    return {
        "config": {"fit": {"fit_target": target}},
        "overall": {"scores": {ENSEMBLE: {"log_loss": 0.97}}},
        "value": {"overall": {"rules": [rule]}},
    }


@pytest.mark.parametrize(
    ("close", "winner"),
    [
        # Result: +1 % on 1,000 bets, 10 units. Close, its interval above 0, 12 units: wins.
        (target_report("close", 0.02, 0.001, 600), "close"),
        # 8 units: less in total, whatever its mean.
        (target_report("close", 0.02, 0.001, 400), "result"),
        # 12 units, but an interval reaching 0.
        (target_report("close", 0.02, 0.0, 600), "result"),
    ],
)
def test_the_fit_target_rule(close: dict[str, object], winner: str) -> None:
    first, second = evaluation_figures.FIT_TARGET_RUNS
    reports = {first: close, second: target_report("result", 0.01, 0.005, 1000)}

    assert evaluation_figures.fit_target_winner(reports) == winner


def test_the_default_value_source_is_the_one_the_rule_chooses_from_the_backtest() -> None:
    # The rule: pooled 95 % CLV interval at the default threshold above 0, then the most
    # total CLV. On the shared seasons the chains led by PS tie; the docs say why the
    # consensus follows it.
    value = evaluation_figures.load_report("backtest_value")["value"]
    chosen = evaluation_figures.chosen_sources(value, defaults.MIN_EV)

    assert defaults.VALUE_SOURCE in chosen
    assert set(chosen) == {"PS", "PS,consensus", "PS,ensemble", "PS,consensus,ensemble"}
    assert set(value["config"]["sources"]) == set(evaluation_figures.VALUE_SOURCES)


def test_the_rule_for_the_default_source_by_hand() -> None:
    def rule(source: str, n: int, mean: float, low: float) -> dict[str, object]:
        clv = {"n": n, "mean": mean, "low": low, "high": 2 * mean - low}
        return {"source": source, "threshold": 0.02, "clv": clv}

    value = {
        "overall": {
            "rules": [
                rule("ensemble", 1000, 0.03, -0.001),  # 30 units, but its interval holds 0
                rule("consensus", 500, 0.04, 0.01),  # 20 units
                rule("PS", 800, 0.03, 0.01),  # 24 units: the most of those above 0
                {**rule("PS", 100, 0.5, 0.4), "threshold": 0.05},  # another threshold
            ]
        }
    }
    assert evaluation_figures.chosen_sources(value, 0.02) == ("PS",)
    assert evaluation_figures.chosen_sources(value, 0.0) == ()


def test_one_writer_keeps_blocks_of_several_names_apart(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Page\n\nBy hand.\n")

    pages.write_block(page, "first", "one\n")
    pages.write_block(page, "second", "two\n")
    pages.write_block(page, "first", "uno\n")

    text = page.read_text()
    assert pages.read_block(text, "first") == "uno\n"
    assert pages.read_block(text, "second") == "two\n"
    assert text.startswith("# Page\n\nBy hand.\n")
    assert pages.read_block(text, "third") is None


def cell(log: str, request: str, clients: int, **figures: object) -> Cell:
    values: dict[str, object] = {
        "first_request_ms": 300.0,
        "requests": 1000,
        "median_ms": 50.0,
        "p99_ms": 120.0,
        "errors": 0,
        "unfinished": 0,
        "baseline_mb": 150.0,
        "extra_mb": 10.0,
        "memory_guard_tripped": False,
    }
    values.update(figures)
    return Cell.model_validate({"log": log, "request": request, "clients": clients, **values})


def backend_run(cells: tuple[Cell, ...], backend: str = "sqlite") -> BackendRun:
    return BackendRun(
        backend=backend,
        measured_on="2026-11-27",
        commit="abc1234",
        cores=2,
        load_average_before="0.50 0.40 0.30",
        load_average_after="1.50 0.70 0.40",
        tool="`wrk` 4.1.0",
        duration_seconds=30,
        timeout_seconds=10,
        memory_guard_mb=4096,
        databases=(
            LogDatabase(log="1x", entries=43203, matches=43218, quotes=354892),
            LogDatabase(log="10x", entries=432030, matches=432180, quotes=3548920),
        ),
        cells=cells,
    )


def test_each_run_says_whether_it_met_the_aims() -> None:
    # Met: 50 ms < 200 ms, 10 MB < 30 MB, no error. Each other run misses one aim.
    run = backend_run(
        (
            cell("1x", "/performance", 6),
            cell("1x", "/performance", 32, median_ms=250.0, p99_ms=900.0),
            cell("1x", "/dashboard/model", 6, extra_mb=40.0),
            cell("1x", "/dashboard/model", 32, errors=3),
            cell("10x", "/performance", 6, median_ms=None, p99_ms=None, errors=6),
            cell("10x", "/performance", 32, extra_mb=4200.0, memory_guard_tripped=True),
        )
    )

    rows = render_block(Figures(runs={"sqlite": run})).splitlines()

    assert "| 1x | `GET /performance` | 6 | 1,000 | 50.0 | 120 | 0 | 150 | 10.0 | yes |" in rows
    assert "| 1x | `GET /performance` | 32 | 1,000 | 250 | 900 | 0 | 150 | 10.0 | no |" in rows
    assert "| 1x | `GET /dashboard/model` | 6 | 1,000 | 50.0 | 120 | 0 | 150 | 40.0 | no |" in rows
    assert "| 1x | `GET /dashboard/model` | 32 | 1,000 | 50.0 | 120 | 3 | 150 | 10.0 | no |" in rows
    # Unanswered within the 10 s timeout: slower than 10,000 ms, whatever it would have been.
    assert (
        "| 10x | `GET /performance` | 6 | 1,000 | > 10,000 | > 10,000 | 6 | 150 | 10.0 | no |"
        in rows
    )
    assert "| 10x | `GET /performance` | 32 | 1,000 | 50.0 | 120 | 0 | 150 | > 4,096 | no |" in rows
    assert (
        "Aims (median under 200 ms, under 30 MB of extra memory, no error): met in 1 of 6 runs."
        in rows
    )


def test_the_growth_factor_is_the_tenfold_median_over_the_first() -> None:
    run = backend_run(
        (
            cell("1x", "/performance", 6, median_ms=40.0),
            cell("1x", "/performance", 32, median_ms=80.0),
            cell("10x", "/performance", 6, median_ms=50.0),
            cell("10x", "/performance", 32, median_ms=None),
        )
    )

    rows = render_block(Figures(runs={"sqlite": run})).splitlines()

    # 50 / 40 = 1.25; an unknown median (past the timeout) has no factor.
    assert "| `GET /performance` | 1.25 | — |" in rows
    assert "| `GET /dashboard/model` | — | — |" in rows


def test_a_run_replaces_its_backends_figures_and_keeps_the_others(tmp_path: Path) -> None:
    path = tmp_path / "figures.json"
    old_sqlite = backend_run((cell("1x", "/performance", 6, median_ms=900.0),))
    postgresql = backend_run((cell("1x", "/performance", 6),), backend="postgresql")
    save_figures(with_run(with_run(None, old_sqlite), postgresql), path)
    new_sqlite = backend_run((cell("1x", "/performance", 6, median_ms=20.0),))

    save_figures(with_run(load_figures(path), new_sqlite), path)

    assert load_figures(path) == Figures(runs={"postgresql": postgresql, "sqlite": new_sqlite})


def test_writing_the_figures_changes_only_the_block_between_the_markers(tmp_path: Path) -> None:
    path = tmp_path / "performance.md"
    before, after = "# Performance\n\nWritten by hand.\n\n", "\n\n## Next\n\nAlso by hand.\n"
    path.write_text(f"{before}{START_MARKER}\nold figures\n{END_MARKER}{after}")
    figures = Figures(runs={"sqlite": backend_run((cell("1x", "/performance", 6),))})

    write_block(figures, path)
    written = path.read_text()
    write_block(figures, path)

    assert (
        written == f"{before}{START_MARKER}\n{render_block(figures).rstrip()}\n{END_MARKER}{after}"
    )
    assert path.read_text() == written
    assert read_block(written) == render_block(figures)


def test_a_missing_page_is_made_with_its_introduction(tmp_path: Path) -> None:
    path = tmp_path / "docs" / "performance.md"

    write_block(None, path)

    text = path.read_text()
    assert text.startswith("# Performance\n")
    assert read_block(text) == render_block(None)
    assert "No figures yet" in render_block(None)


def test_the_performance_page_shows_the_rendering_of_the_latest_quotes_figures() -> None:
    block = pages.read_block(PERFORMANCE_PAGE.read_text(), bench_latest_quotes.NAME)

    assert block is not None, f"{PERFORMANCE_PAGE} has no block {bench_latest_quotes.NAME}"
    assert block == bench_latest_quotes.render_block(bench_latest_quotes.load_figures()), (
        f"the block of {PERFORMANCE_PAGE.name} is not the rendering of "
        "docs/figures/bench_latest_quotes.json: run benchmarks/bench_latest_quotes.py"
    )
