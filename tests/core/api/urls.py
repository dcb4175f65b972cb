"""Test-only URLconf: the real routes plus tiny views that exercise the shared conventions
(`@pytest.mark.urls("tests.core.api.urls")`)."""

from contextlib import nullcontext

from django.core.exceptions import BadRequest, PermissionDenied
from django.db import connection, transaction
from django.http import Http404, HttpResponse
from django.urls import path
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from config.urls import handler400, handler403, handler404, handler500  # noqa: F401
from config.urls import urlpatterns as real_urlpatterns
from stores.access import StorePermission


class CouponAreaView(APIView):
    """A minimal store-scoped view of the `coupon` area: answers the resolved store."""

    permission_classes = [StorePermission]
    permission_area = "coupon"

    def get(self, request):
        return Response({"data": {"store": request.store.slug}})

    def post(self, request):
        return Response({"data": {"store": request.store.slug}}, status=201)


class EchoApiView(APIView):
    """Answers the JSON body it parsed; needs no credential (and so no database)."""

    authentication_classes = []
    permission_classes = [AllowAny]

    def post(self, request):
        return Response({"data": request.data})


class ExplodingApiView(APIView):
    def get(self, request):
        raise RuntimeError("secret internal detail")


class DatabaseApiView(APIView):
    """Runs one statement, with no credential: `?sleep=<seconds>` sleeps in PostgreSQL (inside
    a transaction with `&atomic=1`); `?ended=<sqlstate>` is PostgreSQL ending the transaction
    (deadlock_detected 40P01, serialization_failure 40001) after a write; without either,
    answers the session's statement_timeout."""

    authentication_classes = []
    permission_classes = [AllowAny]

    def get(self, request):
        with connection.cursor() as cursor:
            if "ended" in request.query_params:
                with transaction.atomic():
                    cursor.execute("CREATE TEMPORARY TABLE written (id int)")
                    sqlstate = {"40P01": "40P01", "40001": "40001"}[request.query_params["ended"]]
                    cursor.execute(
                        f"DO $$ BEGIN RAISE EXCEPTION 'ended' USING ERRCODE = '{sqlstate}'; END $$"
                    )
            if "sleep" not in request.query_params:
                cursor.execute("SHOW statement_timeout")
                return Response({"data": {"statement_timeout": cursor.fetchone()[0]}})
            with transaction.atomic() if "atomic" in request.query_params else nullcontext():
                cursor.execute("SELECT pg_sleep(%s)", [float(request.query_params["sleep"])])
        return Response({"data": {"slept": True}})


def database_page_view(request):
    """A plain Django view (no DRF) whose transaction PostgreSQL ends (`?ended=<sqlstate>`) or
    whose statement runs past the timeout (`?sleep=<seconds>`)."""
    with connection.cursor() as cursor:
        if "ended" in request.GET:
            sqlstate = {"40P01": "40P01", "40001": "40001"}[request.GET["ended"]]
            cursor.execute(
                f"DO $$ BEGIN RAISE EXCEPTION 'ended' USING ERRCODE = '{sqlstate}'; END $$"
            )
        cursor.execute("SELECT pg_sleep(%s)", [float(request.GET.get("sleep", 0))])
    return HttpResponse("done")


def exploding_django_view(request):
    raise RuntimeError("secret internal detail")


RAISED = {
    "bad-request": BadRequest("secret internal detail"),
    "permission-denied": PermissionDenied("secret internal detail"),
    "not-found": Http404("secret internal detail"),
    "server-error": RuntimeError("secret internal detail"),
}


def raising_django_view(request, kind):
    """A plain Django view raising what Django turns into handler400/403/404/500."""
    raise RAISED[kind]


urlpatterns = [
    path("api/v2/test-coupon-area", CouponAreaView.as_view()),
    path("api/v2/test-echo", EchoApiView.as_view()),
    path("api/v2/test-explode", ExplodingApiView.as_view()),
    path("api/v2/test-database", DatabaseApiView.as_view()),
    path("test-explode", exploding_django_view),
    path("test-database-page", database_page_view),
    path("api/v2/test-raise/<str:kind>", raising_django_view),
    path("test-raise/<str:kind>", raising_django_view),
    *real_urlpatterns,
]
