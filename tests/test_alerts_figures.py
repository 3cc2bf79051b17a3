"""The alerts guide's figures are the benchmark's own: the block between its markers is the
rendering of the JSON benchmarks/bench_alerts.py wrote, so no figure is typed by hand."""

from __future__ import annotations

from benchmarks import bench_alerts, pages


def test_the_alerts_guide_shows_the_rendering_of_the_alerts_figures() -> None:
    block = pages.read_block(bench_alerts.PAGE.read_text(), bench_alerts.NAME)

    assert block is not None, f"{bench_alerts.PAGE} has no block {bench_alerts.NAME}"
    assert block == bench_alerts.render_block(bench_alerts.load_figures()), (
        f"the block {bench_alerts.NAME} of {bench_alerts.PAGE.name} is not the rendering of "
        "docs/figures/bench_alerts.json: run benchmarks/bench_alerts.py instead of editing it"
    )


def test_each_run_states_when_where_and_how_it_was_measured() -> None:
    figures = bench_alerts.load_figures()

    assert figures is not None, "docs/figures/bench_alerts.json is missing"
    block = bench_alerts.render_block(figures)
    for run in figures.runs.values():
        for told in (run.measured.measured_on, run.measured.commit, run.measured.options):
            assert told in block
