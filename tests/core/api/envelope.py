"""What every error answer looks like: the JSON envelope (spec "Errors") and, outside the API,
the HTML error page."""

import re

ENVELOPE_KEYS = {"type", "code", "message", "status", "param", "request_id", "docs_url"}


def assert_envelope(response, status, type_, code, param=None):
    assert response.status_code == status
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    # `errors` only on validation errors (spec "Errors"), and always there.
    assert set(body) == (ENVELOPE_KEYS | {"errors"} if status == 422 else ENVELOPE_KEYS)
    if status == 422:
        assert body["errors"] and all(
            isinstance(messages, list) and messages for messages in body["errors"].values()
        )
    assert body["type"] == type_
    assert body["code"] == code
    assert body["status"] == status
    assert body["param"] == param
    assert isinstance(body["message"], str) and body["message"]
    assert re.fullmatch(r"req_[A-Za-z0-9_-]{20,}", body["request_id"])
    assert body["request_id"] == response["X-Request-Id"]
    assert body["docs_url"] == f"http://testserver/docs/errors#{code}"
    return body


def assert_html_error_page(response, status):
    assert response.status_code == status
    assert response["Content-Type"].startswith("text/html")
    html = response.content.decode()
    assert html.lstrip().lower().startswith("<!doctype html>")
    assert f"({status})" in html
    # the reference a user quotes to support, and no internals
    assert response["X-Request-Id"] in html
    assert "secret internal detail" not in html
    assert "Traceback" not in html
    return html
