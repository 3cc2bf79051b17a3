"""oddsboost: football 1X2 forecasts from bookmakers' odds, combined with AdaBoost.M2."""

from __future__ import annotations

from functools import cache


def __getattr__(name: str) -> str:
    if name == "__version__":
        return _installed_version()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@cache
def _installed_version() -> str:
    # Read on first use: importing package metadata takes longer than ``oddsboost health``
    # runs; and once, as each app made reads it.
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("oddsboost")
    except PackageNotFoundError:  # a source tree that was never installed
        return "0.0.0+unknown"
