"""`make run` serves the API from SQLite (DESIGN.md "Stack"): the suite's PostgreSQL cannot show
that a PostgreSQL-only statement (LATERAL, ARRAY, jsonb casts, data-modifying CTEs, FOR UPDATE,
SKIP LOCKED, PREPARE, advisory locks, transaction ids) reached a path `make run` takes, so these
run the demo's requests and work against a fresh SQLite file in a subprocess, configured the way
bin/run-dev configures it (migrate, ensure_cli_client, seed_demo; config.settings.dev).

Each PostgreSQL-only fast path (a `connection.vendor` branch, a PreparedStatement, raw SQL) and
the test that runs its SQLite side:
- API-key lookup (accounts.selectors), X-STORE membership (stores.selectors), coupon pages and
  counts (coupons.selectors), the row-locking writes of coupons and stores:
  test_the_demo_requests_answer_on_sqlite.
- the CLI login: installation lock and code consumption, refresh rotation, revocation
  (oauth_cli.validators): test_the_cli_login_works_on_sqlite, and under concurrency (SQLite's
  transactions begin IMMEDIATE, config/settings/base.py):
  test_racing_token_requests_keep_their_rules_on_sqlite.
- event positions (events.positions), webhook claim, outcome record and send slots
  (webhooks.attempts), delivery counts (webhooks.selectors), the metrics backlog
  (config.metrics.backlog): test_events_and_webhook_deliveries_work_on_sqlite.
- the maintenance tasks of beat (event pruning with SKIP LOCKED, token pruning, sweeps) and
  `recount_lists`: test_the_maintenance_work_runs_on_sqlite.
"""

import json
import os
import shutil

import pytest

from tests.api.test_settings import ROOT, manage, run_python


def make_run_environment(var_dir, metrics_dir) -> dict:
    """bin/run-dev's environment: no DATABASE_URL or REDIS_URL (SQLite, file cache, filesystem
    broker), the dev settings and the relaxations it exports."""
    environment = {k: v for k, v in os.environ.items() if k not in {"REDIS_URL", "DATABASE_URL"}}
    environment.update(
        DJANGO_SETTINGS_MODULE="config.settings.dev",
        STOREFRONT_VAR_DIR=str(var_dir),
        PROMETHEUS_MULTIPROC_DIR=str(metrics_dir),
        DEBUG="true",
        SECURE_COOKIES="false",
        WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS="true",
        METRICS_ALLOWED_ADDRESSES="127.0.0.1,::1",
        PYTHONPATH=str(ROOT),
    )
    return environment


@pytest.fixture(scope="module")
def prepared_var_dir(tmp_path_factory):
    """A var directory as bin/run-dev leaves it before serving, made once per module."""
    base = tmp_path_factory.mktemp("make-run")
    (base / "metrics").mkdir()
    environment = make_run_environment(base / "var", base / "metrics")
    for command in (("migrate", "--noinput"), ("ensure_cli_client",), ("seed_demo",)):
        result = manage(*command, environment=environment)
        assert result.returncode == 0, result.stderr
    (base / "var" / "broker" / "processed").mkdir(parents=True)  # the filesystem broker's
    return base / "var"


@pytest.fixture
def make_run(tmp_path, prepared_var_dir) -> dict:
    """The environment of a fresh `make run` database (a copy of the prepared one)."""
    shutil.copytree(prepared_var_dir, tmp_path / "var")
    (tmp_path / "metrics").mkdir()
    return make_run_environment(tmp_path / "var", tmp_path / "metrics")


def run_script(script: str, environment: dict) -> dict:
    """Runs `script` (which prints a JSON object last) against the `make run` database."""
    result = run_python(script, env=environment)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


