"""Stores, the member's own API keys and the CLI connection: pages over accounts/, stores/ and
oauth_cli/ services (the same ones as POST /api/v2/stores, `create_api_key` and the admin,
DELETE /api/v2/oauth/installation)."""

from datetime import UTC

from django import forms
from django.contrib import messages
from django.core.paginator import Paginator
from django.db import transaction
from django.shortcuts import redirect
from django.urls import reverse

from accounts.abilities import GRANTABLE_ABILITIES
from accounts.models import ApiKey
from accounts.services import api_key_create, api_key_revoke
from console.access import console_store_choose
from console.pages import console_view, form_errors, render_page, submit, validated
from console.shown_once import secret_keep_for_next_page, secret_take
from core.api.errors import NotFound
from oauth_cli.selectors import cli_installation_for
from oauth_cli.services import installation_revoke
from stores.models import Membership
from stores.serializers import StoreCreateSerializer
from stores.services import store_create

PAGE_SIZE = 25
API_KEY_SECRET = "api_key"


# --- stores --------------------------------------------------------------------------------


@console_view(needs_store=False)
def stores(request):
    memberships = (
        Membership.objects.select_related("store")
        .filter(user_id=request.user.pk)
        .order_by("store__name", "store_id")
    )
    page = Paginator(memberships, PAGE_SIZE).get_page(request.GET.get("page"))

    def show(error=None):
        context = {"section": "stores", "page": page, "form_data": request.POST}
        return render_page(request, "console/stores.html", context, error=error)

    if request.method == "POST":

        def create():
            data = {"name": request.POST.get("name", ""), "slug": request.POST.get("slug", "")}
            store = store_create(user=request.user, **validated(StoreCreateSerializer, data))
            console_store_choose(request, store_id=store.pk)
            messages.success(request, f"Store {store.name} created; you are its owner.")

        return submit(request, create, page=show, success_url=reverse("console:stores"))
    return show()


@console_view(needs_store=False)
def store_choose(request):
    if request.method != "POST":
        return redirect("console:stores")
    store_id = request.POST.get("store", "")

    def choose():
        if not store_id.isdigit():
            raise NotFound()
        store = console_store_choose(request, store_id=int(store_id))
        messages.success(request, f"Working in {store.name}.")

    return submit(
        request,
        choose,
        page=lambda error: render_page(request, "console/error.html", {}, error=error),
        success_url=reverse("console:stores"),
    )


# --- API keys ------------------------------------------------------------------------------


class ApiKeyForm(forms.Form):
    """What the console asks; the rules (grantable abilities, expiry in the future) are
    api_key_create's."""

    name = forms.CharField(max_length=ApiKey._meta.get_field("name").max_length)
    abilities = forms.MultipleChoiceField(choices=[(a, a) for a in GRANTABLE_ABILITIES])
    expires_at = forms.DateTimeField(
        required=False, input_formats=["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S"]
    )


@console_view()
def keys(request):
    own = (
        ApiKey.objects.select_related("current_store")
        .filter(user_id=request.user.pk, revoked_at__isnull=True)
        .order_by("-created_at", "-id")
    )
    page = Paginator(own, PAGE_SIZE).get_page(request.GET.get("page"))
    checked = set(request.POST.getlist("abilities")) if request.method == "POST" else set()

    def show(error=None):
        context = {
            "section": "keys",
            "page": page,
            "grantable": GRANTABLE_ABILITIES,
            "checked": checked,
            "form_data": request.POST,
            "secret": secret_take(request, purpose=API_KEY_SECRET) if error is None else None,
        }
        return render_page(request, "console/keys.html", context, error=error)

    if request.method == "POST":

        def create():
            form = ApiKeyForm(request.POST)
            if not form.is_valid():
                raise form_errors(form)
            expires_at = form.cleaned_data["expires_at"]
            with transaction.atomic():
                key, secret = api_key_create(
                    user=request.user,
                    name=form.cleaned_data["name"],
                    abilities=form.cleaned_data["abilities"],
                    current_store=request.console.store,
                    # The form's time is UTC, as every time the console shows.
                    expires_at=expires_at.astimezone(UTC) if expires_at else None,
                )
                secret_keep_for_next_page(request, purpose=API_KEY_SECRET, secret=secret)
            messages.success(request, f"API key {key.name} ({key.prefix}…) created.")

        return submit(request, create, page=show, success_url=reverse("console:keys"))
    return show()


@console_view()
def key_revoke(request, key_id: int):
    key = (
        ApiKey.objects.select_related("current_store")
        .filter(user_id=request.user.pk, pk=key_id, revoked_at__isnull=True)
        .first()
    )
    if key is None:
        raise NotFound()
    if request.method == "POST":
        api_key_revoke(api_key=key)
        messages.success(request, f"API key {key.name} ({key.prefix}…) revoked.")
        return redirect("console:keys")
    context = {"section": "keys", "key": key}
    return render_page(request, "console/key_revoke.html", context)


# --- CLI connection ------------------------------------------------------------------------


@console_view(needs_store=False)
def cli(request):
    installation = cli_installation_for(user_id=request.user.pk)
    context = {"section": "cli", "installation": installation}
    return render_page(request, "console/cli.html", context)


@console_view(needs_store=False)
def cli_disconnect(request):
    installation = cli_installation_for(user_id=request.user.pk)
    if installation is None:
        return redirect("console:cli")
    if request.method == "POST":
        installation_revoke(installation_id=installation.pk)
        messages.success(request, "The CLI is disconnected; its tokens no longer work.")
        return redirect("console:cli")
    context = {"section": "cli", "installation": installation}
    return render_page(request, "console/cli_disconnect.html", context)
