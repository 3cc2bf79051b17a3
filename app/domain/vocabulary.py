"""Words the whole service shares, as ``StrEnum``s: stored and serialised as their text."""

from __future__ import annotations

from enum import StrEnum


class Phase(StrEnum):
    """When a quote was offered: before the match, or the closing line at kickoff."""

    PRE = "pre"
    CLOSING = "closing"

    @property
    def quotes(self) -> str:
        return "pre-match quotes" if self is Phase.PRE else "closing quotes"


class Method(StrEnum):
    """How a bookmaker's margin is removed from its odds (see ``app.domain.odds``)."""

    MULTIPLICATIVE = "multiplicative"
    ADDITIVE = "additive"
    POWER = "power"
    SHIN = "shin"
    ODDS_RATIO = "odds_ratio"


class FitTarget(StrEnum):
    """What the model is fitted toward: the settled results, or the closing line (each
    match's outcomes weighted by the sharp bookmaker's closing probabilities, the result
    where there is no close)."""

    RESULT = "result"
    CLOSE = "close"


class MatchStatus(StrEnum):
    """Where a stored match stands: to be played, played with no result yet, or settled."""

    UPCOMING = "upcoming"
    UNSETTLED = "unsettled"
    SETTLED = "settled"


class Basis(StrEnum):
    """What a prediction rests on: the fitted model, or the plain consensus of the quotes."""

    MODEL = "model"
    CONSENSUS = "consensus"


class RunStatus(StrEnum):
    """Where a refit run stands. The last four are final."""

    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    REJECTED = "rejected"
    FAILED = "failed"
    SKIPPED = "skipped"

    @property
    def is_final(self) -> bool:
        return self not in (RunStatus.QUEUED, RunStatus.RUNNING)


class RunTrigger(StrEnum):
    """What started a refit run."""

    CLI = "cli"
    API = "api"
    SCHEDULER = "scheduler"


class FetchSource(StrEnum):
    """Where a feed fetches fixtures, odds and results from."""

    THE_ODDS_API = "the-odds-api"
    FOOTBALL_DATA = "football-data"


class FetchStatus(StrEnum):
    """Where a fetch stands; ``failed`` may have stored part of what it read (its counts)."""

    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    SKIPPED = "skipped"

    @property
    def is_final(self) -> bool:
        return self is not FetchStatus.RUNNING


class ActivatedBy(StrEnum):
    """Who made a model version the active one."""

    REFIT = "refit"
    API = "api"
    CLI = "cli"


class VersionStatus(StrEnum):
    """Serving, replaced, or never activated (refused by promotion)."""

    ACTIVE = "active"
    RETIRED = "retired"
    REJECTED = "rejected"


class ReadyStatus(StrEnum):
    """Whether the process is ready to serve (``/ready``)."""

    READY = "ready"
    NOT_READY = "not ready"


class ModelState(StrEnum):
    """What the process knows of the active model."""

    UNKNOWN = "unknown"
    NONE = "none"
    LOADED = "loaded"


class MergeChange(StrEnum):
    """What merging one team into another did to a match (so that it can be undone)."""

    HOME = "home"  # the merged team was the home side; the match moved to the other team
    AWAY = "away"  # likewise, the away side
    MERGED = "merged"  # the other team had this match: the merged team's one was folded in
