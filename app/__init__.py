"""oddsboost: football 1X2 forecasts from bookmakers' odds, combined with AdaBoost.M2."""

from __future__ import annotations

from functools import cache


def __getattr__(name: str) -> str:
    if name == "__version__":
        return _installed_version()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@cache
def _installed_version() -> str:
    # Read on first use: package metadata takes longer to import than a quick command such as
    # ``oddsboost health`` takes to run. Kept once read: reading it again costs each app made
    # (one per test) a few milliseconds.
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("oddsboost")
    except PackageNotFoundError:  # a source tree that was never installed
        return "0.0.0+unknown"
