"""ORM models (SQLAlchemy 2.0 typed mappings). The schema itself is owned by the migrations."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from enum import StrEnum
from typing import Any, TypeVar

from pydantic import TypeAdapter
from sqlalchemy import (
    JSON,
    CheckConstraint,
    Date,
    DateTime,
    Dialect,
    Enum,
    Float,
    ForeignKey,
    Index,
    MetaData,
    SmallInteger,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
    case,
    text,
)
from sqlalchemy.engine.default import DefaultExecutionContext
from sqlalchemy.ext.hybrid import hybrid_property
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship
from sqlalchemy.sql import ColumnElement

from app.domain.alerts import (
    ERROR_MAX_LENGTH,
    HOST_MAX_LENGTH,
    AlertEvent,
    DeliveryStatus,
    ReceiverKind,
)
from app.domain.bets import (
    BET_NOTE_MAX_LENGTH,
    PRICE_TEXT_MAX_LENGTH,
    BetChangeKind,
    BetChannel,
    BetStatus,
)
from app.domain.flags import VALUE_SOURCE_MAX_LENGTH, CloseOrigin, FlagChange, FlagStatus
from app.domain.records import (
    CODE_MAX_LENGTH,
    EXTERNAL_ID_MAX_LENGTH,
    SEASON_MAX_LENGTH,
    TEAM_NAME_MAX_LENGTH,
    credible_capture,
)
from app.domain.rounds import GridPoint
from app.domain.track_record import ServedPrediction
from app.domain.value_sources import MAX_CHAIN_LENGTH
from app.domain.version_records import BookmakerWeight, FitReport
from app.domain.vocabulary import (
    ActivatedBy,
    FetchSource,
    FetchStatus,
    MergeChange,
    Method,
    Phase,
    RunStatus,
    RunTrigger,
    VersionStatus,
)

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class UTCDateTime(TypeDecorator[dt.datetime]):
    """Timezone-aware UTC datetimes on every backend (SQLite stores them naive)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> dt.datetime | None:
        if value is None:
            return None
        if not isinstance(value, dt.datetime):
            raise TypeError(f"expected a datetime, got {type(value).__name__}")
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column; attach a time zone first")
        moment: dt.datetime = value if value.tzinfo is dt.UTC else value.astimezone(dt.UTC)
        return moment.replace(tzinfo=None) if dialect.name == "sqlite" else moment

    def process_result_value(self, value: Any, _dialect: Dialect) -> dt.datetime | None:
        if value is None:
            return None
        if not isinstance(value, dt.datetime):
            raise TypeError(f"expected a datetime from the database, got {type(value).__name__}")
        if value.tzinfo is None:
            return value.replace(tzinfo=dt.UTC)
        return value.astimezone(dt.UTC)


RecordT = TypeVar("RecordT")


def word(words: type[StrEnum], length: int) -> Enum:
    """A shared word of :mod:`app.domain.vocabulary`, stored as its text and read back as the
    word. Text given instead is stored as given: the check constraints refuse a non-word."""
    return Enum(
        words,
        native_enum=False,
        create_constraint=False,
        length=length,
        validate_strings=False,
        values_callable=lambda members: [member.value for member in members],
    )


class JSONRecord(TypeDecorator[RecordT]):
    """JSON written from a typed record (or a tuple of them) and read back into it by pydantic."""

    impl = JSON
    cache_ok = True

    def __init__(self, record_type: type[RecordT]) -> None:
        super().__init__()
        self.record_type = record_type
        self._adapter = TypeAdapter(record_type)

    def process_bind_param(self, value: Any, _dialect: Dialect) -> Any:
        if value is None:
            return None
        return self._adapter.dump_python(value, mode="json", by_alias=True, warnings="error")

    def process_result_value(self, value: Any, _dialect: Dialect) -> RecordT | None:
        if value is None:
            return None
        return self._adapter.validate_python(value)


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


# Where a job reads the present moment: a test steps a simulated one through a matchday.
Clock = Callable[[], dt.datetime]


# For tables whose ids the API shows: SQLite would otherwise hand a deleted newest row's id
# out again.
NEVER_REUSED: dict[str, Any] = {"sqlite_autoincrement": True}


def codes_check(column: str, codes: type[StrEnum]) -> CheckConstraint:
    allowed = ", ".join(f"'{code}'" for code in codes)
    return CheckConstraint(f"{column} IN ({allowed})", name=f"{column}_code")


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class Competition(Base):
    __tablename__ = "competitions"

    id: Mapped[int] = mapped_column(primary_key=True)
    code: Mapped[str] = mapped_column(String(CODE_MAX_LENGTH), unique=True)
    name: Mapped[str | None] = mapped_column(String(TEAM_NAME_MAX_LENGTH))


