from django.urls import path

from oauth_cli import api_views

urlpatterns = [
    path("oauth/installation", api_views.InstallationView.as_view(), name="oauth-installation"),
]
