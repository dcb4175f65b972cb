"""The console's three journeys end to end in headless Chromium (Debian's), against a live
server and a real Celery worker, with axe-core (WCAG 2.1 A/AA) on every page they pass and the
375 px reflow check. With CONSOLE_SCREENSHOTS_DIR set, each page's screenshot is written there
(docs/console.md: how docs/console/*.png are made)."""

import os
import re
from datetime import timedelta
from pathlib import Path

import pytest
import requests
from django.utils import timezone
from standardwebhooks import Webhook

from oauth_cli.selectors import cli_application
from oauth_cli.services import cli_application_ensure, installation_ensure
from tests.oauth_cli.conftest import CHROMIUM_ARGS
from tests.oauth_cli.test_accessibility import AXE_SCRIPT, axe_violations, tab_to
from tests.servers import wait_for
from tests.webhooks.helpers import Reply, record_order_completed
from webhooks.models import WebhookChannel, WebhookDelivery, WebhookSigningSecret

pytestmark = [pytest.mark.browser, pytest.mark.worker, pytest.mark.django_db(transaction=True)]

SCREENSHOTS = os.environ.get("CONSOLE_SCREENSHOTS_DIR")
DESKTOP = {"width": 1000, "height": 700}
PHONE = {"width": 375, "height": 700}
STORE_SECRET = "whsec_c2VjcmV0LWZvci10ZXN0cy0wMTIzNDU2Nzg5YWJjZA=="


@pytest.fixture(scope="module")
def browser():
    """One Chromium for the module's journeys."""
    if not AXE_SCRIPT.exists():
        pytest.fail(f"{AXE_SCRIPT} is missing: run `make test` (it runs npm ci in tests/external)")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS
        )
        yield launched
        launched.close()
    os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)


@pytest.fixture
def page(browser, live_server, settings):
    settings.BASE_URL = live_server.url
    # bypass_csp: only for the injected axe script; the pages' own CSP is checked below.
    context = browser.new_context(bypass_csp=True, viewport=DESKTOP)
    yield context.new_page()
    context.close()


def check(page, screenshot: str | None = None) -> None:
    """axe finds nothing; at 375 px nothing scrolls sideways; the screenshot, when asked."""
    assert axe_violations(page) == [], page.url
    page.set_viewport_size(PHONE)
    overflow = page.evaluate(
        "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert overflow <= 0, f"{page.url} scrolls sideways at 375 px"
    page.set_viewport_size(DESKTOP)
    if SCREENSHOTS and screenshot:
        Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SCREENSHOTS) / f"{screenshot}.png"))


def sign_in_by_keyboard(page, user) -> None:
    tab_to(page, "id_username")
    page.keyboard.type(user.username)
    tab_to(page, "id_password")
    page.keyboard.type("password")
    page.keyboard.press("Enter")


def sign_in(page, live_server, user, path="/console/") -> None:
    page.goto(f"{live_server.url}{path}")
    page.fill("#id_username", user.username)
    page.fill("#id_password", "password")
    page.click("#sign-in")
    page.wait_for_url(f"{live_server.url}{path}")


def test_journey_sign_in_create_a_key_that_answers_the_api(live_server, page, user, store):
    """By keyboard alone: sign in, create a key, copy its secret; the key answers /me."""
    headers = {}
    page.on("response", lambda r: headers.update(r.headers) if "/console/" in r.url else None)
    page.goto(f"{live_server.url}/console/keys/")
    assert "/accounts/login/" in page.url
    check(page, "sign-in")
    sign_in_by_keyboard(page, user)
    page.wait_for_selector("#key-name")
    assert headers["x-frame-options"] == "DENY"
    assert "unsafe-inline" not in headers["content-security-policy"]
    check(page, "api-keys-empty")

    tab_to(page, "key-name")
    page.keyboard.type("deploy")
    page.keyboard.press("Tab")  # the first ability: *
    page.keyboard.press("Space")
    tab_to(page, "create-key")
    page.keyboard.press("Enter")
    page.wait_for_selector("#new-secret")
    assert page.is_visible("button.copy")  # the script turned the copy button on
    check(page, "api-key-created")
    secret = page.inner_text("#new-secret")

    me = requests.get(
        f"{live_server.url}/api/v2/me", headers={"Authorization": f"Bearer {secret}"}, timeout=5
    )
    assert me.status_code == 200
    assert (me.json()["data"]["username"], me.json()["data"]["credential_type"]) == (
        user.username,
        "api_key",
    )
    page.reload()
    assert secret not in page.content()

    page.click("text=Revoke")
    check(page, "api-key-revoke")
    page.goto(f"{live_server.url}/console/")
    check(page, "stores")

    cli_application_ensure()
    installation_ensure(user=user, application=cli_application())
    page.goto(f"{live_server.url}/console/cli/")
    check(page, "cli-connection")
    page.click("text=Disconnect the CLI")
    check(page, "cli-disconnect")
    page.click("#confirm")
    page.wait_for_selector("text=not connected")

    # a refused form and a page not found read as well
    page.goto(f"{live_server.url}/console/keys/")
    page.fill("#key-name", "no abilities")
    page.click("#create-key")
    page.wait_for_selector("#abilities-error")
    check(page, "api-key-refused")
    page.goto(f"{live_server.url}/console/deliveries/00000000-0000-0000-0000-000000000000/")
    assert page.inner_text("h1") == "Not found"
    check(page)


