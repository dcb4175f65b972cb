"""Test-only URLconf: the real routes plus tiny views that exercise the shared conventions
(`@pytest.mark.urls("tests.api.urls")`)."""

from django.urls import path
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


class ExplodingApiView(APIView):
    def get(self, request):
        raise RuntimeError("secret internal detail")


def exploding_django_view(request):
    raise RuntimeError("secret internal detail")


urlpatterns = [
    path("api/v2/test-coupon-area", CouponAreaView.as_view()),
    path("api/v2/test-explode", ExplodingApiView.as_view()),
    path("test-explode", exploding_django_view),
    *real_urlpatterns,
]
