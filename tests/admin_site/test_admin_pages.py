"""Every admin page with a superuser: changelists, change forms, date hierarchies, the store
filter, the autocomplete endpoints, and no secret (or its hash) in any page's HTML."""

import re
from datetime import timedelta

import pytest
from django.contrib import admin
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from oauth2_provider.models import (
    get_access_token_model,
    get_application_model,
    get_grant_model,
    get_id_token_model,
    get_refresh_token_model,
)

from accounts.abilities import AREAS
from accounts.models import ApiKey
from coupons.models import Coupon
from events.models import Event, EventPruneMark
from oauth_cli.models import TokenFamily
from oauth_cli.selectors import token_checksum
from oauth_cli.services import cli_application_ensure
from orders.models import Order
from stores.models import Membership
from tests.factories import (
    CouponFactory,
    MembershipFactory,
    UserFactory,
    WebhookChannelFactory,
    make_api_key,
)
from tests.oauth_cli.flow import approve, authorize_params, connect
from tests.webhooks.helpers import record_order_completed
from webhooks.models import (
    WebhookChannel,
    WebhookDelivery,
    WebhookDeliveryAttempt,
    WebhookSigningSecret,
)

WEBHOOK_SECRET = "whsec_current_0123456789abcdefABCDEF"
PREVIOUS_WEBHOOK_SECRET = "whsec_previous_0123456789abcdefABCDEF"
OTHER_WEBHOOK_SECRET = "whsec_other_0123456789abcdefABCDEF"
CLIENT_SECRET = "confidential-client-secret-0123456789abcdef"


@pytest.fixture
def world(db):
    """A row of every registered model, made the way the app makes it, and every secret."""
    owner = UserFactory(username="owner-alice")
    store = MembershipFactory(user=owner, store__slug="alpha-shop").store
    other = MembershipFactory(store__slug="beta-shop").store
    api_key_secret = make_api_key(
        owner, store_access="selected", stores=[store], current_store=store
    )
    CouponFactory(store=store, code="ALPHA10")
    CouponFactory(store=other, code="BETA10")
    Order.objects.create(store=store, subtotal_cents=1000, total_cents=1000, currency="EUR")
    Order.objects.create(store=other, subtotal_cents=2000, total_cents=2000, currency="EUR")
    WebhookChannelFactory(store=store, signing_secret=WEBHOOK_SECRET)
    WebhookSigningSecret.objects.filter(store=store).update(
        previous_secret=PREVIOUS_WEBHOOK_SECRET,
        previous_secret_expires_at=timezone.now() + timedelta(hours=1),
    )
    WebhookChannelFactory(
        store=other, url="https://hooks.example.com/beta", signing_secret=OTHER_WEBHOOK_SECRET
    )
    record_order_completed(store, order_id=1)
    record_order_completed(other, order_id=2)
    delivery = WebhookDelivery.objects.get(store=store)
    assert WebhookDelivery.objects.filter(store=other).exists()
    WebhookDeliveryAttempt.objects.create(
        delivery=delivery,
        delivery_event_occurred_at=delivery.event_occurred_at,
        number=1,
        origin="https://hooks.example.com",
        response_status=500,
        response_body="oops",
    )
    EventPruneMark.objects.create(store=store, txid=1, event_id="evt_pruned")
    Group.objects.create(name="support")

    # OAuth: a finished connection (access + refresh token, installation, token family), a
    # code not yet exchanged (a grant), and a confidential client with a hashed secret.
    cli_application_ensure()
    browser = Client()
    browser.force_login(owner)
    tokens = connect(browser)
    pending_code = approve(browser, authorize_params())["code"]
    get_application_model().objects.create(
        name="confidential",
        client_type="confidential",
        authorization_grant_type="client-credentials",
        client_secret=CLIENT_SECRET,
        user=owner,
    )
    get_id_token_model().objects.create(
        user=owner,
        application=get_application_model().objects.get(name="confidential"),
        expires=timezone.now() + timedelta(hours=1),
    )

    secrets = {
        "api key": api_key_secret,
        "api key hash": ApiKey.objects.get().key_hash,
        "webhook secret": WEBHOOK_SECRET,
        "previous webhook secret": PREVIOUS_WEBHOOK_SECRET,
        "other webhook secret": OTHER_WEBHOOK_SECRET,
        "access token": tokens["access_token"],
        "refresh token": tokens["refresh_token"],
        "authorization code": pending_code,
        "client secret": CLIENT_SECRET,
        "client secret hash": get_application_model()
        .objects.get(name="confidential")
        .client_secret,
    }
    for token in get_access_token_model().objects.all():
        secrets[f"access token checksum {token.pk}"] = token.token_checksum
    for token in get_refresh_token_model().objects.all():
        secrets[f"refresh token checksum {token.pk}"] = token.token_checksum
    for family in TokenFamily.objects.all():
        secrets[f"code checksum {family.pk}"] = family.code_checksum
    secrets["pending code checksum"] = token_checksum(pending_code)  # the grant's stored code
    assert get_grant_model().objects.filter(code=token_checksum(pending_code)).exists()
    return {"store": store, "other": other, "secrets": secrets}


