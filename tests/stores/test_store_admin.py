"""The store admin applies the API's slug rules: the API's slug field, the reserved names."""

import pytest
from django.utils import timezone

from stores.models import Store
from tests.factories import StoreFactory

pytestmark = pytest.mark.django_db

ADD_URL = "/admin/stores/store/add/"


def store_form(*, name: str, slug: str) -> dict:
    """The admin's store form as a browser posts it (no membership rows inline)."""
    now = timezone.now()
    return {
        "name": name,
        "slug": slug,
        "visibility": "PUBLIC",
        "created_at_0": now.strftime("%Y-%m-%d"),
        "created_at_1": now.strftime("%H:%M:%S"),
        # the membership inline's management form
        "memberships-TOTAL_FORMS": "0",
        "memberships-INITIAL_FORMS": "0",
        "memberships-MIN_NUM_FORMS": "0",
        "memberships-MAX_NUM_FORMS": "1000",
    }


def add_store(client, slug, name="Shop"):
    return client.post(ADD_URL, store_form(name=name, slug=slug))


def slug_errors(response):
    assert response.status_code == 200, "the form should be shown again with errors"
    return response.context["adminform"].form.errors["slug"]


@pytest.mark.parametrize(
    ("slug", "message"),
    [
        ("admin", "is reserved"),
        ("api", "is reserved"),
        ("My_Shop", "may contain only"),
        ("-shop", "may contain only"),
        ("ab", "3 to 63"),
    ],
)
def test_admin_refuses_slugs_the_api_refuses(admin_client, slug, message):
    errors = slug_errors(add_store(admin_client, slug))
    assert any(message in error for error in errors), errors
    assert not Store.objects.filter(slug__iexact=slug).exists()


def test_admin_lower_cases_the_slug(admin_client):
    response = add_store(admin_client, "My-Shop")
    assert response.status_code == 302
    assert Store.objects.get(name="Shop").slug == "my-shop"


def test_admin_refuses_a_taken_slug_whatever_its_case(admin_client):
    StoreFactory(slug="taken-shop")
    errors = slug_errors(add_store(admin_client, "Taken-Shop"))
    assert errors
    assert Store.objects.filter(slug="taken-shop").count() == 1


def test_admin_edit_that_keeps_the_slug_is_not_revalidated(admin_client):
    # A row with a slug from before the rules (here written straight to the table).
    store = StoreFactory(slug="test")
    response = admin_client.post(
        f"/admin/stores/store/{store.pk}/change/", store_form(name="Renamed", slug="test")
    )
    assert response.status_code == 302
    store.refresh_from_db()
    assert store.name == "Renamed"
