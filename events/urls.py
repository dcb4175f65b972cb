from django.urls import path

from events import views

urlpatterns = [
    path("events", views.EventListView.as_view(), name="events"),
    path("orders/<int:order>/events", views.OrderEventListView.as_view(), name="order-events"),
]
