from django.urls import path

from stores import views

urlpatterns = [
    path("stores", views.StoreListCreateView.as_view(), name="stores"),
    path("stores/<int:store>", views.StoreDetailView.as_view(), name="store-detail"),
]
