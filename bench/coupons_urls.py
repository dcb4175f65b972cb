"""The app's URLs plus reference views for bench/coupons_list.py; never deployed.

- `/bench/ping`: a trivial JSON view (plain Django, every middleware, no DRF, no database).
- `/bench/ping-auth`: the same answer through DRF with the coupon views' authentication,
  throttle and store permission, to show what the shared API layer costs on its own.
- `/bench/peer/coupons`: the peer, what a typical Django team writes for the same list: stock
  DRF (ListAPIView + ModelSerializer + PageNumberPagination + authtoken's TokenAuthentication),
  the live coupons of the token user's store in id order, `?page_size=` 1..100.
"""

from django.http import JsonResponse
from django.urls import include, path
from rest_framework import serializers
from rest_framework.authentication import TokenAuthentication
from rest_framework.generics import ListAPIView
from rest_framework.pagination import PageNumberPagination
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from coupons.models import Coupon
from stores.access import ApiKeyOnly, StorePermission


def ping(request):
    return JsonResponse({"ok": True})


class AuthenticatedPing(APIView):
    permission_classes = [ApiKeyOnly, StorePermission]
    permission_area = "coupon"

    def get(self, request):
        return Response({"ok": True})


class PeerCouponSerializer(serializers.ModelSerializer):
    class Meta:
        model = Coupon
        fields = "__all__"


class PeerPagination(PageNumberPagination):
    page_size = 15
    page_size_query_param = "page_size"
    max_page_size = 100


class PeerCouponList(ListAPIView):
    # Stock DRF throughout: the project's bearer authentication and Redis throttle are replaced
    # by what DRF ships (no throttle is DRF's default).
    authentication_classes = [TokenAuthentication]
    permission_classes = [IsAuthenticated]
    throttle_classes = []
    serializer_class = PeerCouponSerializer
    pagination_class = PeerPagination

    def get_queryset(self):
        return Coupon.objects.filter(
            store__memberships__user=self.request.user, deleted_at__isnull=True
        ).order_by("id")


urlpatterns = [
    path("bench/ping", ping),
    path("bench/ping-auth", AuthenticatedPing.as_view()),
    path("bench/peer/coupons", PeerCouponList.as_view()),
    path("", include("config.urls")),
]
