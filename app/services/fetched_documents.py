"""What the feeds remember of the documents they fetch (``fetched_documents``): when each
was last fetched, when what it answered last changed, and its validators."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import Select, select
from sqlalchemy.orm import Session

from app.db.orm import FetchedDocument


def document_row(url: str) -> Select[FetchedDocument]:
    """The row of ``url``, selected."""
    return select(FetchedDocument).where(FetchedDocument.url == url)


def remember_fetch(
    session: Session,
    url: str,
    *,
    at: dt.datetime,
    changed: bool,
    final_url: str | None = None,
    etag: str | None = None,
    last_modified: str | None = None,
) -> None:
    """That ``url`` was fetched at ``at`` (in the caller's transaction). ``changed``: what it
    answered differed from what was stored before, which moves ``changed_at`` and replaces
    the validators; a document first seen counts as changed then."""
    row = session.scalar(document_row(url))
    if row is None:
        row = FetchedDocument(url=url, changed_at=at)
        session.add(row)
    row.checked_at = at
    if final_url is not None:
        row.final_url = final_url
    if changed:
        row.changed_at = at
        row.etag = etag
        row.last_modified = last_modified
