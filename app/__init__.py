"""oddsboost: football 1X2 forecasts from bookmakers' odds, combined with AdaBoost.M2."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("oddsboost")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"