DEMO_REQUESTS = """
import json, django
django.setup()
from django.test import Client
from accounts.abilities import ALL
from accounts.models import User
from accounts.services import api_key_create
from stores.models import Store

user = User.objects.get(username="demo")
store = Store.objects.get(slug="demo-store")
_, key = api_key_create(user=user, name="smoke", abilities=[ALL], current_store=store)
client = Client(HTTP_AUTHORIZATION=f"Bearer {key}")
statuses = {}
created = client.post(
    "/api/v1/coupons",
    {"code": "SMOKE1", "type": "PERCENTAGE", "discount": 10, "store_wide": True},
    content_type="application/json",
)
statuses["create"] = created.status_code
for name, path, headers in [
    ("me", "/api/v2/me", {}),
    ("stores", "/api/v2/stores", {}),
    ("coupons", "/api/v1/coupons?limit=5", {}),
    ("coupons_x_store", "/api/v1/coupons", {"HTTP_X_STORE": "demo-store"}),
    ("permissions", "/api/v2/permissions", {}),
    ("events", "/api/v2/events", {}),
    ("deliveries", "/api/v2/webhook-deliveries", {}),
]:
    statuses[name] = client.get(path, **headers).status_code
listed = client.get("/api/v1/coupons").json()["data"]
# the writes that lock rows on PostgreSQL (select_for_update with `of`, `no_key`)
second = client.post(
    "/api/v1/coupons",
    {"code": "SMOKE2", "type": "AMOUNT", "discount": 5, "store_wide": True},
    content_type="application/json",
).json()  # v1 answers the coupon itself
statuses["update"] = client.patch(
    f"/api/v1/coupons/{second['id']}", {"discount": 7}, content_type="application/json"
).status_code
statuses["delete"] = client.delete(f"/api/v1/coupons/{second['id']}").status_code
trashed = client.get("/api/v1/coupons?only_trashed=true").json()["data"]
# by a user of its own: seed_demo's store is too recent for the demo user's next one
_, newcomer_key = api_key_create(user=User.objects.create(username="newcomer"), name="smoke",
                                 abilities=[ALL])
statuses["store_create"] = Client(HTTP_AUTHORIZATION=f"Bearer {newcomer_key}").post(
    "/api/v2/stores", {"name": "Smoke", "slug": "smoke"}, content_type="application/json",
    HTTP_IDEMPOTENCY_KEY="smoke-store",
).status_code
print(json.dumps({"statuses": statuses, "listed": listed, "trashed": trashed}))
"""


def test_the_demo_requests_answer_on_sqlite(make_run):
    answer = run_script(DEMO_REQUESTS, make_run)

    assert set(answer["statuses"].values()) <= {200, 201, 204}, answer["statuses"]
    [coupon] = answer["listed"]
    assert coupon["code"] == "SMOKE1"
    assert coupon["created_at"].endswith("Z")  # converted from SQLite's text, in UTC
    [deleted] = answer["trashed"]
    assert (deleted["code"], deleted["discount"]) == ("SMOKE2", 7)


