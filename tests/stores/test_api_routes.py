"""The routes of accounts, stores and invoices as ViewSets on routers: each path answers the
methods it always did, and any other with the 405 envelope and an honest `Allow`."""

import pytest

pytestmark = pytest.mark.django_db

ROUTES = [
    ("/api/v2/me", "GET, HEAD"),
    ("/api/v2/permissions", "GET, HEAD"),
    ("/api/v2/stores", "GET, POST, HEAD"),
    ("/api/v2/stores/{store}", "GET, HEAD"),
    ("/api/v1/invoices", "GET, HEAD"),
    ("/api/v2/invoices", "GET, HEAD"),
]
METHODS = ["get", "post", "put", "patch", "delete", "options"]


@pytest.mark.parametrize(("path", "allow"), ROUTES)
@pytest.mark.parametrize("method", METHODS)
def test_methods_not_served_answer_405_with_allow(path, allow, method, store, auth_client):
    path = path.format(store=store.id)
    response = auth_client.generic(method.upper(), path, "{}", content_type="application/json")
    if method.upper() in allow.split(", "):
        assert response.status_code != 405
        return
    assert response.status_code == 405
    body = response.json()
    assert (body["type"], body["code"], body["status"]) == (
        "invalid_request_error",
        "method_not_allowed",
        405,
    )
    assert response["Allow"] == allow


@pytest.mark.parametrize(("path", "_allow"), ROUTES)
def test_head_answers_like_get_without_a_body(path, _allow, store, auth_client):
    path = path.format(store=store.id)
    response = auth_client.head(path)
    assert response.status_code == 200
    assert response.content == b""


@pytest.mark.parametrize("path", ["/api/v2/stores/", "/api/v2/me/", "/api/v2/invoices/"])
def test_trailing_slashes_are_not_routes(path, auth_client):
    response = auth_client.get(path)
    assert response.status_code == 404
    assert response.json()["code"] == "resource_not_found"
