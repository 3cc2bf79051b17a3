"""What every part of the API shares: strict request bodies, ids, pages."""

from __future__ import annotations

from typing import Annotated, Any, Generic, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field, Strict

from app.domain.records import MAX_ID
from app.services.pagination import Paged

__all__ = ["MAX_ID", "MatchId", "Page", "StrictModel"]

# A JSON integer only: "3", true or 3.0 are a client's mistake, not match 3 or match 1.
MatchId = Annotated[int, Strict(), Field(ge=1, le=MAX_ID)]

ItemT = TypeVar("ItemT")


class StrictModel(BaseModel):
    """A request body: a field it does not know is an error, not something to ignore."""

    model_config = ConfigDict(extra="forbid")


class Page(BaseModel, Generic[ItemT]):
    """One page of a list, with the total over all pages."""

    items: list[ItemT]
    total: int
    limit: int
    offset: int

    @classmethod
    def of(cls, paged: Paged[Any]) -> Self:
        """The page a service returned (``Paged``), its rows read into this page's item
        type (from their attributes)."""
        return cls.model_validate(paged, from_attributes=True)