def registered():
    return sorted(admin.site._registry.items(), key=lambda item: item[0]._meta.label)


def admin_url(model, view: str, *args) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)


def pages(client):
    """(url, response) of every changelist, add form and change form of every model."""
    for model, model_admin in registered():
        urls = [admin_url(model, "changelist")]
        if model_admin.has_add_permission(_superuser_request()):
            urls.append(admin_url(model, "add"))
        urls += [admin_url(model, "change", obj.pk) for obj in model.objects.all()[:5]]
        for url in urls:
            yield url, client.get(url)


def _superuser_request():
    from django.test import RequestFactory

    request = RequestFactory().get("/admin/")
    request.user = UserFactory.build(is_staff=True, is_superuser=True, is_active=True)
    return request


def test_every_registered_model_has_a_row_to_show(world):
    empty = [model._meta.label for model, _ in registered() if not model.objects.exists()]
    assert empty == []


def test_every_admin_page_answers_200(admin_client, world):
    seen = 0
    for url, response in pages(admin_client):
        assert response.status_code == 200, url
        seen += 1
    assert seen > 2 * len(admin.site._registry)


def test_no_secret_or_secret_hash_appears_in_any_admin_page(admin_client, world):
    for url, response in pages(admin_client):
        html = response.content.decode()
        for name, secret in world["secrets"].items():
            assert secret, name
            assert secret not in html, f"{name} shown at {url}"


def test_secrets_show_masked_in_their_change_forms(admin_client, world):
    store_id = WebhookSigningSecret.objects.get(secret=WEBHOOK_SECRET).store_id
    channel = WebhookChannel.objects.get(store_id=store_id)
    html = admin_client.get(admin_url(WebhookChannel, "change", channel.pk)).content
    assert f"…{WEBHOOK_SECRET[-4:]}".encode() in html
    assert f"…{PREVIOUS_WEBHOOK_SECRET[-4:]}".encode() in html
    token = get_access_token_model().objects.get()
    html = admin_client.get(admin_url(token.__class__, "change", token.pk)).content
    assert f"…{token.token[-4:]}".encode() in html


@pytest.mark.parametrize(
    ("model", "field"),
    [
        (Event, "occurred_at"),
        (WebhookDelivery, "created_at"),
        (Order, "created_at"),
    ],
)
def test_date_hierarchy_drills_down_and_filters(admin_client, world, model, field):
    model_admin = admin.site._registry[model]
    assert model_admin.date_hierarchy == field
    now = timezone.localtime()
    changelist = admin_url(model, "changelist")
    page = admin_client.get(changelist)
    assert b'<nav class="toplinks"' in page.content  # the date hierarchy bar
    this_year = admin_client.get(changelist, {f"{field}__year": now.year})
    assert this_year.status_code == 200
    assert this_year.context["cl"].result_count == model.objects.count() > 0
    last_year = admin_client.get(changelist, {f"{field}__year": now.year - 1})
    assert last_year.context["cl"].result_count == 0
    day = admin_client.get(
        changelist,
        {f"{field}__year": now.year, f"{field}__month": now.month, f"{field}__day": now.day},
    )
    assert day.context["cl"].result_count == model.objects.count()


