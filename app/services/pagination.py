"""One page of a query's rows and how many rows the whole query has."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

RowT = TypeVar("RowT")
ViewT = TypeVar("ViewT")


@dataclass(frozen=True, slots=True)
class PageWindow:
    """Which part of a list is asked for: at most ``limit`` rows after skipping ``offset``."""

    limit: int
    offset: int


@dataclass(frozen=True, slots=True)
class Paged(Generic[RowT]):
    """The rows of one page, with the total the list has over all pages."""

    items: Sequence[RowT]
    total: int
    limit: int
    offset: int

    def map(self, view: Callable[[RowT], ViewT]) -> Paged[ViewT]:
        """The same page with each row seen through ``view``."""
        return Paged([view(row) for row in self.items], self.total, self.limit, self.offset)


def paginate(session: Session, statement: Select[RowT], window: PageWindow) -> Paged[RowT]:
    """The window's rows of ``statement`` (already ordered) and the count of all its rows,
    counted without the ordering so that it stays one cheap aggregate."""
    counted: Select[Any] = statement.order_by(None)
    total = session.scalar(select(func.count()).select_from(counted.subquery())) or 0
    rows = session.scalars(statement.limit(window.limit).offset(window.offset)).unique().all()
    return Paged(items=rows, total=total, limit=window.limit, offset=window.offset)
