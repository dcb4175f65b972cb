"""The deployment example (Dockerfile, compose.yaml) checked without running the image: its
environment (as `docker-compose config` reads it) is one the production settings accept and
Django's deploy checklist passes, the worker consumes every queue a task can be sent to, there
is one beat, and the image's build step that collects the static files works as written, with
no database or Redis to reach. tests/deploy builds and serves the image itself.
"""

import os
import shlex
import subprocess
import sys

from django.conf import settings

from config.celery import app as celery_app
from tests.deploy.image import COMPOSE_ENVIRONMENT, compose_services
from tests.settings_helpers import RELAXATIONS, ROOT, manage


# What an operator would put in .env (the variables compose.yaml requires).
def app_services(services: dict) -> dict:
    return {name: s for name, s in services.items() if "build" in s}


def test_every_process_of_the_example_runs_production_settings_that_pass_check_deploy():
    services = app_services(compose_services(COMPOSE_ENVIRONMENT))
    assert set(services) == {"migrate", "web", "worker", "beat"}
    environments = [s["environment"] for s in services.values()]
    assert all(e["DJANGO_SETTINGS_MODULE"] == "config.settings.production" for e in environments)

    inherited = {
        k: v for k, v in os.environ.items() if k not in {*RELAXATIONS, "DATABASE_URL", "REDIS_URL"}
    }
    result = manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        environment={**inherited, **services["web"]["environment"]},
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def routed_queues() -> set[str]:
    """Every queue a task of ours can be sent to: the default one and those of the routes."""
    queues = {celery_app.conf.task_default_queue}
    routes = celery_app.conf.task_routes or {}
    for table in routes if isinstance(routes, list | tuple) else [routes]:
        assert isinstance(table, dict), f"unsupported task_routes entry {table!r}"
        queues |= {route["queue"] for route in table.values() if "queue" in route}
    for entry in settings.CELERY_BEAT_SCHEDULE.values():
        if "queue" in entry.get("options", {}):
            queues.add(entry["options"]["queue"])
    return queues


def test_the_workers_consume_every_queue_a_task_is_sent_to():
    consumed = set()
    for service in app_services(compose_services(COMPOSE_ENVIRONMENT)).values():
        command = service.get("command", [])
        if "worker" in command:
            consumed |= set(command[command.index("-Q") + 1].split(","))

    assert routed_queues() <= consumed
    assert {"webhooks", "maintenance"} <= consumed


def test_there_is_exactly_one_beat_and_its_schedule_is_kept_on_a_volume():
    beats = [
        s for s in compose_services(COMPOSE_ENVIRONMENT).values() if "beat" in s.get("command", [])
    ]

    assert len(beats) == 1
    command = beats[0]["command"]
    schedule = command[command.index("--schedule") + 1]
    mounts = [volume.split(":")[1] for volume in beats[0]["volumes"]]
    assert any(schedule.startswith(mount + "/") for mount in mounts)


def dockerfile_instructions() -> list[tuple[str, str]]:
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    lines = [line.strip() for line in text.splitlines()]
    return [tuple(line.split(None, 1)) for line in lines if line and not line.startswith("#")]


def test_the_image_runs_as_a_numeric_non_root_user():
    users = [
        argument for instruction, argument in dockerfile_instructions() if instruction == "USER"
    ]

    assert users, "the image runs as root"
    uid, _, gid = users[-1].partition(":")
    assert uid.isdigit() and int(uid) > 0
    assert gid.isdigit() and int(gid) > 0


def test_the_images_collectstatic_step_works_without_any_service(tmp_path):
    # given: the build's RUN line, and an environment as bare as the build's (no settings)
    (step,) = [
        argument
        for instruction, argument in dockerfile_instructions()
        if instruction == "RUN" and "collectstatic" in argument
    ]
    environment = {
        "PATH": f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}",
        "DJANGO_SETTINGS_MODULE": "config.settings.production",
        "STATIC_ROOT": str(tmp_path / "static"),
        "STOREFRONT_VAR_DIR": str(tmp_path / "var"),
    }

    # when
    result = subprocess.run(
        ["sh", "-c", step], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120
    )

    # then: the manifest and the compressed, hashed files WhiteNoise serves
    assert result.returncode == 0, shlex.join(["sh", "-c", step]) + "\n" + result.stderr
    assert (tmp_path / "static" / "staticfiles.json").is_file()
    hashed_css = list((tmp_path / "static" / "admin" / "css").glob("base.*.css.gz"))
    assert hashed_css
    assert not (tmp_path / "var").exists()
