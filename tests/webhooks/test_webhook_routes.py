"""The routes of the webhooks ViewSets: each path serves exactly the methods it served before
the router, and any other answers the envelope's 405 with an honest `Allow`."""

import pytest

# Fixed: a test id holds it, and pytest-xdist needs the same ids in every worker.
DELIVERY = "5b0f2c1e-8a4d-4c6b-9e2f-3d7a1b6c9e80"

ROUTES = [
    ("/api/v2/webhook-destination", "GET, PUT, DELETE, HEAD"),
    ("/api/v2/webhook-destination/rotate-secret", "POST"),
    ("/api/v2/webhook-event-types", "GET, HEAD"),
    ("/api/v2/webhook-deliveries", "GET, HEAD"),
    (f"/api/v2/webhook-deliveries/{DELIVERY}", "GET, HEAD"),
    (f"/api/v2/webhook-deliveries/{DELIVERY}/replay", "POST"),
    # any id reaches the view (whose answer is a 404), not only a well-formed one
    ("/api/v2/webhook-deliveries/not.a.uuid", "GET, HEAD"),
]
METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"]


@pytest.mark.parametrize(("path", "allow"), ROUTES)
def test_methods_not_served_are_405_with_allow(auth_client, path, allow):
    served = {m.strip() for m in allow.split(",")}
    for method in sorted(set(METHODS) - served):
        response = auth_client.generic(method, path)

        assert response.status_code == 405, (method, path)
        assert response.json()["code"] == "method_not_allowed"
        assert response["Allow"] == allow, (method, path)


@pytest.mark.parametrize(
    "path",
    [
        "/api/v2/webhook-destination/",
        "/api/v2/webhook-destination/other",
        "/api/v2/webhook-event-types/order.completed",
        "/api/v2/webhook-deliveries/",
        f"/api/v2/webhook-deliveries/{DELIVERY}/replay/",
    ],
)
def test_other_paths_are_the_404_envelope(auth_client, path):
    response = auth_client.get(path)

    assert response.status_code == 404
    assert response.json()["code"] == "resource_not_found"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/api/v2/webhook-deliveries/not.a.uuid"),
        ("POST", "/api/v2/webhook-deliveries/x.y/replay"),
    ],
)
def test_a_malformed_delivery_id_is_authenticated_first(db, client, method, path):
    # the route takes any id, so a request without credentials is a 401, as on a real id
    response = client.generic(method, path)

    assert response.status_code == 401
