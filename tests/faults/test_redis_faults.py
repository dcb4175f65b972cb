"""Redis stopped mid-load: gunicorn under the production settings and a real
Celery worker (with its embedded beat, which runs the delivery sweeper) on a Redis of this
test's own, stopped for OUTAGE_SECONDS while paced API clients, a sign-in prober and a webhook
receiver run, then started again, empty, on the same port.

What is documented and checked (docs/conventions.md, docs/decisions/hardening.md "Sign-in while
Redis is down", docs/decisions/webhooks.md):
- API-key requests keep answering: the rate limiter fails open (served, no X-RateLimit-*
  headers, not even for a credential over its budget) and counts again after Redis returns;
- a sign-in on either sign-in page fails closed: the 503 "Sign-in is temporarily unavailable"
  page with Retry-After: 30 and no session, and signs in again after Redis returns;
- webhook deliveries are rows in PostgreSQL: events recorded while the broker is gone are
  delivered after it returns (claimed by the next drain of their channel, which a later
  event or the sweeper queues), each exactly once.

The figures are printed (`-s` shows them); docs/benchmarks/faults-redis.md records a run.
"""

import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
from django.contrib.auth.hashers import PBKDF2PasswordHasher
from django.db import connection

from core.api.ratelimit import OUTAGE_PAUSE_SECONDS
from events.models import Event
from tests.factories import MembershipFactory, UserFactory, make_api_key
from tests.faults.redis_helpers import (
    AnswerLog,
    PacedLoop,
    SignInBrowser,
    WorkerOnRedis,
    running,
    timed,
)
from tests.servers import Gunicorn, wait_for
from tests.settings_helpers import ROOT
from tests.webhooks.helpers import channel_for
from webhooks.models import WebhookDelivery

pytestmark = [pytest.mark.faults, pytest.mark.worker, pytest.mark.django_db(transaction=True)]

RATE_LIMIT = 200  # API_RATE_LIMIT_PER_MINUTE of the web processes
LOAD_THREADS = 6  # one API key each
LOAD_RATE = 2.5  # requests per second per thread: 150 a minute, under RATE_LIMIT
OUTAGE_SECONDS = 6.0  # longer than the limiter's 5 s pause: every web process asks Redis again
BEFORE_SECONDS = 2.0
SIGN_IN_PAGES = ("/accounts/login/", "/admin/login/")
PASSWORD = "password"  # tests.factories.UserFactory's
LOAD_DEADLINE = 90.0  # no loop of this test runs longer than this


def database_url() -> str:
    settings_dict = connection.settings_dict  # the test database, as CeleryWorker.env does
    return (
        f"postgres://{settings_dict['USER']}@{settings_dict['HOST']}:{settings_dict['PORT']}"
        f"/{settings_dict['NAME']}"
    )


@pytest.fixture
def web(transactional_db, redis_server, tmp_path):
    """gunicorn under config.settings.production (docs/production.md), plain HTTP on
    loopback: SSL redirect and Secure cookies off, as behind a proxy terminating TLS."""
    workdir = tmp_path / "web"
    (workdir / "prometheus").mkdir(parents=True)
    server = Gunicorn(
        workdir / "gunicorn.log",
        workers=2,
        SECURE_COOKIES="false",
        DATABASE_URL=database_url(),
        REDIS_URL=redis_server.url,
        API_RATE_LIMIT_PER_MINUTE=str(RATE_LIMIT),
        STATIC_ROOT=str(workdir / "static"),
        PROMETHEUS_MULTIPROC_DIR=str(workdir / "prometheus"),
        LOG_FORMAT="plain",
    )
    collected = subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput"],
        cwd=ROOT,
        env=server.environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert collected.returncode == 0, collected.stdout + collected.stderr
    with server:
        yield server


@pytest.fixture
def worker(transactional_db, redis_server, tmp_path):
    log_dir = tmp_path / "worker"
    log_dir.mkdir()
    process = WorkerOnRedis(log_dir, redis_server.url)
    process.start()
    yield process
    process.stop()


