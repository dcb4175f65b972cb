from django.contrib.auth.views import LogoutView
from django.urls import path

from oauth_cli import schema, schema_browser, schema_cli, views

urlpatterns = [
    path(
        ".well-known/oauth-authorization-server",
        schema.describes(schema_cli.MetadataEndpoint, views.authorization_server_metadata),
        name="oauth-metadata",
    ),
    path(
        "oauth/authorize",
        schema.describes(schema_browser.AuthorizeEndpoint, views.CliAuthorizationView.as_view()),
        name="oauth-authorize",
    ),
    path(
        "oauth/token",
        schema.describes(schema_cli.TokenEndpoint, views.CliTokenView.as_view()),
        name="oauth-token",
    ),
    path(
        "oauth/revoke",
        schema.describes(schema_cli.RevokeEndpoint, views.CliRevokeTokenView.as_view()),
        name="oauth-revoke",
    ),
    path("accounts/login/", views.CliLoginView.as_view(), name="login"),
    path("accounts/logout/", LogoutView.as_view(), name="logout"),
]
