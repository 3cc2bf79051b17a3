"""The bettor's book: the bets the user placed, recorded, listed, corrected and deleted (each
change kept in their audit trail), settled when their results arrive. Guarded like the admin
API."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Path, Response, status
from fastapi.exceptions import RequestValidationError

from app.api.deps import (
    JSON_BODY,
    ReceivedAtDep,
    SessionDep,
    SettingsDep,
    WriteSessionDep,
    page_window,
    require_admin,
)
from app.api.errors import invalid
from app.api.query_params import BetFilterDep
from app.api.schemas.bets import BetChangeOut, BetDetailOut, BetIn, BetOut, BetPatch
from app.api.schemas.common import MAX_ID, Page
from app.api.schemas.problems import (
    ADMIN,
    INVALID,
    NOT_JSON,
    TOO_LARGE,
    FieldError,
    problem_responses,
)
from app.domain.bets import BetChannel
from app.services import bets
from app.services.flags import FlagTerms
from app.services.pagination import PageWindow

router = APIRouter(tags=["bets"], dependencies=[Depends(require_admin)])

BetIdPath = Annotated[int, Path(ge=1, le=MAX_ID, description="The bet's id.", examples=[3])]
NOT_FOUND = {404: "No bet with that id (never stored, or deleted)."}
WRITE_ERRORS = {
    413: TOO_LARGE,
    415: NOT_JSON,
    422: INVALID + " A match, flag or price the book cannot take is named the same way "
    "(`body.match_id`, `body.flag_id`, `body.price`); nothing was written.",
}


def _refused(error: bets.BetDraftError) -> RequestValidationError:
    """The drafts' problems as the body fields they are about."""
    return invalid(
        FieldError(loc=["body", problem.field], msg=problem.message, type="value_error")
        for problem in error.problems
    )


@router.post(
    "/bets",
    status_code=status.HTTP_201_CREATED,
    response_model=BetDetailOut,
    dependencies=[JSON_BODY],
    responses=problem_responses(ADMIN, WRITE_ERRORS),
)
def post_bet(
    bet: BetIn,
    session: WriteSessionDep,
    settings: SettingsDep,
    received: ReceivedAtDep,
    response: Response,
) -> BetDetailOut:
    """Record a bet you placed (its Location is the bet's URL). A bet of a match whose
    result is already stored is settled at once: its return, profit and CLV against
    Pinnacle's close."""
    window = FlagTerms.of(settings).closing_window
    try:
        recorded = bets.add_bet(session, bet.draft(received), BetChannel.API, received, window)
    except bets.BetDraftError as error:
        raise _refused(error) from None
    response.headers["Location"] = f"/bets/{recorded.id}"
    return BetDetailOut.model_validate(recorded)


@router.get(
    "/bets",
    response_model=Page[BetOut],
    responses=problem_responses(ADMIN, {422: INVALID}),
)
def list_bets(
    session: SessionDep,
    page: Annotated[PageWindow, Depends(page_window(50))],
    filters: BetFilterDep,
) -> Page[BetOut]:
    """The book: your bets, latest placed first, with how each fared."""
    return Page[BetOut].of(bets.list_bets(session, filters, page))


@router.get(
    "/bets/{bet_id:int}",
    response_model=BetDetailOut,
    responses=problem_responses(ADMIN, NOT_FOUND, {422: INVALID}),
)
def get_bet(bet_id: BetIdPath, session: SessionDep) -> BetDetailOut:
    """A bet with its audit trail: every change, oldest first, with its fields before and
    after."""
    try:
        return BetDetailOut.model_validate(bets.bet_with_trail(session, bet_id))
    except bets.BetNotFoundError as error:
        raise HTTPException(status.HTTP_404_NOT_FOUND, str(error)) from None


@router.patch(
    "/bets/{bet_id:int}",
    response_model=BetDetailOut,
    dependencies=[JSON_BODY],
    responses=problem_responses(ADMIN, NOT_FOUND, WRITE_ERRORS),
)
def patch_bet(
    bet_id: BetIdPath,
    patch: BetPatch,
    session: WriteSessionDep,
    settings: SettingsDep,
    received: ReceivedAtDep,
) -> BetDetailOut:
    """Correct a bet: the fields given replace its own, checked as a new bet's are; the
    change is appended to its trail with the fields before and after (never rewritten
    silently), and the bet is settled again if its match has a result. `status: "void"`
    voids it (the stake comes back), `"open"` undoes a void."""
    window = FlagTerms.of(settings).closing_window
    try:
        corrected = bets.corrected_bet(
            session, bet_id, patch.correction(), BetChannel.API, received, window
        )
    except bets.BetNotFoundError as error:
        raise HTTPException(status.HTTP_404_NOT_FOUND, str(error)) from None
    except bets.BetDraftError as error:
        raise _refused(error) from None
    return BetDetailOut.model_validate(corrected)


@router.delete(
    "/bets/{bet_id:int}",
    status_code=status.HTTP_204_NO_CONTENT,
    response_class=Response,
    responses=problem_responses(ADMIN, NOT_FOUND, {422: INVALID}),
)
def delete_bet(bet_id: BetIdPath, session: WriteSessionDep, received: ReceivedAtDep) -> Response:
    """Delete a bet (a bet recorded by mistake). Its trail stays, ending with a `deleted`
    change holding what it was: GET /bets/{id} then answers 404."""
    try:
        bets.delete_bet(session, bet_id, BetChannel.API, received)
    except bets.BetNotFoundError as error:
        raise HTTPException(status.HTTP_404_NOT_FOUND, str(error)) from None
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get(
    "/bets/{bet_id:int}/changes",
    response_model=list[BetChangeOut],
    responses=problem_responses(
        ADMIN, {404: "No change of a bet with that id: it was never stored."}, {422: INVALID}
    ),
)
def get_bet_changes(bet_id: BetIdPath, session: SessionDep) -> list[BetChangeOut]:
    """A bet's audit trail, oldest change first; a deleted bet's too (ending with its
    `deleted` change)."""
    trail = bets.trail_of(session, bet_id)
    if not trail:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"bet {bet_id} was never stored")
    return [BetChangeOut.model_validate(change) for change in trail]
