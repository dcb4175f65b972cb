from django.urls import path

from accounts import views

urlpatterns = [
    path("me", views.MeView.as_view(), name="me"),
    path("permissions", views.PermissionsView.as_view(), name="permissions"),
]
