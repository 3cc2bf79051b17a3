"""What a walk-forward backtest runs: its configuration, and the variants of the ensemble
that ``--compare-variants`` measures against it."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from app.domain import defaults
from app.domain.fitting import FitOptions, methods_to_try
from app.domain.vocabulary import FitTarget


@dataclass(frozen=True)
class BacktestConfig:
    options: FitOptions = field(default_factory=FitOptions)
    train_seasons: int = defaults.TRAIN_SEASONS
    test_seasons: tuple[str, ...] | None = None  # None: every season with enough history
    per_competition: bool = False
    # A pool bookmaker is scored on its own only if it quoted this share of the test matches.
    compare_share: float = 0.9
    # Boosting algorithms other than M2 fitted on the same pools and compared (see
    # app.domain.backtest.algorithms.OTHER_ALGORITHMS).
    algorithms: tuple[str, ...] = ()


@dataclass(frozen=True)
class Variant:
    """An option beyond plain M2, compared with the baseline on the same rows."""

    name: str
    half_life_days: float | None = None
    per_competition: bool = False
    choose_method: bool = False  # every method tried, the baseline's first
    calibrate: bool = False
    fit_target: FitTarget | None = None

    def _fit_changes(self, config: BacktestConfig) -> dict[str, Any]:
        changed: dict[str, Any] = {}
        if self.half_life_days is not None:
            changed["half_life_days"] = self.half_life_days
        if self.choose_method:
            changed["methods"] = methods_to_try(config.options.methods[0], choose=True)
        if self.calibrate:
            changed["calibrate"] = True
        if self.fit_target is not None:
            changed["fit_target"] = self.fit_target
        return changed

    def applied_to(self, config: BacktestConfig) -> BacktestConfig:
        options = replace(config.options, **self._fit_changes(config))
        per_competition = self.per_competition or config.per_competition
        return replace(config, options=options, per_competition=per_competition)

    def changes(self, config: BacktestConfig) -> dict[str, float | bool | str | list[str]]:
        """What the variant changes in ``config``, as the report lists it."""
        changed = self._fit_changes(config)
        if "methods" in changed:
            changed["methods"] = [str(method) for method in changed["methods"]]
        if "fit_target" in changed:
            changed["fit_target"] = str(changed["fit_target"])
        if self.per_competition:
            changed["per_competition"] = True
        return changed


# The options beyond plain M2 that ``--compare-variants`` measures, each against the baseline.
VARIANTS = (
    Variant("time decay, half-life 365 days", half_life_days=365.0),
    Variant("time decay, half-life 180 days", half_life_days=180.0),
    Variant("per-competition pools", per_competition=True),
    Variant("method chosen by validation", choose_method=True),
    Variant("calibrated (power on the mix)", calibrate=True),
    Variant("fitted toward the results", fit_target=FitTarget.RESULT),
)