# The CLI's login as the CLI and a browser make it: the browser signs in through the form and
# approves the consent page with CSRF enforced; the CLI exchanges the code with its PKCE
# verifier, calls the API, refreshes and revokes with plain form posts and no cookies.
CLI_LOGIN = """
import json, re, django
django.setup()
from django.conf import settings
from django.test import Client
from oauth2_provider.models import get_grant_model
from tests.oauth_cli.flow import (
    authorize_params, authorize_url, exchange, form_fields, pkce_pair, query_of, refresh,
)

answer = {}
browser = Client(enforce_csrf_checks=True)
cli = Client()


def api(path, access_token, **headers):
    return cli.get(path, HTTP_AUTHORIZATION=f"Bearer {access_token}", **headers).status_code


def revoke(token):
    response = cli.post("/oauth/revoke", {"client_id": settings.CLI_CLIENT_ID, "token": token})
    return [response.status_code, response.json()]


def consent(params):
    page = browser.get(authorize_url(params))
    approved = browser.post("/oauth/authorize", form_fields(page.content.decode()))
    return page.status_code, approved.status_code, query_of(approved["Location"])


# authorize: not signed in yet, so the sign-in page first, then back to the consent page
verifier, challenge = pkce_pair()
params = authorize_params(code_challenge=challenge)
to_sign_in = browser.get(authorize_url(params))
answer["authorize"] = to_sign_in.status_code
sign_in_page = browser.get(to_sign_in["Location"])
csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', sign_in_page.content.decode())[1]
signed_in = browser.post(
    to_sign_in["Location"],
    {"username": "demo", "password": "demo", "csrfmiddlewaretoken": csrf,
     "next": authorize_url(params)},
)
answer["sign_in"] = [signed_in.status_code, signed_in["Location"] == authorize_url(params)]
answer["consent"], answer["approve"], callback = consent(params)
answer["state_returned"] = callback["state"] == params["state"]
answer["code_stored_in_clear"] = get_grant_model().objects.filter(code=callback["code"]).exists()

# token: the code exchange with PKCE, then the API with the access token
first = exchange(cli, callback["code"], verifier).json()
answer["token_type"] = first.get("token_type")
answer["api_first"] = [
    api("/api/v2/me", first["access_token"]),
    api("/api/v2/oauth/installation", first["access_token"]),
    api("/api/v2/events", first["access_token"], HTTP_X_STORE="demo-store"),
]

# refresh: rotation twice; the rotated pair stops working
second = refresh(cli, first["refresh_token"]).json()
third = refresh(cli, second["refresh_token"]).json()
answer["rotated"] = len({first["refresh_token"], second["refresh_token"], third["refresh_token"]})
answer["api_after_refresh"] = [api("/api/v2/me", first["access_token"]),
                               api("/api/v2/me", third["access_token"])]

# revoke: a rotated token revokes nothing; the live one disconnects every family
other_verifier, other_challenge = pkce_pair()
other_params = authorize_params(code_challenge=other_challenge)
other_machine = exchange(cli, consent(other_params)[2]["code"], other_verifier).json()
answer["revoke_rotated"] = revoke(second["refresh_token"])
answer["api_after_stale_revoke"] = [api("/api/v2/me", third["access_token"]),
                                    api("/api/v2/me", other_machine["access_token"])]
answer["revoke_live"] = revoke(third["refresh_token"])
answer["api_after_revoke"] = [api("/api/v2/me", third["access_token"]),
                              api("/api/v2/me", other_machine["access_token"])]
answer["refresh_after_revoke"] = refresh(cli, other_machine["refresh_token"]).json().get("error")

# a replayed code revokes what it was exchanged for (RFC 9700 §4.5)
last_verifier, last_challenge = pkce_pair()
last_code = consent(authorize_params(code_challenge=last_challenge))[2]["code"]
last = exchange(cli, last_code, last_verifier).json()
answer["code_replayed"] = exchange(cli, last_code, last_verifier).json().get("error")
answer["api_after_code_replay"] = api("/api/v2/me", last["access_token"])
print(json.dumps(answer))
"""


def test_the_cli_login_works_on_sqlite(make_run):
    answer = run_script(CLI_LOGIN, make_run)

    assert answer["authorize"] == 302  # to the sign-in page
    assert answer["sign_in"] == [302, True]  # back to the authorization request
    assert (answer["consent"], answer["approve"]) == (200, 303)
    assert answer["state_returned"] is True
    assert answer["code_stored_in_clear"] is False
    assert answer["token_type"] == "Bearer"
    assert answer["api_first"] == [200, 200, 200]
    assert answer["rotated"] == 3
    assert answer["api_after_refresh"] == [401, 200]
    assert answer["revoke_rotated"] == [200, []]
    assert answer["api_after_stale_revoke"] == [200, 200]
    assert answer["revoke_live"] == [200, []]
    assert answer["api_after_revoke"] == [401, 401]
    assert answer["refresh_after_revoke"] == "invalid_grant"
    assert answer["code_replayed"] == "invalid_grant"
    assert answer["api_after_code_replay"] == 401


# Two requests racing on one code or one refresh token, each in its own thread (and so its own
# SQLite connection), released together: the single-use rules must hold without a 500.
CLI_RACES = """
import json, threading, django
django.setup()
from django.db import connection
from django.test import Client
from accounts.models import User
from tests.oauth_cli.flow import approve, authorize_params, exchange, pkce_pair, refresh

browser = Client()
browser.force_login(User.objects.get(username="demo"))


def race(request):
    barrier, statuses = threading.Barrier(2), []

    def run():
        client = Client(raise_request_exception=False)
        barrier.wait()
        statuses.append(request(client).status_code)
        connection.close()

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sorted(statuses)


answer = {"exchanges": [], "refreshes": []}
for _ in range(8):
    verifier, challenge = pkce_pair()
    code = approve(browser, authorize_params(code_challenge=challenge))["code"]
    answer["exchanges"].append(race(lambda client: exchange(client, code, verifier)))
    verifier, challenge = pkce_pair()
    code = approve(browser, authorize_params(code_challenge=challenge))["code"]
    token = exchange(Client(), code, verifier).json()["refresh_token"]
    answer["refreshes"].append(race(lambda client: refresh(client, token)))
print(json.dumps(answer))
"""


