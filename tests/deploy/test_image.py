"""The image as operators run it: built from this checkout, its web command, worker
and beat served against real PostgreSQL and Redis (tests/deploy/conftest.py), scraped by a real
Prometheus running the dashboard's queries and the alert rules (deploy/), and compose.yaml read
by a real compose implementation. No ERROR line in any container's log."""

import json
import re
import subprocess
import time

import pytest
import requests
import yaml

from tests.deploy.image import METRICS_TOKEN, OPERATOR_ENVIRONMENT, compose_config, image_command
from tests.servers import answers, free_port, stop_process, wait_for
from tests.settings_helpers import ROOT

pytestmark = pytest.mark.image

DEPLOY = ROOT / "deploy"


def test_the_image_is_ready_serves_the_admins_css_and_answers_an_api_key(served_image):
    ready = served_image.get("/readyz")
    assert ready.status_code == 200, ready.text
    assert set(ready.json()["checks"]) == {"database", "cache", "broker"}

    login = served_image.get("/admin/login/")
    assert login.status_code == 200
    (stylesheet,) = re.findall(r'href="(/static/admin/css/base\.[0-9a-f]+\.css)"', login.text)
    css = served_image.get(stylesheet)
    assert css.status_code == 200
    assert css.headers["Content-Type"].startswith("text/css")

    stores = served_image.api("GET", "/api/v2/stores")
    assert stores.status_code == 200, stores.text
    assert [store["slug"] for store in stores.json()["data"]] == ["image-store"]


def create_coupon(served_image, code: str):
    created = served_image.api(
        "POST",
        "/api/v1/coupons",
        json={"code": code, "type": "PERCENTAGE", "discount": 10, "store_wide": True},
    )
    assert created.status_code == 201, created.text


def test_the_images_worker_delivers_a_webhook_to_a_real_receiver(served_image):
    # when: a coupon is created through the API (its event has a channel)
    before = len(served_image.receiver.received())
    create_coupon(served_image, "IMAGE10")

    # then: the image's worker posts it, signed
    wait_for(
        lambda: len(served_image.receiver.received()) > before,
        timeout=30,
        what="the image's worker posting the coupon's event",
        log=lambda: served_image.processes["worker"].log()[-3000:],
    )
    delivery = served_image.receiver.received()[-1]
    assert json.loads(delivery.body)["type"] == "coupon.created"
    assert delivery.headers["webhook-signature"].startswith("v1,")


def test_compose_commands_are_the_ones_the_image_ran(served_image):
    services = yaml.safe_load(compose_config(OPERATOR_ENVIRONMENT).stdout)["services"]

    for name in ("migrate", "worker", "beat"):
        assert services[name]["command"] == served_image.commands[name]
    # The web service runs the image's command; the test changed only the address it binds.
    assert "command" not in services["web"]
    ran = served_image.commands["web"]
    bind = ran.index("--bind")
    assert ran[:bind] + ran[bind + 2 :] == [
        arg for i, arg in enumerate(image_command()) if i not in (bind, bind + 1)
    ]


def test_compose_stops_at_each_missing_required_variable_with_its_message():
    required = {k: v for k, v in OPERATOR_ENVIRONMENT.items() if k != "WORKER_CONCURRENCY"}
    for name in required:
        result = compose_config({k: v for k, v in required.items() if k != name})

        assert result.returncode != 0, f"compose.yaml does not require {name}"
        assert f"set {name}" in result.stderr, result.stderr


# -- a real Prometheus ----------------------------------------------------------------------


def dashboard_queries() -> list[tuple[str, str]]:
    dashboard = json.loads((DEPLOY / "grafana-dashboard.json").read_text())
    return [
        (panel["title"], target["expr"])
        for panel in dashboard["panels"]
        for target in panel["targets"]
    ]


def alert_expressions() -> list[tuple[str, str]]:
    rules = yaml.safe_load((DEPLOY / "alerts.yml").read_text())
    return [(rule["alert"], rule["expr"]) for group in rules["groups"] for rule in group["rules"]]


METRIC_NAME = re.compile(r"\b((?:storefront|django)_[a-z0-9_]+)")


