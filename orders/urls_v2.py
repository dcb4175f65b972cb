from django.urls import path

from orders import views

urlpatterns = [
    path("invoices", views.InvoiceListV2View.as_view(), name="v2-invoices"),
]