def test_racing_token_requests_keep_their_rules_on_sqlite(make_run):
    answer = run_script(CLI_RACES, make_run)

    # one wins, the other is refused (invalid_grant), never "database is locked" (500)
    assert answer["exchanges"] == [[200, 400]] * 8
    assert answer["refreshes"] == [[200, 400]] * 8


# The journal and the webhook deliveries as the worker of `make run` runs them: the tasks'
# services called in-process (the same code the Celery worker runs), sending to a local receiver
# whose first answer is a 500, so a retry, its outcome record and a replay run too.
EVENTS_AND_WEBHOOKS = """
import json, threading, django
django.setup()
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from django.test import Client
from django.utils import timezone
from accounts.abilities import ALL
from accounts.models import User
from accounts.services import api_key_create
from orders.services import order_complete, order_place
from stores.models import Store
from webhooks.attempts import delivery_send, destination_drain
from webhooks.models import WebhookDelivery, WebhookDestination

received, statuses = [], [500]


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        signed = self.headers.get("webhook-signature", "").startswith("v1,")
        received.append([self.headers.get("webhook-id"), body["id"], signed])
        self.send_response(statuses.pop(0) if statuses else 200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
threading.Thread(target=server.serve_forever, daemon=True).start()
user = User.objects.get(username="demo")
store = Store.objects.get(slug="demo-store")
_, key = api_key_create(user=user, name="smoke", abilities=[ALL], current_store=store)
client = Client(HTTP_AUTHORIZATION=f"Bearer {key}")
answer = {}
answer["destination"] = client.put(
    "/api/v2/webhook-destination",
    {"url": f"http://127.0.0.1:{server.server_port}/hook", "event_types": ["order.completed"]},
    content_type="application/json",
).status_code
for subtotal in (1000, 2000, 3000):
    order_complete(order=order_place(store=store, subtotal_cents=subtotal))

# the journal, walked page by page with its cursors
pages, cursor = [], ""
for _ in range(4):
    page = client.get(f"/api/v2/events?limit=2&type=order.completed{cursor}").json()
    pages.append([event["id"] for event in page["data"]])
    cursor = "&cursor=" + page["meta"]["next_cursor"]
answer["pages"] = pages

# the drain claims and sends each due delivery; the first answer (500) schedules a retry
destination = WebhookDestination.objects.get(store=store)
answer["drained"] = destination_drain(destination_id=destination.pk)
answer["after_drain"] = sorted(WebhookDelivery.objects.values_list("status", flat=True))
retry = WebhookDelivery.objects.get(status="pending")
WebhookDelivery.objects.filter(pk=retry.pk).update(next_attempt_at=timezone.now())
answer["retried"] = delivery_send(delivery_id=retry.pk)
listed = client.get("/api/v2/webhook-deliveries?limit=2").json()
answer["listed"] = [len(listed["data"]), listed["meta"]]
answer["attempts_of_retried"] = client.get(f"/api/v2/webhook-deliveries/{retry.pk}").json()[
    "data"
]["attempts"]
replayed = client.post(f"/api/v2/webhook-deliveries/{retry.pk}/replay", {},
                       content_type="application/json")
answer["replay"] = replayed.status_code
answer["metrics_pending"] = [
    line for line in Client().get("/metrics").content.decode().splitlines()
    if line.startswith(("storefront_metrics_backlog_up", "storefront_webhook_deliveries_pending"))
]
answer["replay_sent"] = delivery_send(delivery_id=replayed.json()["data"]["id"])
answer["received"] = received
print(json.dumps(answer))
"""


