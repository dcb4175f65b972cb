"""deploy/alerts.yml and deploy/prometheus.yml checked by Prometheus' own promtool: the rules
load, and each alert fires on its condition and not before (deploy/alerts.test.yml)."""

import subprocess

import yaml

from tests.settings_helpers import ROOT

DEPLOY = ROOT / "deploy"


def promtool(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["promtool", *arguments], cwd=DEPLOY, capture_output=True, text=True, timeout=120
    )


def test_the_alert_rules_load_and_pass_their_unit_tests():
    checked = promtool("check", "rules", "alerts.yml")
    assert checked.returncode == 0, checked.stdout + checked.stderr

    tested = promtool("test", "rules", "alerts.test.yml")
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_every_alert_has_a_unit_test():
    rules = yaml.safe_load((DEPLOY / "alerts.yml").read_text())
    alerts = {rule["alert"] for group in rules["groups"] for rule in group["rules"]}
    tests = yaml.safe_load((DEPLOY / "alerts.test.yml").read_text())["tests"]
    tested = {
        case["alertname"]
        for test in tests
        for case in test["alert_rule_test"]
        if case["exp_alerts"]
    }
    assert alerts == tested
