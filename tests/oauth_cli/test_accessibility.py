"""The pages people see in a browser, checked by axe-core (Deque's WCAG rules, not ours) in
headless Chromium: sign-in, consent, the refused request, the error pages. Also: approval with
the keyboard alone, and every page usable at 320 CSS pixels wide (WCAG 1.4.10 Reflow).

axe-core comes from npm (tests/external/package.json, installed by `make test`)."""

import os
from pathlib import Path

import pytest

from tests.oauth_cli.flow import authorize_params
from tests.oauth_cli.flow import authorize_url as flow_authorize_url

AXE_SCRIPT = Path(__file__).resolve().parents[1] / "external/node_modules/axe-core/axe.min.js"
# WCAG 2.0 and 2.1, levels A and AA: what the issue asks of every page.
WCAG_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
NARROW = {"width": 320, "height": 640}

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.urls("tests.core.api.urls"),
]


@pytest.fixture
def browser(chromium_browser):
    if not AXE_SCRIPT.exists():
        pytest.fail(f"{AXE_SCRIPT} is missing: run `make test` (it runs npm ci in tests/external)")
    return chromium_browser


@pytest.fixture
def page(browser):
    # bypass_csp: the pages' CSP (rightly) refuses the injected axe script.
    context = browser.new_context(bypass_csp=True)
    yield context.new_page()
    context.close()


def axe_violations(page) -> list[str]:
    page.add_script_tag(path=str(AXE_SCRIPT))
    result = page.evaluate(
        "tags => axe.run(document, {runOnly: {type: 'tag', values: tags}})", WCAG_TAGS
    )
    return [
        f"{violation['id']} ({violation['impact']}): {violation['help']} at "
        + ", ".join(" ".join(node["target"]) for node in violation["nodes"])
        for violation in result["violations"]
    ]


