"""Races on PostgreSQL with real threads: a family never forks, a code never yields twice."""

import copy

import pytest
from django.test import Client
from oauth2_provider.models import AccessToken, RefreshToken

from oauth_cli.models import TokenFamily
from tests.concurrency import run_at_once
from tests.oauth_cli.flow import approve, authorize_params, connect, exchange, pkce_pair, refresh

THREADS = 20


@pytest.mark.django_db(transaction=True)
def test_twenty_concurrent_refreshes_issue_at_most_one_successor(user):
    browser = Client()
    browser.force_login(user)
    tokens = connect(browser)

    # when
    responses = run_at_once(lambda: refresh(Client(), tokens["refresh_token"]), THREADS)

    # then
    successes = [r for r in responses if r.status_code == 200]
    refused = [r for r in responses if r.status_code != 200]
    assert len(successes) == 1  # the first to lock rotates; nobody can revoke before it
    assert all(r.status_code == 400 and r.json()["error"] == "invalid_grant" for r in refused)
    # one row from the exchange, at most one successor: the family never forks
    assert RefreshToken.objects.count() <= 2
    successors = AccessToken.objects.filter(source_refresh_token__isnull=False).count()
    assert successors <= 1
    # the losers presented an already-rotated token: the reuse rule revoked the family
    assert not RefreshToken.objects.filter(revoked__isnull=True).exists()
    assert TokenFamily.objects.get().revoked_at is not None
    if successes:
        rotated = successes[0].json()["refresh_token"]
        assert refresh(Client(), rotated).json()["error"] == "invalid_grant"


@pytest.mark.django_db(transaction=True)
def test_concurrent_exchanges_of_one_code_issue_at_most_one_token(user):
    browser = Client()
    browser.force_login(user)
    verifier, challenge = pkce_pair()
    code = approve(browser, authorize_params(code_challenge=challenge))["code"]

    responses = run_at_once(lambda: exchange(Client(), code, verifier), 10)

    assert sum(r.status_code == 200 for r in responses) == 1
    assert all(r.json()["error"] == "invalid_grant" for r in responses if r.status_code != 200)
    assert TokenFamily.objects.count() <= 1
    assert RefreshToken.objects.count() <= 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_approvals_of_one_consent_issue_one_code(user):
    """A double-click on Approve: requests of one session, each with its own copy of it."""
    from oauth2_provider.models import Grant

    from tests.oauth_cli.flow import consent

    browser = Client()
    browser.force_login(user)
    fields = consent(browser, authorize_params())

    def approve_click():
        click = Client()
        click.cookies = copy.deepcopy(browser.cookies)  # same session, own cookie jar
        return click.post("/oauth/authorize", fields)

    responses = run_at_once(approve_click, 5)

    assert sorted(r.status_code for r in responses) == [303, 400, 400, 400, 400]
    assert Grant.objects.filter(user=user).count() == 1
