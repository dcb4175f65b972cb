"""Clients generated from /api/schema/ by tools we did not write, driving a real conversation
against the live test server: a Python client (openapi-python-client) and a TypeScript client
(openapi-typescript types + openapi-fetch, compiled by tsc and run by the machine's Node).

Both generators must run without a warning about the schema; every answer, errors included, is
read as the type the schema declares for its status."""

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest

from tests.factories import UserFactory, make_api_key

EXTERNAL = Path(__file__).resolve().parents[2] / "external"
NODE_BIN = EXTERNAL / "node_modules" / ".bin"
VENV_BIN = Path(sys.executable).parent
PAGE_ROWS = 40

pytestmark = pytest.mark.django_db(transaction=True)


def _run(command: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=180,
        env={
            **os.environ,
            # ruff, which openapi-python-client runs on what it generates
            "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "NO_UPDATE_NOTIFIER": "1",
            "REDOCLY_TELEMETRY": "off",
        },
        **kwargs,
    )


def _node_tool(name: str) -> str:
    binary = NODE_BIN / name
    if not binary.exists():
        pytest.fail(f"{binary} is missing: run `make test` (it runs npm ci in tests/external)")
    return str(binary)


@pytest.fixture
def conversation_user(settings):
    # One store creation is the conversation's own; the second one meets the 429.
    settings.STORE_CREATION_INTERVAL_SECONDS = 60
    user = UserFactory()
    return user, make_api_key(user)


# --- Python: openapi-python-client -------------------------------------------------------------


@pytest.fixture
def python_client(live_server, tmp_path, monkeypatch):
    package = tmp_path / "storefront_api_client"
    run = _run(
        [
            str(VENV_BIN / "openapi-python-client"),
            "generate",
            "--url",
            f"{live_server.url}/api/schema/",
            "--meta",
            "none",
            "--output-path",
            str(package),
            "--fail-on-warning",
        ]
    )
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    assert "warning" not in output.lower(), output
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [name for name in sys.modules if name.startswith("storefront_api_client")]:
        del sys.modules[name]
    import storefront_api_client

    return storefront_api_client


