"""app/http_protocol.py subclasses uvicorn's httptools protocol, which is not public API: what
it overrides and what it reads of uvicorn must still be there, as it was, in the uvicorn
this project pins. When uvicorn changes any of it, this fails and names what changed."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterator
from typing import Any
from unittest.mock import Mock

import pytest
from uvicorn.config import Config
from uvicorn.protocols.http import httptools_impl
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from app.http_protocol import LimitedHttpProtocol

# Each method the protocol overrides, with the parameters uvicorn gives it.
OVERRIDDEN: dict[str, list[str]] = {
    "__init__": ["self", "config", "server_state", "app_state", "_loop"],
    "connection_made": ["self", "transport"],
    "connection_lost": ["self", "exc"],
    "data_received": ["self", "data"],
    "send_400_response": ["self", "msg"],
    "handle_websocket_upgrade": ["self"],
    "on_message_begin": ["self"],
    "on_url": ["self", "url"],
    "on_header": ["self", "name", "value"],
    "on_headers_complete": ["self"],
    "on_body": ["self", "body"],
    "on_message_complete": ["self"],
}
# What the protocol reads of uvicorn's protocol once a request's headers are parsed, and of
# the request's cycle.
PROTOCOL_ATTRIBUTES = ("loop", "server_state", "transport", "flow", "client", "cycle", "url")
# What the protocol adds (none of them uvicorn's).
OWN_ATTRIBUTES = (
    "settings",
    "url",
    "_deadline",
    "_reading_headers",
    "_request_started",
    "_headers_ended",
    "_header_bytes",
    "_header_size",
    "_closed_here",
)
CYCLE_ATTRIBUTES = (
    "waiting_for_100_continue",
    "response_started",
    "response_complete",
    "disconnected",
    "message_event",
)


def test_every_overridden_method_is_uvicorn_s_with_the_same_parameters() -> None:
    methods = {name for name, value in vars(LimitedHttpProtocol).items() if callable(value)}
    # Each of the protocol's public methods is one of uvicorn's, listed above; its own
    # (private) ones override none of uvicorn's.
    assert {name for name in methods if not name.startswith("_")} | {"__init__"} == set(OVERRIDDEN)
    own = {name for name in methods if name.startswith("_") and not name.startswith("__")}
    assert own.isdisjoint(dir(HttpToolsProtocol)), own & set(dir(HttpToolsProtocol))
    for name, parameters in OVERRIDDEN.items():
        assert name in vars(HttpToolsProtocol), f"uvicorn's protocol has no {name}"
        signature = inspect.signature(getattr(HttpToolsProtocol, name))
        assert list(signature.parameters) == parameters, f"{name}{signature}"


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


async def _app(_scope: Any, _receive: Any, _send: Any) -> None:
    return None


def test_the_protocol_s_own_attributes_are_not_uvicorn_s(loop: asyncio.AbstractEventLoop) -> None:
    config, state = Config(app=_app), ServerState()
    uvicorn_s = vars(HttpToolsProtocol(config, state, {}, loop))
    added = set(vars(LimitedHttpProtocol(config, state, {}, loop))) - set(uvicorn_s)
    assert added == set(OWN_ATTRIBUTES)
    # "url" is uvicorn's too, set when a request begins: the protocol sets it earlier.
    assert "url" not in uvicorn_s


def test_what_the_protocol_reads_of_uvicorn_is_there(loop: asyncio.AbstractEventLoop) -> None:
    protocol = HttpToolsProtocol(Config(app=_app), ServerState(), {}, loop)
    transport = Mock(spec=asyncio.Transport)
    transport.get_extra_info.return_value = None
    protocol.connection_made(transport)
    protocol.data_received(b"POST /predict HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n")
    for name in PROTOCOL_ATTRIBUTES:
        assert hasattr(protocol, name), f"uvicorn's protocol has no {name}"
    for name in CYCLE_ATTRIBUTES:
        assert hasattr(protocol.cycle, name), f"uvicorn's request cycle has no {name}"
    assert hasattr(protocol.flow, "read_paused")
    assert isinstance(protocol.server_state.default_headers, list)
    assert httptools_impl.STATUS_LINE[408].startswith(b"HTTP/1.1 408 ")
    protocol.connection_lost(None)
    for task in asyncio.all_tasks(loop):
        task.cancel()
    loop.run_until_complete(asyncio.sleep(0))
