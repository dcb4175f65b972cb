"""The request id follows a request into a real Celery worker: the webhook
delivery a request schedules is attempted in a task whose log lines carry that request's id."""

import json

import pytest

from core.api.middleware import RequestIdLogFilter
from tests.servers import wait_for
from tests.webhooks.helpers import CeleryWorker, channel_for
from webhooks.models import WebhookDelivery

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


class JsonLogWorker(CeleryWorker):
    def env(self) -> dict:
        return {**super().env(), "LOG_FORMAT": "json"}

    def json_lines(self) -> list[dict]:
        lines = []
        for line in self.log_path.read_text().splitlines():
            # Celery prints its banner to the console before logging is configured.
            if line.startswith("{"):
                lines.append(json.loads(line))
        return lines


@pytest.fixture(scope="module")
def json_log_worker(django_db_setup, django_db_blocker, tmp_path_factory):
    from config.celery import app

    app.control.purge()
    worker = JsonLogWorker(tmp_path_factory.mktemp("celery-logs"), concurrency=1)
    with django_db_blocker.unblock():
        worker.start()
    yield worker
    worker.stop()


def test_the_request_id_reaches_the_workers_attempt_log_line(
    json_log_worker, receiver, store, api_key, auth_client
):
    # given: the store's webhook destination listens to coupon.created
    channel_for(store, receiver.url, event_types=["coupon.created"])
    code = "WORKERLOG1"

    # when: a request creates a coupon (its event schedules a delivery on commit)
    response = auth_client.post(
        "/api/v1/coupons",
        {"code": code, "type": "PERCENTAGE", "discount": 15, "store_wide": True},
        HTTP_X_STORE=store.slug,
    )
    assert response.status_code == 201
    request_id = response["X-Request-Id"]

    # then: the worker's attempt line carries the request id, and names the delivery
    def attempt_lines():
        return [
            line
            for line in json_log_worker.json_lines()
            if line.get("request_id") == request_id
            and line["logger"] == "webhooks.dispatch.attempts"
        ]

    [attempt] = wait_for(attempt_lines, timeout=30, what="the attempt's log line")
    delivery = WebhookDelivery.objects.get()
    assert attempt["delivery_id"] == str(delivery.pk)
    assert attempt["event_id"] == str(delivery.event_id)
    assert (attempt["attempt"], attempt["delivery_status"], attempt["response_status"]) == (
        1,
        "succeeded",
        200,
    )
    assert len(receiver.received()) == 1

    # and the task's own lines (Celery's) carry it too: one id finds the whole story. Celery
    # logs "Task ... succeeded" after the task returns, so it may come a moment after the attempt.
    def task_lines():
        return [
            line
            for line in json_log_worker.json_lines()
            if line.get("request_id") == request_id and line["logger"].startswith("celery")
        ]

    wait_for(task_lines, timeout=30, what="Celery's task log line")
    # and nothing secret went into the worker's log (API key, body, channel URL path)
    worker_log = json_log_worker.log_path.read_text()
    assert api_key not in worker_log
    assert code not in worker_log
    assert "/hooks" not in worker_log


def test_the_request_that_created_a_delivery_logs_its_id(store, auth_client, receiver, caplog):
    """The link from a request to its deliveries: a drain queued by another request may make
    the attempt, so the creating request logs the delivery id with its own request id."""
    channel_for(store, receiver.url, event_types=["coupon.created"])

    caplog.handler.addFilter(RequestIdLogFilter())
    with caplog.at_level("INFO", logger="webhooks.deliveries.services"):
        response = auth_client.post(
            "/api/v1/coupons",
            {"code": "LINKED", "type": "PERCENTAGE", "discount": 5, "store_wide": True},
            HTTP_X_STORE=store.slug,
        )

    delivery = WebhookDelivery.objects.get()
    [record] = [r for r in caplog.records if getattr(r, "delivery_id", None) == str(delivery.pk)]
    assert record.request_id == response["X-Request-Id"]
    assert record.event_id == str(delivery.event_id)