def test_python_client_conversation(live_server, python_client, conversation_user, receiver):
    from storefront_api_client import AuthenticatedClient
    from storefront_api_client.api.coupons import (
        coupons_create,
        coupons_destroy,
        coupons_list,
        coupons_retrieve,
        coupons_update,
    )
    from storefront_api_client.api.events import events_list
    from storefront_api_client.api.me import me_retrieve
    from storefront_api_client.api.stores import stores_create, stores_list, stores_retrieve
    from storefront_api_client.api.webhook_deliveries import (
        webhook_deliveries_list,
        webhook_deliveries_replay,
    )
    from storefront_api_client.api.webhook_destination import webhook_destination_put
    from storefront_api_client.models import (
        Coupon,
        CouponPercentageRequest,
        CouponPercentageTypeEnum,
        CouponsListOnlyTrashed,
        CouponsListWithTrashed,
        ErrorEnvelope,
        EventTypeEnum,
        MeResponse,
        PaginatedCouponList,
        PaginatedEventList,
        PaginatedWebhookDeliveryList,
        PatchedCouponWriteRequest,
        StoreCreatedResponse,
        StoreCreateRequest,
        StoreListResponse,
        StoreResponse,
        WebhookDeliveryReplayRequest,
        WebhookDeliveryReplayResponse,
        WebhookDestinationCreatedResponse,
        WebhookDestinationPutRequest,
    )
    from storefront_api_client.types import UNSET

    user, api_key = conversation_user
    client = AuthenticatedClient(base_url=live_server.url, token=api_key)

    def expect(response, status: int, model):
        assert response.status_code == status, response.content
        assert isinstance(response.parsed, model), response.parsed
        return response.parsed

    def expect_error(response, status: int, code: str) -> None:
        error = expect(response, status, ErrorEnvelope)
        assert (error.status, error.code) == (status, code)
        assert error.request_id == response.headers["X-Request-Id"]
        assert error.docs_url.endswith(f"/docs/errors#{code}")

    me = expect(me_retrieve.sync_detailed(client=client), 200, MeResponse)
    assert me.data.username == user.username
    assert expect(stores_list.sync_detailed(client=client), 200, StoreListResponse).data == []

    # a store, created with an Idempotency-Key, and the replay of that request
    new_store = StoreCreateRequest(name="Generated Python", slug="generated-python")
    key = f"create-{uuid.uuid4()}"
    created = stores_create.sync_detailed(client=client, body=new_store, idempotency_key=key)
    store = expect(created, 201, StoreCreatedResponse).data
    replayed = stores_create.sync_detailed(client=client, body=new_store, idempotency_key=key)
    assert expect(replayed, 201, StoreCreatedResponse).data.id == store.id
    assert replayed.headers["Idempotent-Replayed"] == "true"
    assert (
        expect(
            stores_retrieve.sync_detailed(int(store.id), client=client), 200, StoreResponse
        ).data.slug
        == "generated-python"
    )
    in_store = {"client": client, "x_store": store.slug}

    # 409: the same key with another body; 429: a second store within the minute
    other = StoreCreateRequest(name="Other", slug="generated-other")
    expect_error(
        stores_create.sync_detailed(client=client, body=other, idempotency_key=key), 409, "conflict"
    )
    expect_error(
        stores_create.sync_detailed(client=client, body=other, idempotency_key=f"k-{uuid.uuid4()}"),
        429,
        "rate_limit_exceeded",
    )

    channel = WebhookDestinationPutRequest(
        url=receiver.url, event_types=[EventTypeEnum.COUPON_CREATED]
    )
    put = webhook_destination_put.sync_detailed(body=channel, **in_store)
    assert expect(put, 201, WebhookDestinationCreatedResponse).data.secret

    # coupon CRUD, and a 40-row list read page by page through links.next
    coupons = [
        expect(
            coupons_create.sync_detailed(
                body=CouponPercentageRequest(
                    code=f"PY{number:02d}",
                    type_=CouponPercentageTypeEnum.PERCENTAGE,
                    discount=10,
                    store_wide=True,
                ),
                **in_store,
            ),
            201,
            Coupon,
        )
        for number in range(PAGE_ROWS)
    ]
    first = coupons[0]
    assert expect(coupons_retrieve.sync_detailed(first.id, **in_store), 200, Coupon).code == "PY00"
    changed = coupons_update.sync_detailed(
        first.id, body=PatchedCouponWriteRequest(discount=25), **in_store
    )
    assert expect(changed, 200, Coupon).discount == "25.00"
    assert coupons_destroy.sync_detailed(first.id, **in_store).status_code == 204
    expect_error(coupons_retrieve.sync_detailed(first.id, **in_store), 404, "resource_not_found")
    trashed = coupons_list.sync_detailed(only_trashed=CouponsListOnlyTrashed.TRUE, **in_store)
    assert [coupon.id for coupon in expect(trashed, 200, PaginatedCouponList).data] == [first.id]

    seen, pages = [], 0
    page = expect(
        coupons_list.sync_detailed(limit=15, with_trashed=CouponsListWithTrashed.TRUE, **in_store),
        200,
        PaginatedCouponList,
    )
    while True:
        pages += 1
        seen += [coupon.id for coupon in page.data]
        if page.links.next_ is None:
            break
        query = dict(parse_qsl(urlsplit(page.links.next_).query))
        page = expect(
            coupons_list.sync_detailed(
                limit=int(query["limit"]),
                page=int(query["page"]),
                with_trashed=CouponsListWithTrashed(query["with_trashed"]),
                **in_store,
            ),
            200,
            PaginatedCouponList,
        )
    assert (pages, sorted(seen)) == (3, sorted(coupon.id for coupon in coupons))

    # the event journal, polled until has_more is false
    events, cursor = [], None
    while True:
        polled = expect(
            events_list.sync_detailed(limit=7, cursor=cursor or UNSET, **in_store),
            200,
            PaginatedEventList,
        )
        events += polled.data
        cursor = polled.meta.next_cursor
        if not polled.meta.has_more:
            break
    types = [event.type_ for event in events]
    assert types.count("coupon.created") == PAGE_ROWS
    assert types[-2:] == ["coupon.updated", "coupon.deleted"]

    # a delivery replayed, with an Idempotency-Key
    listed = expect(
        webhook_deliveries_list.sync_detailed(**in_store), 200, PaginatedWebhookDeliveryList
    )
    assert listed.meta.total == PAGE_ROWS
    deliveries = listed.data
    replay = webhook_deliveries_replay.sync_detailed(
        uuid.UUID(deliveries[0].id),
        body=WebhookDeliveryReplayRequest(),
        idempotency_key=f"replay-{uuid.uuid4()}",
        **in_store,
    )
    replayed_delivery = expect(replay, 201, WebhookDeliveryReplayResponse).data
    assert replayed_delivery.event_id == deliveries[0].event_id
    assert replayed_delivery.id != deliveries[0].id

    # the remaining error statuses, each read as the declared ErrorEnvelope
    anonymous = AuthenticatedClient(base_url=live_server.url, token="sf_not_a_key")
    expect_error(me_retrieve.sync_detailed(client=anonymous), 401, "unauthenticated")
    read_only = AuthenticatedClient(
        base_url=live_server.url, token=make_api_key(user, abilities=("account:read",))
    )
    expect_error(coupons_list.sync_detailed(client=read_only, x_store=store.slug), 403, "forbidden")
    invalid = coupons_create.sync_detailed(
        body=CouponPercentageRequest(
            code="PY01", type_=CouponPercentageTypeEnum.PERCENTAGE, discount=10, store_wide=True
        ),
        **in_store,
    )
    expect_error(invalid, 422, "validation_failed")
    assert "code" in invalid.parsed.errors.additional_properties


