"""A database that goes away while the service runs, and comes back, on either backend.

PostgreSQL is reached through a TCP relay on the loopback that the test closes: the
connections in use are cut and the port refuses new ones, as when the server is down.
SQLite is a file in a folder of its own that the test moves away: a connection opened after
that cannot open the file. (A connection SQLite already holds keeps reading a removed file,
whose data live on while it is open, so the engine's idle connections are closed too: the
database the service reaches from then on is the one that is gone.)
"""

from __future__ import annotations

import socket
import sqlite3
import threading
from contextlib import closing, suppress
from pathlib import Path

from sqlalchemy import Engine
from sqlalchemy.engine import make_url

RELAY_CHUNK_BYTES = 65536


class Relay:
    """Forwards every connection made to ``port`` (on 127.0.0.1) to ``upstream``, until
    :meth:`close` cuts them all and stops listening."""

    def __init__(self, upstream: tuple[str, int], port: int = 0) -> None:
        self.upstream = upstream
        self._listener = socket.create_server(("127.0.0.1", port))
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._closed = False
        threading.Thread(target=self._accept, name="relay", daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            try:
                server = socket.create_connection(self.upstream)
            except OSError:
                client.close()
                continue
            with self._lock:
                if self._closed:
                    client.close()
                    server.close()
                    return
                self._open |= {client, server}
            for source, target in ((client, server), (server, client)):
                threading.Thread(target=_pump, args=(source, target), daemon=True).start()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            cut = list(self._open)
            self._open.clear()
        # A shutdown wakes the thread blocked in accept(); a close alone would not.
        with suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        for connection in cut:
            with suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
            connection.close()


def _pump(source: socket.socket, target: socket.socket) -> None:
    with suppress(OSError):
        while data := source.recv(RELAY_CHUNK_BYTES):
            target.sendall(data)
    with suppress(OSError):
        target.shutdown(socket.SHUT_WR)


class Outage:
    """A database of its own at ``url``, holding what ``source`` holds, that
    :meth:`take_away` makes unreachable."""

    def __init__(self, source: str, directory: Path) -> None:
        source_url = make_url(source)
        self.is_sqlite = source_url.get_backend_name() == "sqlite"
        self._relay: Relay | None = None
        if self.is_sqlite:
            self._folder = directory / "vanishing"
            self._folder.mkdir()
            path = self._folder / "oddsboost.db"
            assert source_url.database
            with (
                closing(sqlite3.connect(source_url.database)) as original,
                closing(sqlite3.connect(path)) as copy,
            ):
                original.backup(copy)
            self.url = f"sqlite:///{path}"
        else:
            self._relay = Relay((source_url.host or "127.0.0.1", source_url.port or 5432))
            relayed = source_url.set(host="127.0.0.1", port=self._relay.port)
            self.url = relayed.render_as_string(hide_password=False)

    def take_away(self, engine: Engine) -> None:
        """The database can no longer be reached through ``engine``."""
        if self._relay is not None:
            self._relay.close()
            return
        self._folder.rename(self._folder.with_name("gone"))
        engine.dispose()

    def bring_back(self) -> None:
        """The database is where it was before :meth:`take_away`, reachable again."""
        if self._relay is not None:
            self._relay = Relay(self._relay.upstream, self._relay.port)
            return
        self._folder.with_name("gone").rename(self._folder)

    def close(self) -> None:
        if self._relay is not None:
            self._relay.close()
