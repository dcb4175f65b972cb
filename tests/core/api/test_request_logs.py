"""The request log: one line per request, through the formatters of
settings.LOGGING, with the request's id, route and credential and nothing secret."""

import io
import json
import logging
import logging.config
import re

import pytest
from django.conf import settings
from django.test import Client

from core.api.middleware import RequestIdLogFilter
from tests.settings_helpers import production_environment, run_python, settings_of

pytestmark = pytest.mark.django_db

COUPON = {"code": "WELCOME", "type": "PERCENTAGE", "discount": 15, "store_wide": True}


class LogCapture:
    """Every record of every logger, formatted as the console handler of LOGGING formats it
    (same formatter config, same request-id filter)."""

    def __init__(self, log_format: str):
        self.stream = io.StringIO()
        self.handler = logging.StreamHandler(self.stream)
        formatter_config = dict(settings.LOGGING["formatters"][log_format])
        configurator = logging.config.DictConfigurator(settings.LOGGING)
        self.handler.setFormatter(configurator.configure_formatter(formatter_config))
        self.handler.addFilter(RequestIdLogFilter())

    def __enter__(self):
        self.root = logging.getLogger()
        self.level = self.root.level
        self.root.addHandler(self.handler)
        # DEBUG: a secret must not be in any line, whatever level an operator chooses.
        self.root.setLevel(logging.DEBUG)
        return self

    def __exit__(self, *exc):
        self.root.removeHandler(self.handler)
        self.root.setLevel(self.level)

    def text(self) -> str:
        return self.stream.getvalue()

    def lines(self) -> list[str]:
        return self.text().splitlines()

    def json_lines(self) -> list[dict]:
        # One JSON object per line, tracebacks included.
        return [json.loads(line) for line in self.lines()]


def request_lines(records: list[dict], request_id: str) -> list[dict]:
    return [
        r for r in records if r["logger"] == "storefront.requests" and r["request_id"] == request_id
    ]


def test_the_request_line_in_json(user, store, api_key, auth_client):
    with LogCapture("json") as logs:
        response = auth_client.get("/api/v1/coupons", HTTP_X_STORE=store.slug)

    assert response.status_code == 200
    [line] = request_lines(logs.json_lines(), response["X-Request-Id"])
    assert line["level"] == "INFO"
    assert line["method"] == "GET"
    assert line["route"] == "/api/v1/coupons"
    assert line["status"] == 200
    assert isinstance(line["duration_ms"], float) and line["duration_ms"] >= 0
    assert line["credential_kind"] == "api_key"
    assert line["credential_id"] == user.api_keys.get().pk
    assert line["store_id"] == store.pk
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}", line["time"])


def test_the_route_names_the_pattern_not_the_path(store, auth_client):
    created = auth_client.post("/api/v1/coupons", COUPON, HTTP_X_STORE=store.slug).json()

    with LogCapture("json") as logs:
        response = auth_client.get(f"/api/v1/coupons/{created['id']}?include=x")

    [line] = request_lines(logs.json_lines(), response["X-Request-Id"])
    assert line["route"] == "/api/v1/coupons/<id>"
    assert f"coupons/{created['id']}" not in logs.text()
    assert "include" not in logs.text()


def test_an_unauthenticated_request_has_no_credential_or_store(api_client):
    with LogCapture("json") as logs:
        response = api_client.get("/api/v1/coupons")

    assert response.status_code == 401
    [line] = request_lines(logs.json_lines(), response["X-Request-Id"])
    assert (line["status"], line["credential_kind"], line["credential_id"], line["store_id"]) == (
        401,
        None,
        None,
        None,
    )


@pytest.mark.urls("tests.core.api.urls")
def test_no_secret_is_in_any_log_line_of_a_request(store, api_key):
    """API key, bearer tokens, bodies, query values and passwords: not in any line of any
    logger, including the ERROR line (with its traceback) of an unexpected exception."""
    unknown_token = "sf_unknown_bearer_token_that_must_not_be_logged"
    body_secret = "BODYSECRET42"
    query_secret = "querysecret-77"
    password = "correct horse battery staple 9"
    client = Client(raise_request_exception=False)
    with LogCapture("json") as logs:
        responses = [
            client.post(
                "/api/v1/coupons",
                {**COUPON, "code": body_secret},
                content_type="application/json",
                HTTP_AUTHORIZATION=f"Bearer {api_key}",
                HTTP_X_STORE=store.slug,
            ),
            client.get(
                f"/api/v1/coupons?token={query_secret}", HTTP_AUTHORIZATION=f"Bearer {api_key}"
            ),
            client.get("/api/v1/coupons", HTTP_AUTHORIZATION=f"Bearer {unknown_token}"),
            client.get("/api/v2/test-explode", HTTP_AUTHORIZATION=f"Bearer {api_key}"),
            client.post("/accounts/login/", {"username": "someone", "password": password}),
        ]
    assert [r.status_code for r in responses[:4]] == [201, 200, 401, 500]
    records = logs.json_lines()
    # every request has its line, and the 500 its ERROR line with the traceback
    for response in responses:
        assert len(request_lines(records, response["X-Request-Id"])) == 1
    assert any(r["level"] == "ERROR" and "RuntimeError" in r.get("exc_info", "") for r in records)
    text = logs.text()
    for secret in (api_key, unknown_token, body_secret, query_secret, password):
        assert secret not in text
    assert "Bearer" not in text and "HTTP_AUTHORIZATION" not in text


