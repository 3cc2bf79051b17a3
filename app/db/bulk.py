"""Many new rows written in one go: PostgreSQL's COPY, or an executemany elsewhere."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlalchemy import Connection, Table, insert
from sqlalchemy.exc import DBAPIError

Row = Mapping[str, object]


def insert_rows(connection: Connection, table: Table, rows: Sequence[Row]) -> None:
    """Insert ``rows`` (each with the same columns) in the connection's transaction; on
    PostgreSQL through COPY, several times faster, failing with the error an executemany
    would raise."""
    if not rows:
        return
    if connection.dialect.name != "postgresql":
        connection.execute(insert(table), list(rows))
        return
    names = list(rows[0])
    columns = [table.c[name] for name in names]
    processors = [column.type.bind_processor(connection.dialect) for column in columns]
    fields = list(zip(names, processors, strict=True))
    preparer = connection.dialect.identifier_preparer
    statement = (
        f"COPY {preparer.format_table(table)} "
        f"({', '.join(preparer.quote(column.name) for column in columns)}) FROM STDIN"
    )
    driver_connection = connection.connection.driver_connection
    assert driver_connection is not None
    driver_error = connection.dialect.loaded_dbapi.Error
    try:
        with driver_connection.cursor() as cursor, cursor.copy(statement) as copy:
            for row in rows:
                copy.write_row(
                    [
                        row[name] if process is None else process(row[name])
                        for name, process in fields
                    ]
                )
    except driver_error as error:
        # COPY goes around SQLAlchemy, which wraps a statement's driver errors.
        wrapped = DBAPIError.instance(
            statement, None, error, driver_error, dialect=connection.dialect
        )
        raise wrapped from error
