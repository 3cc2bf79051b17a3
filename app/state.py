"""What a running application holds: built by the lifespan in ``app.main``, reached by the
routers through the dependencies of ``app.api.deps``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, TypedDict

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from app.db.engine import PoolLimits, make_engine, make_session_factory, session_scope
from app.db.migrate import require_current_schema
from app.services.admission import Admission
from app.services.busy import POOL_DETAIL, DatabaseBusyError, unavailable_as_service_error
from app.services.caching import KeptBodies
from app.services.catalogue import CatalogueCounts
from app.services.prediction import PredictionService
from app.services.serving import ModelCache
from app.services.track_record_answers import TrackRecordAnswers
from app.services.upcoming import UpcomingBoards, shared_boards
from app.settings import Settings

# Pages kept: a page asked for again is rendered once, not once a request.
PAGES_KEPT = 64
# The body of each answer of GET /upcoming is handed again to the polls of the same board and
# page within a second (their ages as of the first of them): a board polled by many clients
# is written once a second, not once a poll.
BODY_SECONDS = 1.0
BODIES_KEPT = 256

# The type of the session handed to services: routers see it only through this name.
__all__ = ["AppState", "LifespanState", "Session", "app_state"]


@dataclass(frozen=True, slots=True)
class AppState:
    """One per worker process."""

    settings: Settings
    engine: Engine
    read_sessions: sessionmaker[Session]
    # Sessions that take SQLite's write lock at BEGIN (see ``make_session_factory``).
    write_sessions: sessionmaker[Session]
    # The model's refresh reads on a connection of its own, never one a request waits for.
    refresh_engine: Engine
    models: ModelCache
    predictions: PredictionService
    upcoming: UpcomingBoards
    track_record: TrackRecordAnswers
    admission: Admission
    # The dashboard's rendered pages, and the written bodies of GET /upcoming.
    pages: KeptBodies
    upcoming_bodies: KeptBodies
    catalogue: CatalogueCounts
    # One place per pooled connection, taken on the event loop by a request before its
    # session (see ``app.api.deps.get_session``).
    session_places: asyncio.Semaphore

    @classmethod
    def open(cls, settings: Settings) -> AppState:
        """Connect, and refuse a database whose schema this code does not know."""
        pool = PoolLimits(
            settings.database_pool_size,
            settings.database_pool_overflow,
            settings.database_pool_timeout_seconds,
        )
        engine = make_engine(
            settings.database_url,
            sqlite_busy_timeout_seconds=settings.sqlite_busy_timeout_seconds,
            pool=pool,
        )
        try:
            require_current_schema(engine)
        except BaseException:
            engine.dispose()
            raise
        refresh_engine = make_engine(
            settings.database_url,
            sqlite_busy_timeout_seconds=settings.sqlite_busy_timeout_seconds,
            pool=PoolLimits(1, 0, settings.database_pool_timeout_seconds),
        )
        read_sessions = make_session_factory(engine)
        models = ModelCache(
            make_session_factory(refresh_engine),
            default_method=settings.demargin_method,
            default_phase=settings.refit_phase,
        )
        return cls(
            settings=settings,
            engine=engine,
            read_sessions=read_sessions,
            refresh_engine=refresh_engine,
            write_sessions=make_session_factory(engine, for_writes=True),
            models=models,
            predictions=PredictionService(
                engine=engine,
                models=models,
                answer_ttl_seconds=settings.predict_cache_seconds,
                default_terms=settings.value_terms(),
            ),
            upcoming=UpcomingBoards(
                sessions=read_sessions,
                models=models,
                shared=shared_boards(settings),
                max_bytes=settings.board_cache_bytes,
            ),
            track_record=TrackRecordAnswers(),
            admission=Admission(settings.admission_limits()),
            pages=KeptBodies(None, max_entries=PAGES_KEPT, max_bytes=settings.kept_bodies_bytes),
            upcoming_bodies=KeptBodies(
                BODY_SECONDS, max_entries=BODIES_KEPT, max_bytes=settings.kept_bodies_bytes
            ),
            catalogue=CatalogueCounts(fresh_seconds=settings.catalogue_counts_seconds),
            session_places=asyncio.Semaphore(pool.connections),
        )

    def close(self) -> None:
        self.track_record.close()
        self.catalogue.close()
        self.upcoming.close()
        self.refresh_engine.dispose()
        self.engine.dispose()

    @asynccontextmanager
    async def session_place(self) -> AsyncIterator[None]:
        """A place for one request's session, waited for on the event loop (holding no
        thread) as long as a checkout waits for a connection; then a ``DatabaseBusyError``."""
        try:
            async with asyncio.timeout(self.settings.database_pool_timeout_seconds):
                await self.session_places.acquire()
        except TimeoutError:
            raise DatabaseBusyError(POOL_DETAIL) from None
        try:
            yield
        finally:
            self.session_places.release()

    def read_session(self) -> Iterator[Session]:
        """One unit of work that reads, committed unless it raises; a database busy or out of
        reach raises a ``DatabaseUnavailableError``."""
        with unavailable_as_service_error(), session_scope(self.read_sessions) as session:
            yield session

    def write_session(self) -> Iterator[Session]:
        """Like :meth:`read_session`, for work that writes."""
        with unavailable_as_service_error(), session_scope(self.write_sessions) as session:
            yield session


class LifespanState(TypedDict):
    app_state: AppState


def app_state(lifespan_state: Mapping[str, Any]) -> AppState:
    state = lifespan_state.get("app_state")  # the key of LifespanState
    if not isinstance(state, AppState):
        raise RuntimeError("the application has not started: its lifespan has not run")
    return state
