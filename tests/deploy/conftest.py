"""The image built from this checkout and served against the suite's PostgreSQL (a database of
its own) and Redis (a database number of its own): the migrate, worker and beat commands of
compose.yaml (as `docker-compose config` reads them), the web command of the image (its CMD on
a free loopback port), and a local webhook receiver. Shared by the tests of this folder."""

import os
import re
import secrets
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
import requests

from tests.deploy.image import (
    METRICS_TOKEN,
    OPERATOR_ENVIRONMENT,
    ImageProcess,
    build_image,
    compose_services,
    image_command,
    shared_directory,
)
from tests.servers import ThrowawayRedis, answers, free_port, wait_for
from tests.webhooks.helpers import Receiver


@dataclass
class ServedImage:
    base: str
    api_key: str
    store: str
    receiver: Receiver
    processes: dict[str, ImageProcess]
    commands: dict[str, list[str]]

    def get(self, path, **kwargs):
        return requests.get(self.base + path, timeout=10, **kwargs)

    def api(self, method, path, **kwargs):
        headers = {"Authorization": f"Bearer {self.api_key}", "X-STORE": self.store}
        return requests.request(method, self.base + path, headers=headers, timeout=10, **kwargs)


def own_database(name: str) -> str:
    url = os.environ["DATABASE_URL"]
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(f"DROP DATABASE IF EXISTS {name}")
        connection.execute(f"CREATE DATABASE {name}")
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


@pytest.fixture(scope="session")
def served_image(tmp_path_factory):
    if os.getuid() != 0:
        pytest.fail("tests/deploy builds and runs the image as root (CI runs `make test` so)")
    build_image()
    workdir = tmp_path_factory.mktemp("image")
    metrics_dir = shared_directory(workdir / "prometheus")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    environment = {
        "DJANGO_SETTINGS_MODULE": "config.settings.production",
        "SECRET_KEY": OPERATOR_ENVIRONMENT["SECRET_KEY"],
        "ALLOWED_HOSTS": "127.0.0.1",
        # The public root behind the TLS-terminating proxy (production refuses plain http).
        "BASE_URL": "https://api.example.com",
        "STOREFRONT_DOMAIN": "example.com",
        "DATABASE_URL": own_database("storefront_image"),
        # Plain HTTP on loopback, as behind a TLS-terminating proxy.
        "SECURE_SSL_REDIRECT": "false",
        "PROMETHEUS_MULTIPROC_DIR": "/var/lib/storefront/prometheus",
        "METRICS_BEARER_TOKEN": METRICS_TOKEN,
        # The receiver is on loopback; a lock-out after one failed sign-in; quick heartbeats.
        "WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS": "true",
        "LOGIN_FAILURE_LIMIT": "1",
        "BEAT_HEARTBEAT_SECONDS": "1",
        "WORKER_HEARTBEAT_SECONDS": "2",
        "WEB_CONCURRENCY": "2",
    }
    services = compose_services(OPERATOR_ENVIRONMENT)
    # The image's command with an operator's own bind: config/gunicorn.conf.py still applies.
    web_command = [*image_command(), "--bind", f"127.0.0.1:{port}"]
    commands = {
        "migrate": services["migrate"]["command"],
        "worker": services["worker"]["command"],
        "beat": services["beat"]["command"],
        "web": web_command,
    }
    volumes = {str(metrics_dir): "/var/lib/storefront/prometheus"}

    def process(name, command=None, **extra):
        return ImageProcess(
            name,
            command or commands[name],
            {**environment, **extra},
            workdir / f"{name}.log",
            volumes,
        )

    processes = {}
    receiver = Receiver()
    # A Redis of its own: the image's processes stay up for the whole file, which must log no
    # error, while tests/webhooks/test_worker_delivery.py stops the suite's Redis.
    redis_server = ThrowawayRedis(workdir)
    environment["REDIS_URL"] = redis_server.url
    try:
        redis_server.start()
        processes["migrate"] = process("migrate")
        processes["migrate"].run()
        admin = process(
            "admin",
            [
                "sh",
                "-c",
                "python manage.py createsuperuser --noinput --username alice "
                "--email alice@example.com && python manage.py create_api_key --user alice",
            ],
            DJANGO_SUPERUSER_PASSWORD=secrets.token_urlsafe(16),
        )
        processes["admin"] = admin
        api_key = re.findall(r"\S{20,}", admin.run())[-1]
        # Worker and beat first: the web's `starting` window counts from its first request.
        for name, ready in (("worker", r"celery@\S+ ready"), ("beat", r"beat: Starting")):
            processes[name] = process(name).start()
            processes[name].wait_for(ready, timeout=120)
        processes["web"] = process("web").start()
        processes["web"].wait_for(r"Booting worker", timeout=120)
        wait_for(
            lambda: answers(base + "/healthz"),
            timeout=60,
            what="the image's web answering /healthz",
            interval=0.2,
            process=processes["web"].process,
            log=processes["web"].log,
        )
        served = ServedImage(base, api_key, "image-store", receiver, processes, commands)
        created = requests.post(
            base + "/api/v2/stores",
            json={"name": "Image store", "slug": "image-store"},
            headers={"Authorization": f"Bearer {api_key}", "Idempotency-Key": "image-store-1"},
            timeout=10,
        )
        assert created.status_code == 201, created.text
        channel = served.api(
            "PUT",
            "/api/v2/webhook-destination",
            json={"url": receiver.url, "event_types": ["coupon.created"]},
        )
        assert channel.status_code in (200, 201), channel.text
        yield served
    finally:
        for name in ("web", "beat", "worker", "admin", "migrate"):
            if name in processes:
                processes[name].stop()
        receiver.close()
        redis_server.close()
