"""The app's URLs plus two reference views for bench/coupons_list.py; never deployed.

- `/bench/ping`: a trivial JSON view (plain Django, every middleware, no DRF, no database).
- `/bench/ping-auth`: the same answer through DRF with the coupon views' authentication,
  throttle and store permission, to show what the shared API layer costs on its own.
"""

from django.http import JsonResponse
from django.urls import include, path
from rest_framework.response import Response
from rest_framework.views import APIView

from stores.access import ApiKeyOnly, StorePermission


def ping(request):
    return JsonResponse({"ok": True})


class AuthenticatedPing(APIView):
    permission_classes = [ApiKeyOnly, StorePermission]
    permission_area = "coupon"

    def get(self, request):
        return Response({"ok": True})


urlpatterns = [
    path("bench/ping", ping),
    path("bench/ping-auth", AuthenticatedPing.as_view()),
    path("", include("config.urls")),
]