def api_session(key: str) -> requests.Session:
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {key}"
    return session


def load_step(log: AnswerLog, base: str, session: requests.Session, thread: int):
    """GET /api/v2/me, the coupon list, a coupon create, in turn."""

    def step(number: int):
        kind = number % 3
        if kind == 0:
            timed(log, "GET /api/v2/me", lambda: session.get(f"{base}/api/v2/me", timeout=30))
        elif kind == 1:
            timed(
                log,
                "GET /api/v1/coupons",
                lambda: session.get(f"{base}/api/v1/coupons?limit=15", timeout=30),
            )
        else:
            code = f"FAULT{thread}X{number}"
            timed(
                log,
                "POST /api/v1/coupons",
                lambda: session.post(
                    f"{base}/api/v1/coupons",
                    json={"code": code, "type": "AMOUNT", "discount": 5, "store_wide": True},
                    timeout=30,
                ),
                describe=lambda r: {"coupon_id": r.json()["id"]} if r.status_code == 201 else {},
            )

    return step


def exhaust(base: str, key: str) -> int:
    """Spends the key's budget of this minute; returns how many requests it took."""
    over = threading.Event()
    sent = Counter()

    def spend(_):
        with api_session(key) as session:
            for _ in range(RATE_LIMIT):
                if over.is_set():
                    return
                response = session.get(f"{base}/api/v2/me", timeout=30)
                sent["requests"] += 1
                if response.status_code == 429:
                    over.set()

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(spend, range(4)))
    assert over.is_set(), "the key's budget was not spent"
    return sent["requests"]


def phase_of(answer, stopping: float, down: float, starting: float, up: float) -> str:
    """Before: ended before Redis was asked to stop; during: started once it no longer
    answered, ended before it was asked to start again (an answer between that and the first
    PING is served by the restarted Redis); after: started once it answered."""
    if answer.ended < stopping:
        return "before"
    if answer.started >= down and answer.ended <= starting:
        return "during"
    if answer.started >= up:
        return "after"
    return "edge"  # in flight while Redis stopped or started: counted, not classified


def latency_ms(answers) -> str:
    values = sorted((a.ended - a.started) * 1000 for a in answers)
    if not values:
        return "-"
    p99 = values[min(len(values) - 1, int(len(values) * 0.99))]
    return f"p50 {statistics.median(values):.0f} ms, p99 {p99:.0f} ms, max {values[-1]:.0f} ms"


def print_phases(answers, stopping: float, down: float, starting: float, up: float) -> None:
    phases = {}
    for answer in answers:
        phase = phase_of(answer, stopping, down, starting, up)
        phases.setdefault((answer.operation, phase), []).append(answer)
    for (operation, phase), group in sorted(phases.items()):
        statuses = dict(sorted(Counter(a.status for a in group).items(), key=str))
        headers = sum(a.rate_limit_headers for a in group)
        print(
            f"{operation:28} {phase:6} {len(group):4} answers {statuses} "
            f"X-RateLimit on {headers}; {latency_ms(group)}"
        )


LOAD_OPERATIONS = ("GET /api/v2/me", "GET /api/v1/coupons", "POST /api/v1/coupons")