def test_a_client_chosen_request_id_is_not_used(auth_client):
    """An incoming X-Request-Id is not trusted (core.api.middleware.RequestIdMiddleware)."""
    chosen = "req_chosen_by_the_client_000000"

    with LogCapture("json") as logs:
        response = auth_client.get("/api/v2/stores/999999", HTTP_X_REQUEST_ID=chosen)

    body = response.json()
    assert response["X-Request-Id"] == body["request_id"] != chosen
    assert re.fullmatch(r"req_[A-Za-z0-9_-]{24}", body["request_id"])
    assert chosen not in logs.text()
    assert len(request_lines(logs.json_lines(), body["request_id"])) == 1


def test_the_plain_format_is_one_readable_line(store, auth_client):
    with LogCapture("plain") as logs:
        response = auth_client.get("/api/v1/coupons", HTTP_X_STORE=store.slug)

    [line] = [line for line in logs.lines() if " storefront.requests " in line]
    request_id = re.escape(response["X-Request-Id"])
    assert re.fullmatch(
        r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} INFO storefront.requests "
        rf"\[{request_id}\] GET /api/v1/coupons 200 \d+\.\dms",
        line,
    )


def test_a_line_outside_any_request_has_a_dash_for_request_id():
    with LogCapture("plain") as logs:
        logging.getLogger("storefront.test").warning("outside")

    assert logs.lines()[0].endswith("WARNING storefront.test [-] outside")


# --- which format, where ------------------------------------------------------------------


def test_plain_is_the_default_outside_production():
    with LogCapture(settings.LOGGING["handlers"]["console"]["formatter"]) as logs:
        logging.getLogger("storefront.test").warning("outside")

    assert re.fullmatch(r"\S+ \S+ WARNING storefront\.test \[-\] outside", logs.lines()[0])


def test_json_is_the_production_default_and_log_format_switches_it():
    def console_formatter(**env):
        logging_settings = settings_of(production_environment(**env), "LOGGING")["LOGGING"]
        return logging_settings["handlers"]["console"]["formatter"]

    assert console_formatter(LOG_FORMAT=None) == "json"
    assert console_formatter(LOG_FORMAT="plain") == "plain"
    dev = {**production_environment(LOG_FORMAT="json")}
    dev["DJANGO_SETTINGS_MODULE"] = "config.settings.dev"
    assert settings_of(dev, "LOG_FORMAT") == {"LOG_FORMAT": "json"}


def test_an_unknown_log_format_stops_the_process():
    result = run_python(
        "import django; django.setup()", env=production_environment(LOG_FORMAT="xml")
    )

    assert result.returncode != 0
    assert "LOG_FORMAT must be one of" in result.stderr


def test_a_path_that_matches_no_route_is_logged_with_its_path(api_client):
    with LogCapture("plain") as logs:
        response = api_client.get("/api/v1/copons/7?token=secret-value")

    assert response.status_code == 404
    [line] = [line for line in logs.lines() if " storefront.requests " in line]
    assert line.endswith("] GET /api/v1/copons/7 404 " + line.rsplit(" ", 1)[1])
    assert "secret-value" not in logs.text()


def test_a_path_with_a_line_break_stays_one_line(api_client):
    with LogCapture("plain") as logs:
        api_client.get("/nothing%0Aforged INFO storefront.requests line")

    [line] = [line for line in logs.lines() if " storefront.requests " in line]
    assert "/nothing%0Aforged%20INFO" in line


def test_runserver_s_own_request_line_is_not_logged():
    # Its 2xx-4xx lines are INFO and WARNING: the request line is storefront.requests' alone.
    assert not logging.getLogger("django.server").isEnabledFor(logging.WARNING)
    assert logging.getLogger("django.server").isEnabledFor(logging.ERROR)