# --- TypeScript: openapi-typescript + openapi-fetch --------------------------------------------


@pytest.fixture
def typescript_conversation(live_server, tmp_path):
    build = EXTERNAL / "build"
    build.mkdir(exist_ok=True)
    generated = _run(
        [
            _node_tool("openapi-typescript"),
            f"{live_server.url}/api/schema/",
            "--redocly",
            "redocly.yaml",
            "--output",
            "build/schema.d.ts",
        ],
        cwd=EXTERNAL,
    )
    output = generated.stdout + generated.stderr
    assert generated.returncode == 0, output
    # openapi-typescript lints first and prints each finding with ⚠ (warning) or ✘ (error)
    assert "⚠" not in output and "✘" not in output, output
    compiled = _run([_node_tool("tsc"), "--project", "tsconfig.json"], cwd=EXTERNAL)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    return build / "conversation.mjs"


def test_typescript_client_conversation(
    live_server, typescript_conversation, conversation_user, receiver
):
    user, api_key = conversation_user
    read_only_key = make_api_key(user, abilities=("account:read",))
    run = _run(
        ["node", str(typescript_conversation)],
        cwd=EXTERNAL,
        input=json.dumps(
            {
                "baseUrl": live_server.url,
                "apiKey": api_key,
                "readOnlyKey": read_only_key,
                "username": user.username,
                "receiverUrl": receiver.url,
                "rows": PAGE_ROWS,
            }
        ),
    )
    assert run.returncode == 0, run.stdout + run.stderr
    summary = json.loads(run.stdout.strip().splitlines()[-1])
    assert summary == {
        "pages": 3,
        "listed": PAGE_ROWS,
        "events": PAGE_ROWS + 2,
        "replayed": True,
        "errors": [401, 403, 404, 409, 422, 429],
    }
