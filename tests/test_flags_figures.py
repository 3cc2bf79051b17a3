"""The flag ledger's cost in the docs is its benchmark's own: the block of the performance
page is the rendering of the figures benchmarks/bench_flags.py wrote."""

from __future__ import annotations

from benchmarks import bench_flags, pages
from benchmarks.pages import PERFORMANCE_PAGE


def test_the_performance_page_shows_the_rendering_of_the_ledger_figures() -> None:
    block = pages.read_block(PERFORMANCE_PAGE.read_text(), bench_flags.NAME)

    assert block is not None, f"{PERFORMANCE_PAGE} has no block {bench_flags.NAME}"
    assert block == bench_flags.render_block(bench_flags.load_figures()), (
        f"the block {bench_flags.NAME} of {PERFORMANCE_PAGE.name} is not the rendering of "
        "docs/figures/bench_flags.json: run benchmarks/bench_flags.py instead of editing it"
    )


def test_both_runs_write_the_same_batches() -> None:
    first, again = bench_flags.batches(), bench_flags.batches()
    assert [batch.quotes for batch in first] == [batch.quotes for batch in again]
    assert sum(len(batch.quotes) for batch in first) == (
        bench_flags.ROUNDS * bench_flags.MATCHES * len(bench_flags.BOOKMAKERS)
    )
