"""The API's content negotiation (config/api/negotiation.py) answers as DRF's own does."""

import pytest
from django.http import Http404
from drf_spectacular.views import SpectacularAPIView
from rest_framework import exceptions
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from config.api.negotiation import ApiContentNegotiation
from tests.api.envelope import assert_envelope

pytestmark = pytest.mark.django_db

ACCEPT_HEADERS = [
    None,
    "*/*",
    "application/json",
    "application/json; indent=4",
    "application/*",
    "text/html",
    "text/html, */*;q=0.8",
    "application/vnd.oai.openapi",
    "application/yaml",
    "",
]
QUERIES = ["", "?format=json", "?format=openapi", "?format=", "?limit=15"]
RENDERER_LISTS = {
    "api": [JSONRenderer],
    "schema": SpectacularAPIView.renderer_classes,
}


def negotiated(negotiation, accept, query, renderer_classes, format_suffix):
    headers = {"HTTP_ACCEPT": accept} if accept is not None else {}
    request = Request(APIRequestFactory().get(f"/api/v2/me{query}", **headers))
    renderers = [renderer_class() for renderer_class in renderer_classes]
    try:
        renderer, media_type = negotiation.select_renderer(request, renderers, format_suffix)
    except (exceptions.NotAcceptable, Http404) as error:
        return type(error).__name__
    return type(renderer), media_type


@pytest.mark.parametrize("renderers", RENDERER_LISTS)
@pytest.mark.parametrize("format_suffix", [None, "json"])
@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("accept", ACCEPT_HEADERS)
def test_the_same_renderer_and_media_type_as_drf(accept, query, format_suffix, renderers):
    classes = RENDERER_LISTS[renderers]
    ours = negotiated(ApiContentNegotiation(), accept, query, classes, format_suffix)
    drf = negotiated(DefaultContentNegotiation(), accept, query, classes, format_suffix)
    assert ours == drf


@pytest.mark.parametrize("accept", [None, "*/*", "application/json"])
def test_an_api_request_without_a_preference_is_answered_in_json(accept, auth_client):
    headers = {"HTTP_ACCEPT": accept} if accept is not None else {}
    response = auth_client.get("/api/v2/me", **headers)
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response.json()["data"]


def test_json_with_parameters_is_still_negotiated_by_drf(auth_client):
    response = auth_client.get("/api/v2/me", HTTP_ACCEPT="application/json; indent=2")
    assert response.status_code == 200
    assert response.content.startswith(b'{\n  "')


def test_an_unacceptable_type_is_still_a_406(auth_client):
    response = auth_client.get("/api/v2/me", HTTP_ACCEPT="text/html")
    assert_envelope(response, 406, "invalid_request_error", "not_acceptable")
