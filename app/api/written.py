"""The JSON body of an answer the services keep, written once and kept beside it.

A service hands out the same answer object again for as long as it keeps it (a stored
match's prediction, for the prediction service's answer time). Writing it through its
response model, which FastAPI would do for every request, costs more than the rest of such a
request; so the body written the first time is kept, keyed by the answer object itself
(weakly: it goes when the service lets the answer go, and a new answer, after a new quote,
gets a body of its own). The body is the response model's serialisation, byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar
from weakref import WeakKeyDictionary

from fastapi import Response

from app.api.deps import JSON_MEDIA_TYPE

AnswerT = TypeVar("AnswerT")


class WrittenBodies(Generic[AnswerT]):
    """The bodies ``write`` made of answers still alive, by answer object (answers must be
    weakly referable, never changed once made and compared by identity). Used on the event
    loop only, so it needs no lock."""

    def __init__(self, write: Callable[[AnswerT], bytes]) -> None:
        self._write = write
        self._bodies: WeakKeyDictionary[AnswerT, bytes] = WeakKeyDictionary()

    def body(self, answer: AnswerT) -> bytes:
        body = self._bodies.get(answer)
        if body is None:
            body = self._bodies[answer] = self._write(answer)
        return body

    def response(self, answer: AnswerT) -> Response:
        """The answer's body as a JSON response: FastAPI sends it as it is."""
        return Response(self.body(answer), media_type=JSON_MEDIA_TYPE)