def test_events_and_webhook_deliveries_work_on_sqlite(make_run):
    answer = run_script(EVENTS_AND_WEBHOOKS, make_run)

    assert answer["destination"] == 201
    first, second, after_end, idle = answer["pages"]
    assert (len(first), len(second), after_end, idle) == (2, 1, [], [])
    events = first + second
    assert len(set(events)) == 3
    assert answer["drained"] == 3
    assert answer["after_drain"] == ["pending", "succeeded", "succeeded"]
    assert answer["retried"] == "succeeded"
    assert answer["listed"][0] == 2
    assert answer["attempts_of_retried"] == 2
    assert answer["replay"] == 201
    assert sorted(answer["metrics_pending"]) == [
        "storefront_metrics_backlog_up 1.0",
        "storefront_webhook_deliveries_pending 1.0",
    ]
    assert answer["replay_sent"] == "succeeded"
    # every attempt reached the receiver signed, the replay with the same event (and webhook-id)
    received = answer["received"]
    assert [event for _, event, _ in received[:3]] == events
    assert all(signed and webhook_id == event for webhook_id, event, signed in received)
    assert [event for _, event, _ in received[3:]] == [received[0][1], received[0][1]]


# What beat schedules, run in-process on data each task has work in: old events (pruned in
# batches taken with SKIP LOCKED on PostgreSQL), an expired code and token family, a due
# webhook delivery the sweep queues on the filesystem broker.
MAINTENANCE = """
import json, django
django.setup()
from datetime import timedelta
from django.conf import settings
from django.test import Client
from django.utils import timezone
from oauth2_provider.models import get_grant_model
from config.celery import app
from accounts.models import User
from events.models import Event
from oauth_cli.models import TokenFamily
from orders.services import order_complete, order_place
from stores.models import Store
from tests.oauth_cli.flow import approve, authorize_params, connect
from webhooks.models import WebhookDelivery, WebhookDestination

user = User.objects.get(username="demo")
store = Store.objects.get(slug="demo-store")
WebhookDestination.objects.create(
    store=store, url="http://127.0.0.1:9/hook", secret="whsec_" + "A" * 43,
    event_types=["order.completed"],
)
for subtotal in (1000, 2000):
    order_complete(order=order_place(store=store, subtotal_cents=subtotal))
long_ago = timezone.now() - timedelta(days=settings.EVENTS_RETENTION_DAYS + 1)
Event.objects.filter(pk=Event.objects.order_by("txid").values("pk")[:1]).update(
    occurred_at=long_ago
)
browser = Client()
browser.force_login(user)
connect(browser)
approve(browser, authorize_params())
get_grant_model().objects.update(expires=long_ago)
TokenFamily.objects.update(expires_at=long_ago)
WebhookDelivery.objects.update(enqueued_at=None)  # as if their messages were lost

app.loader.import_default_modules()
ran = {}
for name, entry in settings.CELERY_BEAT_SCHEDULE.items():
    result = app.tasks[entry["task"]].apply(
        args=entry.get("args", ()), kwargs=entry.get("kwargs", {}), throw=False
    )
    ran[name] = [result.status, repr(result.result)]
print(json.dumps({
    "ran": ran,
    "events_left": Event.objects.count(),
    "codes_left": get_grant_model().objects.count(),
    "families_left": TokenFamily.objects.count(),
    "deliveries_queued": WebhookDelivery.objects.filter(enqueued_at__isnull=False).count(),
}))
"""


def test_the_maintenance_work_runs_on_sqlite(make_run):
    answer = run_script(MAINTENANCE, make_run)

    assert {name: status for name, (status, _) in answer["ran"].items()} == {
        name: "SUCCESS" for name in answer["ran"]
    }, answer["ran"]
    assert answer["ran"]["webhooks-deliveries-sweep"][1] == "1"  # the delivery left
    assert answer["events_left"] == 1
    assert answer["codes_left"] == 0
    assert answer["families_left"] == 0
    assert answer["deliveries_queued"] == 1
    # The list totals are PostgreSQL's (triggers); SQLite's lists count, and the command says so.
    recount = manage("recount_lists", environment=make_run)
    assert recount.returncode == 1
    assert "PostgreSQL only" in recount.stderr
