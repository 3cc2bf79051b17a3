"""The backtest report: Markdown for people, JSON with every figure, and PNG plots.

Plots need matplotlib, the project's ``[report]`` extra; without it the report says so and
the Markdown and JSON are written all the same. Nothing in the report depends on the time
it was made, so the same inputs give the same report.
"""

from app.cli.backtest_report.files import write_report

__all__ = ["write_report"]
