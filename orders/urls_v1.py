from django.urls import path

from orders import views

urlpatterns = [
    path("invoices", views.InvoiceListV1View.as_view(), name="v1-invoices"),
]
