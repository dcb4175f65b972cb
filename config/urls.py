from django.contrib import admin
from django.urls import include, path, re_path
from django.views.generic import TemplateView
from drf_spectacular.views import SpectacularRedocView

from core.api import views as api_views
from core.api.schema_view import CachedSchemaView
from core.operations.metrics.views import metrics

admin.site.site_header = "Storefront administration"
admin.site.site_title = "Storefront admin"
admin.site.index_title = "Stores, keys, coupons, events and webhooks"
# "View site" leads to the service's front page, not to a path that may not exist.
admin.site.site_url = "/"

api_v1 = [
    path("", include("coupons.urls")),
    path("", include("orders.urls_v1")),
]

api_v2 = [
    path("", include("accounts.urls")),
    path("", include("stores.urls")),
    path("", include("coupons.urls_v2")),
    path("", include("orders.urls_v2")),
    path("", include("events.urls")),
    path("", include("webhooks.urls")),
    path("", include("oauth_cli.urls_api")),
]

urlpatterns = [
    path("api/v1/", include(api_v1)),
    path("api/v2/", include(api_v2)),
    path("api/schema/", CachedSchemaView.as_view(), name="schema"),
    path("api/docs/", SpectacularRedocView.as_view(url_name="schema"), name="api-docs"),
    # Any other /api/ path: the 404 envelope, also under DEBUG (whose 404 page is HTML).
    re_path(r"^api/", api_views.not_found, name="api-not-found"),
    path("", TemplateView.as_view(template_name="home.html"), name="home"),
    path("docs/errors", api_views.error_docs, name="error-docs"),
    path("healthz", api_views.healthz, name="healthz"),
    path("metrics", metrics, name="metrics"),
    path("readyz", api_views.readyz, name="readyz"),
    path("status", api_views.status, name="status"),
    path("admin/", admin.site.urls),
    path("console/", include("console.urls")),
    path("", include("oauth_cli.urls")),
]

handler400 = "core.api.views.bad_request"
handler403 = "core.api.views.permission_denied"
handler404 = "core.api.views.not_found"
handler500 = "core.api.views.server_error"