def test_redis_stopped_mid_load(redis_server, web, worker, receiver):
    owner = UserFactory(is_staff=True)
    # The factory's hash is the test settings' MD5, which production does not accept.
    owner.password = PBKDF2PasswordHasher().encode(PASSWORD, PBKDF2PasswordHasher().salt())
    owner.save(update_fields=["password"])
    store = MembershipFactory(user=owner).store
    channel_for(store, receiver.url, event_types=["coupon.created"])
    base = web.base
    log = AnswerLog()
    stop_load = threading.Event()
    sessions = [api_session(make_api_key(owner)) for _ in range(LOAD_THREADS)]
    load = [
        PacedLoop(load_step(log, base, sessions[n], n), LOAD_RATE, stop_load, LOAD_DEADLINE)
        for n in range(LOAD_THREADS)
    ]
    over_budget_key = make_api_key(owner)
    over_budget = api_session(over_budget_key)
    over_budget_probe = PacedLoop(
        lambda n: timed(
            log,
            "over-budget GET /api/v2/me",
            lambda: over_budget.get(f"{base}/api/v2/me", timeout=30),
        ),
        2.0,
        stop_load,
        LOAD_DEADLINE,
    )
    stop_sign_ins = threading.Event()
    browsers = {
        path: SignInBrowser(log, base, path, owner.username, PASSWORD) for path in SIGN_IN_PAGES
    }
    sign_in_probe = PacedLoop(
        lambda n: browsers[SIGN_IN_PAGES[n % 2]](),
        2.0,
        stop_sign_ins,
        LOAD_DEADLINE,
    )

    with running([*load, over_budget_probe], stop_load):
        time.sleep(BEFORE_SECONDS)
        for path in SIGN_IN_PAGES:
            browsers[path]()
        # The over-budget key must still be over when Redis stops: not at a window's end.
        if time.time() % 60 > 48:
            time.sleep(60.5 - time.time() % 60)
        spent = exhaust(base, over_budget_key)
        time.sleep(1.0)

        stopping = time.time()
        redis_server.stop()
        down = time.time()
        with running([sign_in_probe], stop_sign_ins):
            time.sleep(OUTAGE_SECONDS)
            starting = time.time()
            redis_server.start()
            up = time.time()

            def recovered():
                answers = [a for a in log.all() if a.started >= up]
                signed_in = {a.operation for a in answers if a.status == 302}
                recent = [
                    a
                    for a in answers
                    if a.operation in LOAD_OPERATIONS and a.started >= time.time() - 2.0
                ]
                return (
                    signed_in == {f"POST {path}" for path in SIGN_IN_PAGES}
                    and time.time() - up > 2.0
                    and recent
                    and all(a.rate_limit_headers for a in recent)
                )

            try:
                wait_for(recovered, timeout=40, interval=0.25, what="sign-in and limits back")
            except AssertionError:
                print_phases(log.all(), stopping, down, starting, up)
                raise
        time.sleep(1.0)
    for thread in [*load, over_budget_probe, sign_in_probe]:
        assert thread.error is None, repr(thread.error)

    # Every coupon.created event reaches the receiver once Redis is back.
    events = dict(
        Event.objects.filter(store=store, type="coupon.created").values_list("subject_id", "id")
    )
    expected = set(events.values())

    def all_delivered():
        received = {r.headers["webhook-id"] for r in receiver.received()}
        settled = not WebhookDelivery.objects.exclude(status="succeeded").exists()
        return expected <= received and settled

    wait_for(all_delivered, timeout=60, interval=0.2, what="every event delivered")
    time.sleep(1.0)  # a late second send would show up here
    received = receiver.received()
    per_event = Counter(r.headers["webhook-id"] for r in received)
    answers = log.all()

    # --- figures ----------------------------------------------------------------------------
    during_events = {
        events[str(a.detail["coupon_id"])]
        for a in answers
        if "coupon_id" in a.detail and phase_of(a, stopping, down, starting, up) == "during"
    }
    during_received = [r.received_at for r in received if r.headers["webhook-id"] in during_events]
    api = [a for a in answers if a.operation in LOAD_OPERATIONS]
    limits_back = min(
        (a.started for a in api if a.started >= up and a.rate_limit_headers), default=None
    )
    sign_in_back = {
        path: min(
            (a.started for a in answers
             if a.operation == f"POST {path}" and a.started >= up and a.status == 302),
            default=None,
        )
        for path in SIGN_IN_PAGES
    }  # fmt: skip
    web_log = web.log_path.read_text()
    log_lines = {
        text: web_log.count(text)
        for text in (
            "rate limiter unavailable",
            "sign-in refused",
            "task broker unavailable",
            "not queued; the sweeper will",
            "Internal Server Error",
        )
    }
    print(f"\nRedis stopped for {up - down:.1f} s; over-budget key spent after {spent} requests")
    print_phases(answers, stopping, down, starting, up)

    def after_up(moment):
        return "never" if moment is None else f"{moment - up:.1f} s after Redis returned"

    print(f"rate limits counted again {after_up(limits_back)}")
    for path, at in sign_in_back.items():
        print(f"sign-in at {path} again {after_up(at)}")
    print(
        f"webhooks: {len(expected)} events, {len(during_events)} recorded during the outage, "
        f"{len(received)} requests received, {len(per_event)} distinct webhook-ids, "
        f"duplicates {sum(n - 1 for n in per_event.values())}, "
        f"lost {len(expected - set(per_event))}"
    )
    print(
        f"outage events delivered: first {after_up(min(during_received, default=None))}, "
        f"last {after_up(max(during_received, default=None))}; "
        f"worker started {worker.starts} time(s)"
    )
    print(f"web log lines: {log_lines}")

    # --- API keys: answered throughout, the limiter failing open ---------------------------
    assert {a.status for a in api} <= {200, 201}, Counter((a.operation, a.status) for a in api)
    during_api = [a for a in api if phase_of(a, stopping, down, starting, up) == "during"]
    for operation in LOAD_OPERATIONS:
        assert any(a.operation == operation for a in during_api), operation
    assert not any(a.rate_limit_headers for a in during_api)  # nothing counted, nothing refused
    assert all(
        a.rate_limit_headers for a in api if phase_of(a, stopping, down, starting, up) == "before"
    )
    assert limits_back is not None and limits_back - up < OUTAGE_PAUSE_SECONDS + 10
    over = [a for a in answers if a.operation == "over-budget GET /api/v2/me"]
    assert any(
        a.status == 429 for a in over if phase_of(a, stopping, down, starting, up) == "before"
    )
    over_during = [a for a in over if phase_of(a, stopping, down, starting, up) == "during"]
    assert over_during and {a.status for a in over_during} == {200}  # fail open

    # --- sign-in: fails closed with the 503 page, works again after -------------------------
    for path in SIGN_IN_PAGES:
        posts = [a for a in answers if a.operation == f"POST {path}"]
        assert [
            a.status for a in posts if phase_of(a, stopping, down, starting, up) == "before"
        ] == [302]
        during = [a for a in posts if phase_of(a, stopping, down, starting, up) == "during"]
        assert during, path
        for answer in during:
            assert answer.status == 503, (path, answer)
            assert answer.detail["unavailable_page"] and answer.detail["retry_after"] == "30"
            assert not answer.detail["session_cookie"]
        # the page itself is the 503 page meanwhile: no form that cannot be submitted
        pages = [a for a in answers if a.operation == f"GET {path}"]
        assert {
            a.status for a in pages if phase_of(a, stopping, down, starting, up) == "before"
        } == {200}
        assert {
            a.status for a in pages if phase_of(a, stopping, down, starting, up) == "during"
        } == {503}
        assert sign_in_back[path] is not None and sign_in_back[path] - up < 15

    # --- the worker lived through it (config/broker.py): no restart by a supervisor --------
    assert worker.process.poll() is None and worker.starts == 1
    assert "Unrecoverable error" not in worker.log_path.read_text(errors="replace")

    # --- webhooks: delayed, not lost, not doubled ------------------------------------------
    assert during_events, "no event was recorded during the outage"
    assert set(per_event) == expected
    assert per_event.most_common(1)[0][1] == 1, per_event.most_common(3)
    assert min(during_received) - up < 30

    # --- the web log: one line per pause and process, not per request; no 500 -------------
    assert log_lines["Internal Server Error"] == 0
    pauses = web.workers * (OUTAGE_SECONDS / OUTAGE_PAUSE_SECONDS + 2)
    assert 1 <= log_lines["rate limiter unavailable"] <= pauses, log_lines
    # the task publisher pauses too: no line (and no connection timeout) per request
    assert 1 <= log_lines["task broker unavailable"] <= pauses, log_lines
    assert log_lines["not queued; the sweeper will"] == 0, log_lines
    assert log_lines["sign-in refused"] == sum(
        a.status == 503 for a in answers if a.operation.startswith("POST")
    )