class Team(Base):
    __tablename__ = "teams"
    __table_args__ = (NEVER_REUSED,)

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(TEAM_NAME_MAX_LENGTH), unique=True)

    aliases: Mapped[list[TeamAlias]] = relationship(
        back_populates="team", cascade="all, delete-orphan", order_by="TeamAlias.alias"
    )


class TeamAlias(Base):
    """Another source's name for a team, e.g. "Manchester United" for "Man United"."""

    __tablename__ = "team_aliases"

    id: Mapped[int] = mapped_column(primary_key=True)
    alias: Mapped[str] = mapped_column(String(TEAM_NAME_MAX_LENGTH), unique=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"), index=True)

    team: Mapped[Team] = relationship(back_populates="aliases")


class TeamMerge(Base):
    """A team folded into another when its name became an alias of it: what ``unalias``
    needs to restore it."""

    __tablename__ = "team_merges"

    id: Mapped[int] = mapped_column(primary_key=True)
    alias_id: Mapped[int] = mapped_column(
        ForeignKey("team_aliases.id", ondelete="CASCADE"), unique=True
    )
    team_name: Mapped[str] = mapped_column(String(TEAM_NAME_MAX_LENGTH))
    # The merged team's own aliases, which now name the team it was merged into.
    aliases: Mapped[list[str]] = mapped_column(JSON)
    merged_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)

    matches: Mapped[list[TeamMergeMatch]] = relationship(
        back_populates="merge", cascade="all, delete-orphan", order_by="TeamMergeMatch.id"
    )


class TeamMergeMatch(Base):
    """One match a team merge changed: ``home`` or ``away``, the side of a match that moved
    over; ``merged``, a match of the other team that took in the merged team's one."""

    __tablename__ = "team_merge_matches"
    __table_args__ = (codes_check("change", MergeChange),)

    id: Mapped[int] = mapped_column(primary_key=True)
    merge_id: Mapped[int] = mapped_column(
        ForeignKey("team_merges.id", ondelete="CASCADE"), index=True
    )
    match_id: Mapped[int | None] = mapped_column(
        ForeignKey("matches.id", ondelete="SET NULL"), index=True
    )
    change: Mapped[MergeChange] = mapped_column(word(MergeChange, 8))

    merge: Mapped[TeamMerge] = relationship(back_populates="matches")


class Bookmaker(Base):
    __tablename__ = "bookmakers"

    id: Mapped[int] = mapped_column(primary_key=True)
    code: Mapped[str] = mapped_column(String(CODE_MAX_LENGTH), unique=True)
    name: Mapped[str] = mapped_column(String(TEAM_NAME_MAX_LENGTH))