@pytest.mark.parametrize(
    ("model", "store_of"),
    [
        (Event, lambda row: row.store),
        (WebhookDelivery, lambda row: row.store),
        (Order, lambda row: row.store),
        (Coupon, lambda row: row.store),
        (Membership, lambda row: row.store),
        (ApiKey, lambda row: row.current_store),
    ],
)
def test_store_filter_is_a_slug_input_that_filters(admin_client, world, model, store_of):
    changelist = admin_url(model, "changelist")
    unfiltered = admin_client.get(changelist)
    assert b'name="store"' in unfiltered.content  # the input, not one link per store
    assert b"?store=beta-shop" not in unfiltered.content

    filtered = admin_client.get(changelist, {"store": "alpha-shop"})

    assert filtered.status_code == 200
    rows = list(filtered.context["cl"].queryset)
    assert rows
    assert {store_of(row).slug for row in rows} == {"alpha-shop"}
    assert filtered.context["cl"].result_count < model.objects.count() or model is ApiKey
    assert 'value="alpha-shop"' in filtered.content.decode()


def test_store_filter_keeps_the_other_filters(admin_client, world):
    response = admin_client.get(
        admin_url(Order, "changelist"), {"status": "placed", "store": "alpha-shop"}
    )
    assert response.status_code == 200
    assert '<input type="hidden" name="status" value="placed">' in response.content.decode()


def test_unknown_store_slug_shows_an_empty_list(admin_client, world):
    response = admin_client.get(admin_url(Order, "changelist"), {"store": "no-such-store"})
    assert response.status_code == 200
    assert response.context["cl"].result_count == 0


def autocomplete_fields_of_every_admin():
    for model, model_admin in registered():
        for name in model_admin.autocomplete_fields:
            yield model, name
        for inline in model_admin.inlines:
            for name in inline.autocomplete_fields:
                yield inline.model, name


def test_every_store_and_user_choice_in_an_admin_form_is_an_autocomplete(world):
    from django.contrib.admin.widgets import AutocompleteMixin
    from django.contrib.auth import get_user_model
    from django.forms import ModelChoiceField

    from stores.models import Store

    request = _superuser_request()
    checked = []
    for model, model_admin in registered():
        # (form, the foreign key to the parent that an inline form fills in itself)
        forms = [
            (model_admin.get_form(request, obj), None) for obj in (None, model.objects.first())
        ]
        for inline in model_admin.inlines:
            formset = inline(model, admin.site).get_formset(request)
            forms.append((formset.form, formset.fk.name))
        for form, parent_key in forms:
            for name, field in form.base_fields.items():
                if not isinstance(field, ModelChoiceField) or name == parent_key:
                    continue
                if field.queryset.model not in (Store, get_user_model()):
                    continue
                widget = getattr(field.widget, "widget", field.widget)  # inside the "+" wrapper
                assert isinstance(widget, AutocompleteMixin), f"{model._meta.label}.{name}"
                checked.append((model._meta.label, name))
    assert ("accounts.ApiKey", "stores") in checked
    assert ("orders.Order", "store") in checked


def test_autocomplete_endpoints_answer(admin_client, world):
    pairs = sorted(
        set(autocomplete_fields_of_every_admin()), key=lambda p: (p[0]._meta.label, p[1])
    )
    assert len(pairs) >= 10
    for model, field_name in pairs:
        term = "alpha" if "store" in field_name else "owner"
        response = admin_client.get(
            "/admin/autocomplete/",
            {
                "app_label": model._meta.app_label,
                "model_name": model._meta.model_name,
                "field_name": field_name,
                "term": term,
            },
        )
        assert response.status_code == 200, (model._meta.label, field_name, response.content)
        texts = [result["text"] for result in response.json()["results"]]
        assert texts, (model._meta.label, field_name)
        assert all(term in text for text in texts), (model._meta.label, field_name, texts)


def test_the_admin_names_the_service_and_its_apps(admin_client):
    index = admin_client.get("/admin/").content.decode()

    assert "Storefront administration" in index and "Django administration" not in index
    assert "Command-line client (OAuth)" in index and "Oauth_Cli" not in index
    assert 'href="/"' in index  # "View site": the front page


def test_a_new_key_starts_with_the_read_abilities_checked(admin_client):
    form = admin_client.get("/admin/accounts/apikey/add/").content.decode()

    checked = set(
        re.findall(r'<input type="checkbox" name="abilities" value="([^"]+)"[^>]*checked', form)
    )
    assert checked == {"account:read", *(f"{area}:read" for area in AREAS)}
