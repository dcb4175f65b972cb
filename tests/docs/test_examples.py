"""Docs that run: every fenced example of README.md and docs/api/*.md, copied as written, top to
bottom, against a live server of the test settings seeded as `make run` seeds it, with a real
Celery worker (the webhook recipe's real event). The convention: tests/docs/examples.py."""

import io
import os
import time

import pytest
from django.core.management import call_command
from django.db import connection

from core.operations import health
from oauth_cli.services import cli_application_ensure
from tests.docs.examples import PAGES, PageRun, blocks_of, check


def _database_url() -> str:
    """The test database, for the pages' `manage.py` lines (they choose their own settings)."""
    database = connection.settings_dict
    return (
        f"postgres://{database['USER']}@{database['HOST'] or '127.0.0.1'}:{database['PORT']}"
        f"/{database['NAME']}"
    )


def _demo_key() -> str:
    """Seeds the demo user, store and key as `make run` does; the key it prints."""
    printed = io.StringIO()
    call_command("seed_demo", stdout=printed)
    return next(
        line.split("API key:")[1].strip()
        for line in printed.getvalue().splitlines()
        if "API key:" in line
    )


def _run_page(page, environment: dict, workdir, *, base: str, key: str) -> list[str]:
    """Runs the page's blocks in order in one shell; what differs from what the page shows."""
    run = PageRun(workdir, {**environment, "KEY": key}, base=base, key=key)
    problems = []
    try:
        for block in blocks_of(page):
            if block.skip:
                continue
            returncode, output, statuses = run.run(block)
            if found := check(block, returncode, output, statuses):
                problems.append(f"{block.where}: {'; '.join(found)}\n{output[-2000:]}")
                if returncode != 0:
                    break  # the page's later blocks build on this one
    finally:
        run.close()
    return problems


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_every_page_runs_as_written(live_server, celery_worker, settings, monkeypatch, tmp_path):
    """One database and worker for every page (each page's examples stand alone: their own
    codes and captured ids), a fresh demo key per page as a new `make run` prints one."""
    # given: the server as `make run` serves it, its public root the live server's
    settings.BASE_URL = live_server.url
    settings.OAUTH2_PROVIDER = {**settings.OAUTH2_PROVIDER, "OIDC_ISS_ENDPOINT": live_server.url}
    monkeypatch.setattr(health, "started_at", time.time())  # a fresh start, as after make run
    cli_application_ensure()
    (tmp_path / "var").mkdir()
    environment = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "LANG": "C.UTF-8",
        "TMPDIR": str(tmp_path),
        "DATABASE_URL": _database_url(),
        "STOREFRONT_VAR_DIR": str(tmp_path / "var"),
        # what `make run` exports and prints
        "PORT": live_server.url.rsplit(":", 1)[1],
        "BASE": live_server.url,
    }
    pages = [page for page in PAGES if blocks_of(page)]
    assert {"README.md", "coupons.md", "oauth.md", "webhooks.md"} <= {page.name for page in pages}
    problems = []
    # when: each page's blocks in page order, in a shell of its own
    for page in pages:
        workdir = tmp_path / page.stem
        problems += _run_page(page, environment, workdir, base=live_server.url, key=_demo_key())
    # then
    assert not problems, "\n\n".join(problems)