@pytest.fixture
def prometheus(served_image, tmp_path):
    """Debian's Prometheus scraping the image's /metrics every second with the bearer token,
    configured from deploy/prometheus.yml (target and token file replaced)."""
    config = yaml.safe_load((DEPLOY / "prometheus.yml").read_text())
    config["global"] = {"scrape_interval": "1s", "evaluation_interval": "1s"}
    config["rule_files"] = [str(DEPLOY / "alerts.yml")]
    (job,) = config["scrape_configs"]
    (tmp_path / "token").write_text(METRICS_TOKEN)
    job["authorization"]["credentials_file"] = str(tmp_path / "token")
    job["static_configs"] = [{"targets": [served_image.base.removeprefix("http://")]}]
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    log = (tmp_path / "prometheus.log").open("wb")
    process = subprocess.Popen(
        [
            "prometheus",
            f"--config.file={tmp_path / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp_path / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"

    try:
        wait_for(
            lambda: answers(base + "/-/ready"),
            timeout=60,
            what="Prometheus ready",
            process=process,
            log=(tmp_path / "prometheus.log").read_text,
        )
        yield base
    finally:
        stop_process(process)
        log.close()


def query(prometheus: str, expression: str) -> dict:
    answer = requests.get(prometheus + "/api/v1/query", params={"query": expression}, timeout=10)
    body = answer.json()
    assert body["status"] == "success", (expression, body)
    return body["data"]


def sign_in_until_locked_out(served_image) -> None:
    """Two wrong passwords (LOGIN_FAILURE_LIMIT is 1 here): the second answer is the lock-out.
    The CSRF cookie is Secure in production: sent back by hand over this plain HTTP."""
    for _ in range(2):
        page = requests.get(served_image.base + "/accounts/login/", timeout=10)
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
        answer = requests.post(
            served_image.base + "/accounts/login/",
            data={"csrfmiddlewaretoken": token, "username": "alice", "password": "wrong"},
            cookies={"csrftoken": page.cookies["csrftoken"]},
            timeout=10,
        )
    assert answer.status_code == 429, answer.text[:500]


def test_prometheus_scrapes_the_image_and_every_panel_and_alert_reads_real_series(
    served_image, prometheus
):
    # given: traffic, a lock-out and deliveries while Prometheus scrapes every second
    sign_in_until_locked_out(served_image)
    deadline = time.monotonic() + 12
    number = 0
    while time.monotonic() < deadline:
        number += 1
        create_coupon(served_image, f"SCRAPE{number}")
        served_image.api("GET", "/api/v2/stores")
        served_image.api("GET", "/api/v2/no-such-thing")
        time.sleep(0.5)
    wait_for(
        lambda: (
            query(prometheus, 'up{job="storefront"}')["result"]
            and query(prometheus, 'up{job="storefront"}')["result"][0]["value"][1] == "1"
        ),
        timeout=30,
        what="Prometheus scraping the image (up == 1)",
    )
    names = set(
        requests.get(prometheus + "/api/v1/label/__name__/values", timeout=10).json()["data"]
    )

    # then: every panel's query names series that exist and returns data
    for title, expression in dashboard_queries():
        missing = set(METRIC_NAME.findall(expression)) - names
        assert not missing, f"panel {title!r} names metrics that do not exist: {missing}"
        assert query(prometheus, expression)["result"], f"panel {title!r} has no data"
    # every alert expression parses and names series that exist
    for alert, expression in alert_expressions():
        missing = set(METRIC_NAME.findall(expression)) - names
        assert not missing, f"alert {alert} names metrics that do not exist: {missing}"
        query(prometheus, expression)
    # and Prometheus evaluates the rule file without error
    groups = requests.get(prometheus + "/api/v1/rules", timeout=10).json()["data"]["groups"]
    rules = [rule for group in groups for rule in group["rules"]]
    assert len(rules) == len(alert_expressions())
    assert all(rule["health"] == "ok" for rule in rules), rules


def test_no_container_logged_an_error(served_image):
    for name, process in served_image.processes.items():
        assert process.error_lines() == [], f"{name}:\n" + "\n".join(process.error_lines())
