"""Whether this process is ready to serve: the database answers and the model state is known.

"No model fitted yet" is a ready state (predictions are then the consensus, labelled so); a
database that does not answer, or a model state never read, is not.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from app.domain.vocabulary import ModelState, ReadyStatus
from app.services.serving import ModelCache

# Readiness gives up on a database that does not answer within this many seconds.
READY_TIMEOUT_SECONDS = 3.0
NO_MODEL_DETAIL = "no model fitted yet: predictions are the consensus"
MODEL_NOT_READ = "the active model has not been read from the database yet"


@dataclass(frozen=True, slots=True)
class ModelReadiness:
    """What the model cache knows, and the version when one is loaded."""

    state: ModelState
    version: int | None = None

    @property
    def detail(self) -> str | None:
        """What a ready process without a model should say about its predictions."""
        return NO_MODEL_DETAIL if self.state is ModelState.NONE else None


@dataclass(frozen=True, slots=True)
class Readiness:
    database_problem: str | None
    model: ModelReadiness

    @property
    def problems(self) -> dict[str, str]:
        """What keeps the process from being ready, by part; empty when it is ready."""
        found: dict[str, str] = {}
        if self.database_problem is not None:
            found["database"] = self.database_problem
        if self.model.state is ModelState.UNKNOWN:
            found["model"] = MODEL_NOT_READ
        return found

    @property
    def status(self) -> ReadyStatus:
        return ReadyStatus.NOT_READY if self.problems else ReadyStatus.READY

    @property
    def database(self) -> str:
        """``ok``, or why the database is not usable."""
        return self.database_problem or "ok"


def ping_database(sessions: sessionmaker[Session]) -> None:
    with sessions() as session:
        session.execute(text("SELECT 1"))


async def check_readiness(
    *,
    sessions: sessionmaker[Session],
    models: ModelCache,
    timeout_seconds: float = READY_TIMEOUT_SECONDS,
) -> Readiness:
    """Asks the database (off the event loop, within ``timeout_seconds``) and reads what the
    model cache knows; never touches the model tables."""
    try:
        await asyncio.wait_for(asyncio.to_thread(ping_database, sessions), timeout_seconds)
        database_problem = None
    except TimeoutError:
        database_problem = f"the database did not answer within {timeout_seconds:.0f} s"
    except SQLAlchemyError as error:
        database_problem = f"the database is not reachable: {type(error).__name__}"
    ensemble = models.ensemble
    if not models.loaded:
        model = ModelReadiness(ModelState.UNKNOWN)
    elif ensemble is None:
        model = ModelReadiness(ModelState.NONE)
    else:
        model = ModelReadiness(ModelState.LOADED, ensemble.version)
    return Readiness(database_problem, model)
