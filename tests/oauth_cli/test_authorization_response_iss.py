"""RFC 9207: the authorization response names its issuer, the one of the discovery document
(needed by `check --deploy`: DOT's W005 stays live)."""

from tests.oauth_cli.flow import approve, authorize_params


def test_the_callback_carries_the_discovery_issuer(client, signed_in):
    issuer = client.get("/.well-known/oauth-authorization-server").json()["issuer"]

    callback = approve(signed_in, authorize_params())

    assert callback["iss"] == issuer
    assert callback["code"]
