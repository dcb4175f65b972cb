"""A worker or beat that ends is started again by the documented deployments: compose.yaml's
restart policy (as `docker-compose config` reads it) and the systemd units of docs/production.md
"Workers and beat: restarted when they end" (checked by `systemd-analyze verify`, which
bin/install-test-deps installs, with the celery of this environment in place of the documented
path)."""

import re
import subprocess
import sys
from pathlib import Path

from tests.deploy.image import COMPOSE_ENVIRONMENT, compose_services
from tests.settings_helpers import ROOT

SECTION = "## Workers and beat: restarted when they end"
DOCUMENTED_CELERY = "/srv/storefront/.venv/bin/celery"


def documented_units() -> dict[str, str]:
    """{file name: text} of each ```ini block of the section, named by its first comment."""
    text = (ROOT / "docs" / "production.md").read_text()
    section = text[text.index(SECTION) :]
    section = section[: section.index("\n## ", len(SECTION))]
    units = {}
    for block in re.findall(r"```ini\n(.*?)```", section, re.S):
        name = re.search(r"^# /etc/systemd/system/(\S+)$", block, re.M).group(1)
        units[name] = block
    return units


def service_settings(unit: str) -> dict[str, str]:
    service = unit[unit.index("[Service]") :]
    pairs = re.findall(r"^(\w+)=(.*)$", service.split("\n[", 1)[0], re.M)
    return dict(pairs)


def test_compose_restarts_the_worker_and_beat_when_they_end():
    services = compose_services(COMPOSE_ENVIRONMENT)
    for name in ("worker", "beat", "web"):
        assert services[name].get("restart") in {"always", "unless-stopped"}, name


def test_the_documented_systemd_units_restart_the_worker_and_beat():
    units = documented_units()
    assert set(units) == {"storefront-worker@.service", "storefront-beat.service"}
    worker = service_settings(units["storefront-worker@.service"])
    beat = service_settings(units["storefront-beat.service"])
    for settings in (worker, beat):
        assert settings["Restart"] == "always"
        assert settings["ExecStart"].startswith(f"{DOCUMENTED_CELERY} -A config ")
    # one unit per queue: the instance names the queue and the node (%%h: the host, for celery)
    assert " worker -Q %i " in worker["ExecStart"]
    assert worker["ExecStart"].endswith(" -n %i@%%h")
    assert worker["KillMode"] == "mixed"
    assert " beat " in beat["ExecStart"]


def test_the_documented_systemd_units_are_valid(tmp_path):
    celery = str(Path(sys.executable).parent / "celery")
    for name, unit in documented_units().items():
        # an instance of the template, as `systemctl enable storefront-worker@webhooks` makes
        path = tmp_path / name.replace("@.", "@webhooks.")
        path.write_text(unit.replace(DOCUMENTED_CELERY, celery))

        result = subprocess.run(
            ["systemd-analyze", "verify", str(path)], capture_output=True, text=True, timeout=60
        )

        assert result.returncode == 0 and not result.stderr.strip(), (name, result.stderr)
