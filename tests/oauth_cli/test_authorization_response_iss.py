"""RFC 9207: the authorization response names its issuer, the one of the discovery document
(needed by `check --deploy`: DOT's W005 stays live), on success and on error alike (the
discovery document says `authorization_response_iss_parameter_supported`)."""

from urllib.parse import urlencode

from tests.oauth_cli.flow import (
    approve,
    authorize_params,
    authorize_url,
    consent,
    query_of,
)


def discovery_issuer(client) -> str:
    return client.get("/.well-known/oauth-authorization-server").json()["issuer"]


def test_the_callback_carries_the_discovery_issuer(client, signed_in):
    issuer = client.get("/.well-known/oauth-authorization-server").json()["issuer"]

    callback = approve(signed_in, authorize_params())

    assert callback["iss"] == issuer
    assert callback["code"]


def test_a_refusal_carries_the_issuer(client, signed_in):
    fields = consent(signed_in, authorize_params())
    body = urlencode({"auth_token": fields["auth_token"], "_token": fields["_token"]})

    response = signed_in.delete(
        "/oauth/authorize", body, content_type="application/x-www-form-urlencoded"
    )

    assert response.status_code == 303
    callback = query_of(response["Location"])
    assert callback["error"] == "access_denied"
    assert callback["iss"] == discovery_issuer(client)


def test_an_invalid_request_sent_back_to_the_client_carries_the_issuer(client, signed_in):
    response = signed_in.get(authorize_url(authorize_params(code_challenge_method="plain")))

    assert response.status_code == 302
    callback = query_of(response["Location"])
    assert callback["error"] == "invalid_request"
    assert callback["iss"] == discovery_issuer(client)