def reflow_problems(page) -> list[str]:
    """At 320 px: nothing scrolls sideways and nothing is cut off or hidden off-screen."""
    page.set_viewport_size(NARROW)
    problems = page.evaluate(
        """() => {
        const found = [];
        const root = document.documentElement;
        if (root.scrollWidth > root.clientWidth)
            found.push(`page scrolls sideways: ${root.scrollWidth}px > ${root.clientWidth}px`);
        for (const element of document.body.querySelectorAll('*')) {
            const box = element.getBoundingClientRect();
            if (box.width === 0 || box.height === 0) continue;
            if (box.left < 0 || box.right > root.clientWidth + 0.5)
                found.push(`${element.tagName.toLowerCase()}#${element.id} spans `
                           + `${Math.round(box.left)}..${Math.round(box.right)}px`);
        }
        return found;
    }"""
    )
    # Kept for a person to look at with STOREFRONT_SCREENSHOTS=<dir> (docs/testing.md).
    screenshots = Path(
        os.environ.get("STOREFRONT_SCREENSHOTS")
        or Path(os.environ.get("STOREFRONT_TEST_WORKDIR", "/tmp")) / "screenshots"
    )
    screenshots.mkdir(parents=True, exist_ok=True)
    name = page.title().replace("/", "-") or "untitled"
    page.screenshot(path=str(screenshots / f"{name} at 320px.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 800})
    return problems


def check_page(page) -> None:
    assert axe_violations(page) == []
    assert reflow_problems(page) == []


def authorize_url(live_server, redirect_uri, state, **overrides) -> str:
    """The CLI's authorization request (tests/oauth_cli/flow.py) on the live server."""
    params = authorize_params(redirect_uri=redirect_uri, state=state, **overrides)
    return live_server.url + flow_authorize_url(params)


def tab_to(page, element_id: str, *, most: int = 20) -> None:
    """Presses Tab until the element has the focus, as a keyboard user would."""
    for _ in range(most):
        page.keyboard.press("Tab")
        if page.evaluate("() => document.activeElement && document.activeElement.id") == (
            element_id
        ):
            return
    pytest.fail(f"#{element_id} cannot be reached with Tab")


def focus_indicator(page) -> str:
    """The focused element's visible focus mark: its outline or box shadow (WCAG 2.4.7)."""
    return page.evaluate(
        """() => {
        const style = getComputedStyle(document.activeElement);
        if (style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) > 0)
            return `outline ${style.outlineWidth} ${style.outlineStyle}`;
        return style.boxShadow === 'none' ? '' : `box-shadow ${style.boxShadow}`;
    }"""
    )


def test_sign_in_and_consent_pass_axe_and_approve_with_the_keyboard_alone(
    live_server, settings, user, loopback_callback, page
):
    settings.BASE_URL = live_server.url
    page.goto(authorize_url(live_server, loopback_callback.redirect_uri, "k1"))
    assert "/accounts/login/" in page.url
    check_page(page)

    # a failed sign-in, with its message
    tab_to(page, "id_username")
    page.keyboard.type(user.username)
    tab_to(page, "id_password")
    page.keyboard.type("not the password")
    page.keyboard.press("Enter")
    page.wait_for_selector("[role=alert]")
    check_page(page)

    # signing in and approving with the keyboard only, the focus visible on each control
    tab_to(page, "id_username")
    page.keyboard.type(user.username)
    tab_to(page, "id_password")
    page.keyboard.type("password")
    tab_to(page, "sign-in")
    assert focus_indicator(page)
    page.keyboard.press("Enter")
    page.wait_for_selector("#approve")
    check_page(page)
    tab_to(page, "refuse")
    assert focus_indicator(page)
    tab_to(page, "approve")
    assert focus_indicator(page)
    page.keyboard.press("Enter")
    page.wait_for_url(f"{loopback_callback.redirect_uri}?*")
    approved = loopback_callback.wait()
    assert approved["state"] == "k1"
    assert approved["code"]

    # refusing with the keyboard
    page.goto(authorize_url(live_server, loopback_callback.redirect_uri, "k2"))
    page.wait_for_selector("#refuse")
    tab_to(page, "refuse")
    page.keyboard.press("Enter")
    page.wait_for_url(f"{loopback_callback.redirect_uri}?*")
    refused = loopback_callback.wait()
    assert refused == {"error": "access_denied", "state": "k2"} | {
        key: value for key, value in refused.items() if key == "iss"
    }


def test_the_refused_request_page_passes_axe(live_server, settings, signed_in_page):
    settings.BASE_URL = live_server.url
    page = signed_in_page
    page.goto(
        authorize_url(
            live_server,
            "http://127.0.0.1:9/callback",
            "r1",
            client_id="not-the-cli",
        )
    )
    assert page.locator("h1").inner_text() == "The authorization request cannot continue"
    check_page(page)


@pytest.mark.parametrize(
    ("path", "heading"),
    [
        ("/test-raise/bad-request", "Bad request"),
        ("/test-raise/permission-denied", "Forbidden"),
        ("/no-such-page", "Page not found"),
        ("/test-raise/server-error", "Something went wrong"),
        ("/test-database-page?ended=40P01", "The service is busy"),
        ("/docs/errors", None),
        ("/", "Storefront"),
    ],
)
def test_error_pages_pass_axe(live_server, page, path, heading):
    page.goto(f"{live_server.url}{path}")
    if heading:
        assert heading.lower() in page.locator("h1").inner_text().lower()
    check_page(page)


def test_the_locked_out_page_passes_axe(live_server, settings, user, page):
    settings.BASE_URL = live_server.url
    page.goto(f"{live_server.url}/accounts/login/")
    for _ in range(settings.AXES_FAILURE_LIMIT + 1):
        if page.locator("#locked-out").count():
            break
        page.fill("#id_username", user.username)
        page.fill("#id_password", "not the password")
        page.click("#sign-in")
    assert page.locator("#locked-out").count() == 1
    check_page(page)


def test_the_signin_unavailable_page_passes_axe(live_server, page):
    from django.test import override_settings

    from tests.outages import dead_redis_caches

    # the sign-in limits' cache (Redis) down: the sign-in page is the 503 page
    with override_settings(CACHES=dead_redis_caches()):
        response = page.goto(f"{live_server.url}/accounts/login/")
        assert response.status == 503
        assert page.locator("#signin-unavailable").count() == 1
        check_page(page)


@pytest.fixture
def signed_in_page(live_server, user, page):
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", user.username)
    page.fill("#id_password", "password")
    page.click("#sign-in")
    page.wait_for_load_state()
    return page


@pytest.mark.parametrize("width", [320, 560, 900])
def test_the_error_docs_never_break_a_code_or_a_type_mid_word(live_server, page, width):
    page.set_viewport_size({"width": width, "height": 800})
    page.goto(f"{live_server.url}/docs/errors")

    broken = page.evaluate(
        """() => [...document.querySelectorAll(
                'td:first-child code, td:nth-child(3) code')]
            .filter(code => code.getClientRects().length > 1)
            .map(code => code.textContent)"""
    )

    assert broken == []