class Match(Base):
    __tablename__ = "matches"
    __table_args__ = (
        UniqueConstraint("competition_id", "home_team_id", "away_team_id", "kickoff_date"),
        CheckConstraint("home_team_id <> away_team_id", name="distinct_teams"),
        CheckConstraint("result IS NULL OR result IN ('1', 'X', '2')", name="result_code"),
        CheckConstraint(
            "(result IS NULL AND home_goals IS NULL AND away_goals IS NULL) OR "
            "(result IS NOT NULL AND home_goals >= 0 AND away_goals >= 0)",
            name="settled_with_goals",
        ),
        # The refit reads settled matches in a kickoff window.
        Index(
            "ix_matches_settled_kickoff",
            "kickoff",
            sqlite_where=text("result IS NOT NULL"),
            postgresql_where=text("result IS NOT NULL"),
        ),
        Index("ix_matches_competition_id_kickoff", "competition_id", "kickoff"),
        Index("ix_matches_kickoff", "kickoff"),
        # The newest change of any match, read by a poll of the upcoming board.
        Index("ix_matches_updated_at", "updated_at"),
        NEVER_REUSED,
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    competition_id: Mapped[int] = mapped_column(ForeignKey("competitions.id"))
    season: Mapped[str] = mapped_column(String(SEASON_MAX_LENGTH), index=True)
    kickoff: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    # Part of the match's identity; kept as its own column so the unique constraint is
    # portable (football-data.co.uk files before 2019/20 give the date only).
    kickoff_date: Mapped[dt.date] = mapped_column(Date)
    kickoff_time_known: Mapped[bool]
    home_team_id: Mapped[int] = mapped_column(ForeignKey("teams.id"), index=True)
    away_team_id: Mapped[int] = mapped_column(ForeignKey("teams.id"), index=True)
    home_goals: Mapped[int | None] = mapped_column(SmallInteger)
    away_goals: Mapped[int | None] = mapped_column(SmallInteger)
    result: Mapped[str | None] = mapped_column(String(1))
    external_id: Mapped[str | None] = mapped_column(String(EXTERNAL_ID_MAX_LENGTH), unique=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    # The track record's aggregates find the matches changed since they were computed by it.
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow, onupdate=utcnow)
    # Counts the changes of the match's quotes, in the transaction of each: stamps compare it,
    # as the moment a writer stamps its rows on can be older than one already committed.
    quotes_revision: Mapped[int] = mapped_column(default=0, server_default="0")

    competition: Mapped[Competition] = relationship()
    home_team: Mapped[Team] = relationship(foreign_keys=[home_team_id])
    away_team: Mapped[Team] = relationship(foreign_keys=[away_team_id])

    @hybrid_property
    def is_settled(self) -> bool:
        """The result is in, on a row and in a query (:func:`app.domain.records.settled_result`)."""
        return self.result is not None

    @is_settled.inplace.expression
    @classmethod
    def _is_settled_expression(cls) -> ColumnElement[bool]:
        # Spelled as the partial index ix_matches_settled_kickoff is, so it is used.
        return cls.result.is_not(None)


def _seen_when_received(context: DefaultExecutionContext) -> dt.datetime:
    """A new quote is last seen when it is received."""
    parameters = context.get_current_parameters()  # type: ignore[no-untyped-call]
    received = parameters.get("received_at")
    return received if isinstance(received, dt.datetime) else utcnow()


class OddsQuote(Base):
    """One bookmaker's decimal 1/X/2 prices for one match at one moment."""

    __tablename__ = "odds_quotes"
    __table_args__ = (
        # A dated quote is identified by its capture time; NULLs are distinct in SQL
        # unique constraints, so undated quotes get their own partial unique index.
        UniqueConstraint("match_id", "bookmaker_id", "phase", "captured_at"),
        Index(
            "uq_odds_quotes_undated",
            "match_id",
            "bookmaker_id",
            "phase",
            unique=True,
            sqlite_where=text("captured_at IS NULL"),
            postgresql_where=text("captured_at IS NULL"),
        ),
        codes_check("phase", Phase),
        CheckConstraint(
            "home > 1 AND draw > 1 AND away > 1 AND home <= 1000 AND draw <= 1000 AND away <= 1000",
            name="price_range",
        ),
        Index("ix_odds_quotes_bookmaker_id", "bookmaker_id"),
        # The newest receipt of any quote, read by a poll of the upcoming board.
        Index("ix_odds_quotes_received_at", "received_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    match_id: Mapped[int] = mapped_column(ForeignKey("matches.id", ondelete="CASCADE"))
    bookmaker_id: Mapped[int] = mapped_column(ForeignKey("bookmakers.id"))
    phase: Mapped[Phase] = mapped_column(word(Phase, 8))
    home: Mapped[float] = mapped_column(Float)
    draw: Mapped[float] = mapped_column(Float)
    away: Mapped[float] = mapped_column(Float)
    captured_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    received_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    # The latest receipt of these same prices: a feed that meets them again moves it on,
    # never back, so a price that held until kickoff is known to have held.
    seen_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=_seen_when_received)

    bookmaker: Mapped[Bookmaker] = relationship()

    @hybrid_property
    def credible_captured_at(self) -> dt.datetime | None:
        """:func:`app.domain.records.credible_capture`, on a row and in a query."""
        return credible_capture(self.captured_at, self.received_at)

    @credible_captured_at.inplace.expression
    @classmethod
    def _credible_captured_at_expression(cls) -> ColumnElement[dt.datetime | None]:
        # NULL stays NULL: the comparison is unknown, so the ELSE gives the NULL back.
        return case((cls.captured_at > cls.received_at, cls.received_at), else_=cls.captured_at)


class LatestQuote(Base):
    """Per match, bookmaker and phase, the quote served: the latest one valid before kickoff
    (``app.domain.training.select_latest_valid``), kept by every write of quotes or kickoffs
    in the same transaction, so an answer reads these rows instead of the price history.
    A deleted quote takes its row with it: whatever deletes quotes that may be served calls
    ``refresh_latest_quotes`` for their matches, so that the next latest is chosen."""

    __tablename__ = "latest_quotes"
    __table_args__ = (
        codes_check("phase", Phase),
        # A deleted quote takes its row with it (the foreign key cascades): found by this.
        Index("ix_latest_quotes_quote_id", "quote_id"),
        # The newest change of any served quote, read by a poll of the upcoming board.
        Index("ix_latest_quotes_chosen_at", "chosen_at"),
    )

    match_id: Mapped[int] = mapped_column(
        ForeignKey("matches.id", ondelete="CASCADE"), primary_key=True
    )
    bookmaker_id: Mapped[int] = mapped_column(ForeignKey("bookmakers.id"), primary_key=True)
    phase: Mapped[Phase] = mapped_column(word(Phase, 8), primary_key=True)
    quote_id: Mapped[int] = mapped_column(ForeignKey("odds_quotes.id", ondelete="CASCADE"))
    # The quote's receipt when chosen: an update of its prices in place moves the receipt,
    # which tells the row to be chosen again.
    received_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    # When this row last changed: its quote chosen, or that quote's prices updated.
    chosen_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())


class ModelVersion(Base):
    """A fitted ensemble: how much to trust each bookmaker, and how it was validated. At most
    one is active; ``activated_at`` is its latest activation."""

    __tablename__ = "model_versions"
    __table_args__ = (
        Index(
            "uq_model_versions_one_active",
            "is_active",
            unique=True,
            sqlite_where=text("is_active"),
            postgresql_where=text("is_active"),
        ),
        Index("ix_model_versions_created_at", "created_at"),
        NEVER_REUSED,
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    algorithm: Mapped[str] = mapped_column(String(32))
    method: Mapped[Method] = mapped_column(word(Method, 32))
    phase: Mapped[Phase] = mapped_column(word(Phase, 8))
    rounds: Mapped[int]
    # Exponent a of p ∝ p^a applied to the weighted mix; 1 when not calibrated.
    calibration: Mapped[float] = mapped_column(Float, default=1.0, server_default=text("1.0"))
    window_start: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    window_end: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    n_matches: Mapped[int]
    # With n_matches, what tells a refit on the same matches; None in older versions.
    newest_kickoff: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    bookmakers: Mapped[tuple[BookmakerWeight, ...]] = mapped_column(
        JSONRecord(tuple[BookmakerWeight, ...])
    )
    rounds_grid: Mapped[tuple[GridPoint, ...]] = mapped_column(JSONRecord(tuple[GridPoint, ...]))
    validation: Mapped[FitReport] = mapped_column(JSONRecord(FitReport))
    is_active: Mapped[bool] = mapped_column(default=False)
    activated_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    rejected_reason: Mapped[str | None] = mapped_column(Text)
    project_version: Mapped[str] = mapped_column(String(32))
    fit_seconds: Mapped[float] = mapped_column(Float)

    @property
    def status(self) -> VersionStatus:
        if self.is_active:
            return VersionStatus.ACTIVE
        # A rejected version an operator activated anyway served, and is retired once
        # replaced; it keeps the reason it was rejected for.
        if self.rejected_reason is not None and self.activated_at is None:
            return VersionStatus.REJECTED
        return VersionStatus.RETIRED


class ModelActivation(Base):
    """One time a version became the active one, by a refit or by an operator."""

    __tablename__ = "model_activations"
    __table_args__ = (
        codes_check("activated_by", ActivatedBy),
        Index("ix_model_activations_activated_at", "activated_at"),
        NEVER_REUSED,
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    version_id: Mapped[int] = mapped_column(
        ForeignKey("model_versions.id", ondelete="CASCADE"), index=True
    )
    # The version active until then; None when none was.
    previous_version_id: Mapped[int | None] = mapped_column(
        ForeignKey("model_versions.id", ondelete="SET NULL")
    )
    activated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    activated_by: Mapped[ActivatedBy] = mapped_column(word(ActivatedBy, 8))
    reason: Mapped[str | None] = mapped_column(Text)
    # The refit run that promoted the version, when a refit did.
    run_id: Mapped[int | None] = mapped_column(ForeignKey("refit_runs.id", ondelete="SET NULL"))


class RefitRun(Base):
    __tablename__ = "refit_runs"
    __table_args__ = (
        codes_check("status", RunStatus),
        Index("ix_refit_runs_started_at", "started_at"),
        NEVER_REUSED,
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    trigger: Mapped[RunTrigger] = mapped_column(word(RunTrigger, 16))
    status: Mapped[RunStatus] = mapped_column(word(RunStatus, 16))
    started_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    finished_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    until: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    message: Mapped[str | None] = mapped_column(Text)
    version_id: Mapped[int | None] = mapped_column(
        ForeignKey("model_versions.id", ondelete="SET NULL")
    )
    host: Mapped[str | None] = mapped_column(String(255))
    pid: Mapped[int | None]


class FetchRun(Base):
    __tablename__ = "fetch_runs"
    __table_args__ = (
        codes_check("source", FetchSource),
        codes_check("status", FetchStatus),
        Index("ix_fetch_runs_started_at", "started_at"),
        NEVER_REUSED,
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    source: Mapped[FetchSource] = mapped_column(word(FetchSource, 16))
    trigger: Mapped[RunTrigger] = mapped_column(word(RunTrigger, 16))
    status: Mapped[FetchStatus] = mapped_column(word(FetchStatus, 16))
    started_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    finished_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    # HTTP requests sent, and documents that were new (not answered 304 Not Modified).
    requests: Mapped[int] = mapped_column(default=0)
    changed: Mapped[int] = mapped_column(default=0)
    # What the documents stored: new matches, quotes and results.
    matches: Mapped[int] = mapped_column(default=0)
    quotes: Mapped[int] = mapped_column(default=0)
    results: Mapped[int] = mapped_column(default=0)
    skipped: Mapped[int] = mapped_column(default=0)
    # The Odds API's quota headers after the run's last request.
    quota_remaining: Mapped[int | None]
    quota_used: Mapped[int | None]
    error: Mapped[str | None] = mapped_column(Text)


class FetchedDocument(Base):
    """What a feed last saw of one document (a URL with no secret; a shared file's leagues
    after a ``#``): when it was last fetched (``checked_at``), when what it answered last
    differed from what was stored (``changed_at``: a download not answered 304; for The Odds
    API, an answer that stored a match or a price), its validators for a conditional
    request, and where it was last read (see ``app/services/fetched_documents.py``)."""

    __tablename__ = "fetched_documents"

    id: Mapped[int] = mapped_column(primary_key=True)
    url: Mapped[str] = mapped_column(String(500), unique=True)
    etag: Mapped[str | None] = mapped_column(String(255))
    last_modified: Mapped[str | None] = mapped_column(String(64))
    final_url: Mapped[str | None] = mapped_column(Text)
    checked_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    changed_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)


class PredictionLogEntry(Base):
    """What the service would have served for a match at its kickoff; written once."""

    __tablename__ = "prediction_log"
    __table_args__ = (Index("ix_prediction_log_kickoff", "kickoff"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    match_id: Mapped[int] = mapped_column(ForeignKey("matches.id", ondelete="CASCADE"), unique=True)
    # The kickoff the prediction was made for (the match's, when it was logged).
    kickoff: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    logged_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    # No foreign key: the log keeps the number of a version even if the version goes.
    model_version: Mapped[int | None]
    served: Mapped[ServedPrediction] = mapped_column(JSONRecord(ServedPrediction))


class RollingScore(Base):
    """Served minus consensus log loss over the settled logged matches of the last ``days``
    days (None: no such match); the metrics read the newest."""

    __tablename__ = "rolling_scores"

    id: Mapped[int] = mapped_column(primary_key=True)
    computed_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    days: Mapped[int]
    matches: Mapped[int]
    served_minus_consensus_log_loss: Mapped[float | None] = mapped_column(Float)


# The track record's daily aggregates (``app/services/track_record_aggregates.py``), per UTC
# day of kickoff, competition and model version (None: the consensus was served).


class TrackRecordDay(Base):
    """Summed scores of the served and consensus forecasts, their log-loss differences, and
    the value bets' counts, CLV and flat returns."""

    __tablename__ = "track_record_days"
    __table_args__ = (Index("ix_track_record_days_day", "day"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    day: Mapped[dt.date] = mapped_column(Date)
    competition_id: Mapped[int] = mapped_column(ForeignKey("competitions.id"))
    model_version: Mapped[int | None]
    matches: Mapped[int]
    served_log_loss: Mapped[float] = mapped_column(Float)
    served_brier: Mapped[float] = mapped_column(Float)
    served_rps: Mapped[float] = mapped_column(Float)
    served_hits: Mapped[float] = mapped_column(Float)
    consensus_log_loss: Mapped[float] = mapped_column(Float)
    consensus_brier: Mapped[float] = mapped_column(Float)
    consensus_rps: Mapped[float] = mapped_column(Float)
    consensus_hits: Mapped[float] = mapped_column(Float)
    difference_sum: Mapped[float] = mapped_column(Float)
    difference_squares: Mapped[float] = mapped_column(Float)
    bets: Mapped[int]
    bets_with_closing: Mapped[int]
    clv_sum: Mapped[float] = mapped_column(Float)
    clv_squares: Mapped[float] = mapped_column(Float)
    return_sum: Mapped[float] = mapped_column(Float)
    return_squares: Mapped[float] = mapped_column(Float)


class TrackRecordBookmaker(Base):
    """A bookmaker's summed scores, the served forecast's on the same entries, and the
    served − bookmaker log-loss differences."""

    __tablename__ = "track_record_bookmakers"
    __table_args__ = (
        Index("ix_track_record_bookmakers_day", "day"),
        Index("ix_track_record_bookmakers_bookmaker_day", "bookmaker", "day"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    day: Mapped[dt.date] = mapped_column(Date)
    competition_id: Mapped[int] = mapped_column(ForeignKey("competitions.id"))
    model_version: Mapped[int | None]
    bookmaker: Mapped[str] = mapped_column(String(TEAM_NAME_MAX_LENGTH))
    matches: Mapped[int]
    log_loss: Mapped[float] = mapped_column(Float)
    brier: Mapped[float] = mapped_column(Float)
    rps: Mapped[float] = mapped_column(Float)
    hits: Mapped[float] = mapped_column(Float)
    served_log_loss: Mapped[float] = mapped_column(Float)
    served_brier: Mapped[float] = mapped_column(Float)
    served_rps: Mapped[float] = mapped_column(Float)
    served_hits: Mapped[float] = mapped_column(Float)
    difference_sum: Mapped[float] = mapped_column(Float)
    difference_squares: Mapped[float] = mapped_column(Float)


class TrackRecordBankroll(Base):
    """The value bets of one kickoff: their number and Σ stake × return, so the bankroll
    after the kickoff is the one before times 1 + ``growth`` summed over its rows."""

    __tablename__ = "track_record_bankroll"
    __table_args__ = (
        Index("ix_track_record_bankroll_day", "day"),
        Index("ix_track_record_bankroll_kickoff", "kickoff"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    day: Mapped[dt.date] = mapped_column(Date)
    kickoff: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    competition_id: Mapped[int] = mapped_column(ForeignKey("competitions.id"))
    model_version: Mapped[int | None]
    bets: Mapped[int]
    growth: Mapped[float] = mapped_column(Float)


class TrackRecordReliability(Base):
    """The served probabilities of one outcome (0, 1, 2) in one bin on a day: their count,
    sum, and how often the outcome happened."""

    __tablename__ = "track_record_reliability"
    __table_args__ = (Index("ix_track_record_reliability_day", "day"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    day: Mapped[dt.date] = mapped_column(Date)
    outcome: Mapped[int] = mapped_column(SmallInteger)
    bin: Mapped[int] = mapped_column(SmallInteger)
    count: Mapped[int]
    predicted: Mapped[float] = mapped_column(Float)
    observed: Mapped[float] = mapped_column(Float)


class TrackRecordState(Base):
    """What the aggregates cover (one row): their terms (None: none made yet), whether every
    day is in them (else those before ``filled_until``), the entries and match changes they
    follow, and a revision moved by every write."""

    __tablename__ = "track_record_state"

    id: Mapped[int] = mapped_column(primary_key=True)
    kelly_fraction: Mapped[float | None] = mapped_column(Float)
    stake_cap: Mapped[float | None] = mapped_column(Float)
    reliability_bins: Mapped[int | None]
    complete: Mapped[bool]
    filled_until: Mapped[dt.date | None] = mapped_column(Date)
    entries_through: Mapped[int]
    matches_through: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    checked_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    revision: Mapped[int]


# The flag ledger (``app/services/flags.py``): each value flag of the board as first raised,
# what happened to it after, and how it fared.


class ValueFlag(Base):
    """An outcome the board flagged, as it was when first raised (never rewritten); its
    ``status`` and ``best_net_price`` follow its events; the settlement columns are filled
    when its match's result is stored."""

    __tablename__ = "value_flags"
    __table_args__ = (
        # One flag per match and outcome: two writers raising it at once store it once.
        UniqueConstraint("match_id", "outcome"),
        CheckConstraint("outcome IN ('1', 'X', '2')", name="outcome_code"),
        CheckConstraint("result IS NULL OR result IN ('1', 'X', '2')", name="result_code"),
        codes_check("status", FlagStatus),
        codes_check("close_origin", CloseOrigin),
        Index("ix_value_flags_raised_at", "raised_at"),
        Index("ix_value_flags_status", "status"),
        # Each track-record request reads the newest settled_at (a flag scored again).
        Index("ix_value_flags_settled_at", "settled_at"),
        NEVER_REUSED,
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    match_id: Mapped[int] = mapped_column(ForeignKey("matches.id", ondelete="CASCADE"))
    outcome: Mapped[str] = mapped_column(String(1))
    bookmaker: Mapped[str] = mapped_column(String(CODE_MAX_LENGTH))
    price: Mapped[float] = mapped_column(Float)  # as quoted
    net_price: Mapped[float] = mapped_column(Float)  # what it pays after any commission
    expected_value: Mapped[float] = mapped_column(Float)
    probability: Mapped[float] = mapped_column(Float)
    value_source: Mapped[str] = mapped_column(String(VALUE_SOURCE_MAX_LENGTH))  # the link
    # The chain in force (null: raised before it was recorded).
    value_chain: Mapped[str | None] = mapped_column(String(MAX_CHAIN_LENGTH))
    # No foreign key: the ledger keeps the number of a version even if the version goes.
    model_version: Mapped[int | None]
    raised_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    status: Mapped[FlagStatus] = mapped_column(word(FlagStatus, 16))
    best_net_price: Mapped[float] = mapped_column(Float)
    result: Mapped[str | None] = mapped_column(String(1))
    flat_return: Mapped[float | None] = mapped_column(Float)
    close_home: Mapped[float | None] = mapped_column(Float)
    close_draw: Mapped[float | None] = mapped_column(Float)
    close_away: Mapped[float | None] = mapped_column(Float)
    close_origin: Mapped[CloseOrigin | None] = mapped_column(word(CloseOrigin, 16))
    close_captured_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    # A live close: the latest moment (kickoff at most) its prices were seen to hold.
    close_seen_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    closing_probability: Mapped[float | None] = mapped_column(Float)
    clv: Mapped[float | None] = mapped_column(Float)
    settled_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())

    match: Mapped[Match] = relationship()
    events: Mapped[list[ValueFlagEvent]] = relationship(order_by="ValueFlagEvent.id", viewonly=True)


class ValueFlagEvent(Base):
    """Something that happened to a flag after it was raised; appended, never changed. The
    board's view of the flag's outcome then (None where no price was left)."""

    __tablename__ = "value_flag_events"
    __table_args__ = (codes_check("change", FlagChange),)

    id: Mapped[int] = mapped_column(primary_key=True)
    flag_id: Mapped[int] = mapped_column(
        ForeignKey("value_flags.id", ondelete="CASCADE"), index=True
    )
    change: Mapped[FlagChange] = mapped_column(word(FlagChange, 16))
    at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    bookmaker: Mapped[str | None] = mapped_column(String(CODE_MAX_LENGTH))
    price: Mapped[float | None] = mapped_column(Float)
    net_price: Mapped[float | None] = mapped_column(Float)
    expected_value: Mapped[float | None] = mapped_column(Float)
    probability: Mapped[float | None] = mapped_column(Float)
    model_version: Mapped[int | None]


class Bet(Base):
    """A bet the user placed; the settlement columns are filled when its match's result is
    stored (again if the result is corrected). Every change is recorded in ``bet_changes``."""

    __tablename__ = "bets"
    __table_args__ = (
        CheckConstraint("outcome IN ('1', 'X', '2')", name="outcome_code"),
        CheckConstraint("result IS NULL OR result IN ('1', 'X', '2')", name="result_code"),
        codes_check("status", BetStatus),
        codes_check("close_origin", CloseOrigin),
        CheckConstraint("stake > 0", name="positive_stake"),
        CheckConstraint("price > 1", name="price_above_one"),
        Index("ix_bets_placed_at", "placed_at"),
        Index("ix_bets_status", "status"),
        NEVER_REUSED,
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    # A match with bets is not deleted from under them.
    match_id: Mapped[int] = mapped_column(ForeignKey("matches.id", ondelete="RESTRICT"), index=True)
    outcome: Mapped[str] = mapped_column(String(1))
    bookmaker: Mapped[str] = mapped_column(String(CODE_MAX_LENGTH))
    price: Mapped[float] = mapped_column(Float)  # decimal
    price_text: Mapped[str] = mapped_column(String(PRICE_TEXT_MAX_LENGTH))  # as typed
    stake: Mapped[float] = mapped_column(Float)
    placed_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    flag_id: Mapped[int | None] = mapped_column(ForeignKey("value_flags.id", ondelete="SET NULL"))
    # The link that priced the flag it followed (None: not from a flag).
    source: Mapped[str | None] = mapped_column(String(VALUE_SOURCE_MAX_LENGTH))
    note: Mapped[str | None] = mapped_column(String(BET_NOTE_MAX_LENGTH))
    status: Mapped[BetStatus] = mapped_column(word(BetStatus, 16))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    result: Mapped[str | None] = mapped_column(String(1))
    returned: Mapped[float | None] = mapped_column(Float)
    profit: Mapped[float | None] = mapped_column(Float)
    close_price: Mapped[float | None] = mapped_column(Float)  # the reference's, this outcome
    closing_probability: Mapped[float | None] = mapped_column(Float)
    clv: Mapped[float | None] = mapped_column(Float)
    close_origin: Mapped[CloseOrigin | None] = mapped_column(word(CloseOrigin, 16))
    close_captured_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    settled_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())

    match: Mapped[Match] = relationship()


class BetChange(Base):
    """One change to a bet, appended and never edited: what it was before and after (JSON of
    its user's fields; None for a creation's before and a deletion's after). No foreign key:
    a deleted bet keeps its trail."""

    __tablename__ = "bet_changes"
    __table_args__ = (
        codes_check("change", BetChangeKind),
        codes_check("channel", BetChannel),
        NEVER_REUSED,
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    bet_id: Mapped[int] = mapped_column(index=True)
    change: Mapped[BetChangeKind] = mapped_column(word(BetChangeKind, 16))
    channel: Mapped[BetChannel] = mapped_column(word(BetChannel, 16))
    at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    before: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    after: Mapped[dict[str, Any] | None] = mapped_column(JSON)


class AlertDelivery(Base):
    """One alert to one configured receiver (the outbox): written in the transaction that
    recorded its flag's event, sent afterwards by the sender, every attempt recorded in
    ``alert_attempts``. The receiver is named by its key and host, never its URL."""

    __tablename__ = "alert_deliveries"
    __table_args__ = (
        codes_check("event", AlertEvent),
        codes_check("receiver_kind", ReceiverKind),
        codes_check("status", DeliveryStatus),
        # The sender's query: the due pending deliveries.
        Index("ix_alert_deliveries_status_next_attempt_at", "status", "next_attempt_at"),
        NEVER_REUSED,
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    flag_id: Mapped[int] = mapped_column(
        ForeignKey("value_flags.id", ondelete="CASCADE"), index=True
    )
    event: Mapped[AlertEvent] = mapped_column(word(AlertEvent, 16))
    receiver_key: Mapped[str] = mapped_column(String(64))
    receiver_kind: Mapped[ReceiverKind] = mapped_column(word(ReceiverKind, 16))
    host: Mapped[str] = mapped_column(String(HOST_MAX_LENGTH))
    # The message's fields but the delivery's own (its id, when it was sent).
    message: Mapped[dict[str, Any]] = mapped_column(JSON)
    net_price: Mapped[float] = mapped_column(Float)  # the alerted price (the margin's base)
    status: Mapped[DeliveryStatus] = mapped_column(word(DeliveryStatus, 16))
    attempts: Mapped[int] = mapped_column(default=0)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    next_attempt_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    # A sender holds the delivery until then (another takes it over if that sender died).
    claimed_until: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    delivered_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())

    attempt_log: Mapped[list[AlertAttempt]] = relationship(
        order_by="AlertAttempt.number", viewonly=True
    )


class AlertAttempt(Base):
    """One attempt of a delivery: the answer's status (None: none came) or the error, how
    long it took, and when the next attempt is due (None: no other)."""

    __tablename__ = "alert_attempts"
    __table_args__ = (NEVER_REUSED,)

    id: Mapped[int] = mapped_column(primary_key=True)
    delivery_id: Mapped[int] = mapped_column(
        ForeignKey("alert_deliveries.id", ondelete="CASCADE"), index=True
    )
    number: Mapped[int]
    started_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    duration_seconds: Mapped[float] = mapped_column(Float)
    status_code: Mapped[int | None]
    error: Mapped[str | None] = mapped_column(String(ERROR_MAX_LENGTH))
    next_attempt_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
