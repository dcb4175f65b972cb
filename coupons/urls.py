from django.urls import path

from coupons import views

urlpatterns = [
    path("coupons", views.CouponListCreateView.as_view(), name="coupons"),
    path("coupons/<int:id>", views.CouponDetailView.as_view(), name="coupon-detail"),
]
