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

READY_TIMEOUT_SECONDS = 3.0
NO_MODEL_DETAIL = "no model fitted yet: predictions are the consensus"
MODEL_NOT_READ = "the active model has not been read from the database yet"


@dataclass(frozen=True, slots=True)
class ModelReadiness:
    state: ModelState
    version: int | None = None
    detail: str | None = None  # what the predictions are while no model is fitted


@dataclass(frozen=True, slots=True)
class Readiness:
    status: ReadyStatus
    database: str  # "ok", or why the database is not usable
    model: ModelReadiness
    problems: dict[str, str]  # what keeps the process from being ready, by part


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
    problems: dict[str, str] = {}
    try:
        await asyncio.wait_for(asyncio.to_thread(ping_database, sessions), timeout_seconds)
    except TimeoutError:
        problems["database"] = f"the database did not answer within {timeout_seconds:.0f} s"
    except SQLAlchemyError as error:
        problems["database"] = f"the database is not reachable: {type(error).__name__}"
    ensemble = models.ensemble
    if not models.loaded:
        model = ModelReadiness(ModelState.UNKNOWN)
        problems["model"] = MODEL_NOT_READ
    elif ensemble is None:
        model = ModelReadiness(ModelState.NONE, detail=NO_MODEL_DETAIL)
    else:
        model = ModelReadiness(ModelState.LOADED, ensemble.version)
    status = ReadyStatus.NOT_READY if problems else ReadyStatus.READY
    return Readiness(status, problems.get("database", "ok"), model, problems)