def test_journey_channel_test_event_signed_and_attempt_shown(
    live_server, page, user, store, receiver, celery_worker
):
    sign_in(page, live_server, user, "/console/webhooks/")
    check(page, "webhooks-empty")

    page.click("text=Signing secret")
    page.click("#generate-secret")
    page.wait_for_selector("#new-secret")
    check(page, "signing-secret")
    secret = page.inner_text("#new-secret")
    assert secret == WebhookSigningSecret.objects.get(store=store).secret

    # by keyboard alone: add the channel, send the test event
    page.click("nav.subnav >> text=Channels")
    tab_to(page, "channel-name")
    page.keyboard.type("Fulfilment")
    tab_to(page, "channel-url")
    page.keyboard.type(receiver.url)
    for _ in range(10):  # past the hint's link, to the event type's checkbox
        page.keyboard.press("Tab")
        if page.evaluate("() => document.activeElement.value") == "order.completed":
            page.keyboard.press("Space")
            break
    tab_to(page, "add-channel")
    page.keyboard.press("Enter")
    page.wait_for_selector("#send-test")
    check(page, "channel")

    tab_to(page, "send-test", most=40)
    page.keyboard.press("Enter")
    page.wait_for_selector("text=Test event order.completed delivered")
    [request] = receiver.received()
    assert Webhook(secret).verify(request.body, request.headers)["type"] == "order.completed"

    # a real event: the worker delivers it, and its attempt shows in the console
    event = record_order_completed(store)
    wait_for(
        lambda: WebhookDelivery.objects.filter(event=event, status="succeeded").exists(),
        timeout=20,
        what="the worker's delivery",
    )
    page.click("nav >> text=Deliveries")
    check(page, "deliveries")
    page.click("td a")
    page.wait_for_selector("#attempts")
    assert "200" in page.inner_text("#attempts")
    assert "/hooks" not in page.inner_text("main")
    check(page, "delivery")

    page.click("nav >> text=Events")
    check(page, "events")
    page.click(f"text={event.id}")
    assert '"total_cents": 1250' in page.inner_text("#event-json")
    check(page, "event")

    page.goto(f"{live_server.url}/console/webhooks/event-types")
    check(page, "event-types")
    page.click("nav.subnav >> text=Channels")
    check(page, "webhooks")


def test_journey_gone_channel_disabled_enabled_then_recovered(
    live_server, page, user, store, receiver, celery_worker
):
    WebhookSigningSecret.objects.create(
        store=store, secret="whsec_" + "c2VjcmV0LWZvci10ZXN0cy0wMTIzNDU2Nzg5YWJjZA=="
    )
    receiver.respond = lambda request: Reply(410, b"gone")
    sign_in(page, live_server, user, "/console/webhooks/")
    page.fill("#channel-url", receiver.url)
    page.check("input[value='order.completed']")
    page.click("#add-channel")
    page.wait_for_selector("#channel-state")

    first = record_order_completed(store, order_id=1)
    wait_for(
        lambda: not WebhookChannel.objects.get(store=store).enabled,
        timeout=20,
        what="the channel disabled by the 410",
    )
    second = record_order_completed(store, order_id=2)  # missed: the channel is off
    page.reload()
    assert "410 Gone" in page.inner_text("#channel-state")
    check(page, "channel-disabled")

    receiver.respond = lambda request: Reply(200)
    page.click("#toggle-enabled")
    page.wait_for_selector("text=Channel enabled.")
    since = (timezone.now() - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M")
    page.fill("#recover-since", since)
    page.click("#recover")
    page.wait_for_selector("text=Queued 2 missed event(s)")

    def arrived():
        ids = {r.headers["webhook-id"] for r in receiver.received() if r.answered_status == 200}
        return {first.id, second.id} <= ids

    wait_for(arrived, timeout=20, what="the recovered events at the receiver")
    page.click("text=Delete this channel")
    check(page, "channel-delete")
    page.click("#confirm")
    page.wait_for_selector("text=Channel deleted.")
    assert re.search(r"No channels yet", page.content())
