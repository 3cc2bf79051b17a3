"""Admin activation of model versions: rolling back and forward, each activation recorded."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from app.db.orm import ModelActivation
from app.domain.vocabulary import ActivatedBy, Method, Phase
from app.services.model_versions import activate
from tests.helpers import count_rows, error_messages, hand_made_version

SeasonFile = Callable[[str], Path]


# --- model versions ----------------------------------------------------------------------


def test_an_operator_rolls_back_and_forward_and_each_activation_is_recorded(
    client: TestClient, admin_headers: dict[str, str], session: Session
) -> None:
    first, second = hand_made_version(), hand_made_version(weights={"PS": 1.0})
    session.add_all([first, second])
    session.flush()
    activate(session, second, by=ActivatedBy.REFIT)  # as the refit that fitted it would
    back = client.post(
        f"/admin/models/{first.id}/activate",
        json={"reason": "  version 2 trusts a single bookmaker  "},
        headers=admin_headers,
    )
    assert back.status_code == 200, back.text
    body = back.json()
    assert (body["version"]["id"], body["version"]["status"]) == (first.id, "active")
    assert body["warnings"] == []
    activation = body["activation"]
    assert activation["version_id"] == first.id
    assert activation["previous_version_id"] == second.id
    assert (activation["by"], activation["run_id"]) == ("api", None)
    assert activation["reason"] == "version 2 trusts a single bookmaker"
    assert client.get("/models/active").json()["id"] == first.id
    assert client.get(f"/models/{second.id}").json()["status"] == "retired"

    forward = client.post(f"/admin/models/{second.id}/activate", headers=admin_headers)
    assert forward.status_code == 200, forward.text
    assert forward.json()["activation"]["reason"] is None
    again = client.post(f"/admin/models/{second.id}/activate", json={}, headers=admin_headers)
    assert again.status_code == 200
    assert again.json()["activation"] is None  # it was active: nothing happened
    assert again.json()["version"]["status"] == "active"

    history = client.get("/models/activations").json()
    assert history["total"] == count_rows(session, ModelActivation) == 3
    assert [(a["version_id"], a["previous_version_id"], a["by"]) for a in history["items"]] == [
        (second.id, first.id, "api"),
        (first.id, second.id, "api"),
        (second.id, None, "refit"),
    ]
    assert client.get("/models/activations", params={"limit": 1}).json()["items"] == [
        history["items"][0]
    ]


def test_a_version_fitted_otherwise_than_the_settings_is_activated_with_warnings(
    client: TestClient, admin_headers: dict[str, str], session: Session
) -> None:
    closing = hand_made_version(
        phase=Phase.CLOSING, method=Method.SHIN, rejected_reason="not promoted by its refit"
    )
    session.add(closing)
    session.flush()
    assert client.get(f"/models/{closing.id}").json()["status"] == "rejected"
    response = client.post(f"/admin/models/{closing.id}/activate", headers=admin_headers)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["version"]["status"] == "active"
    assert body["version"]["rejected_reason"] == "not promoted by its refit"
    phase_warning, method_warning = body["warnings"]
    assert (
        f"version {closing.id} was fitted on closing quotes while ODDSBOOST_REFIT_PHASE is pre"
        in (phase_warning)
    )
    assert "predictions by match_id read closing quotes" in phase_warning
    assert "will not replace it automatically" in phase_warning
    assert (
        f"version {closing.id} de-margins odds with shin while ODDSBOOST_DEMARGIN_METHOD is "
        in (method_warning)
    )
    # Once another version is activated, the one that served is retired, not rejected.
    other = hand_made_version()
    session.add(other)
    session.flush()
    client.post(f"/admin/models/{other.id}/activate", headers=admin_headers)
    assert client.get(f"/models/{closing.id}").json()["status"] == "retired"


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ({"reason": "   "}, "body.reason: Value error, reason is empty"),
        ({"reason": "x" * 501}, "body.reason: Value error, reason is longer than 500 characters"),
        ({"reason": "a\nb"}, "body.reason: Value error, reason contains control characters"),
        ({"reason": 7}, "body.reason: Input should be a valid string"),
        ({"why": "because"}, "body.why: Extra inputs are not permitted"),
    ],
)
def test_a_bad_activation_reason_is_422_and_changes_nothing(
    client: TestClient,
    admin_headers: dict[str, str],
    session: Session,
    body: dict[str, Any],
    where: str,
) -> None:
    version = hand_made_version()
    session.add(version)
    session.flush()
    response = client.post(f"/admin/models/{version.id}/activate", json=body, headers=admin_headers)
    assert response.status_code == 422
    assert error_messages(response.json()) == [where]
    assert count_rows(session, ModelActivation) == 0
    assert client.get("/models/active").status_code == 404


def test_activating_an_unknown_version_is_404_and_needs_the_key(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    unknown = client.post("/admin/models/999/activate", headers=admin_headers)
    assert unknown.status_code == 404
    assert error_messages(unknown.json()) == ["no model version 999"]
    assert client.post("/admin/models/0/activate", headers=admin_headers).status_code == 422
    assert client.post("/admin/models/1/activate").status_code == 401
    assert client.get("/models/activations").json()["total"] == 0
