"""Token endpoint benchmark: code exchanges/s and refresh rotations/s on PostgreSQL, plus the
fork check (20 concurrent refreshes of one refresh token issue at most one successor).

In-process: Django's test Client (the full WSGI stack and middleware, no network) in threads,
production settings, a real PostgreSQL and Redis. Run it on throwaway services:

    bin/with-test-services .venv/bin/python bench/oauth_token.py --users 200 --threads 8

It migrates the (throwaway) database named by DATABASE_URL and creates users in it.
"""

import argparse
import os
import secrets
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(48))
os.environ.setdefault("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver")
os.environ.setdefault("SECURE_SSL_REDIRECT", "false")
os.environ.setdefault("OAUTH_RATE_LIMIT_PER_MINUTE", "100000000")
os.environ.setdefault("LOG_LEVEL", "ERROR")

import django

django.setup()

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from oauth2_provider.models import RefreshToken  # noqa: E402

from accounts.models import User  # noqa: E402
from oauth_cli.selectors import token_checksum  # noqa: E402
from tests.oauth_cli.flow import approve, authorize_params, exchange, pkce_pair, refresh  # noqa: E402


def in_threads(threads: int, jobs: list) -> tuple[list, float]:
    def run(job):
        try:
            return job()
        finally:
            connection.close()

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        results = list(pool.map(run, jobs))
    return results, time.perf_counter() - started


def prepare_codes(count: int) -> list[tuple[str, str]]:
    """One consented authorization code (and its verifier) per fresh user; not timed."""
    run_id = secrets.token_hex(3)
    codes = []
    for index in range(count):
        user = User.objects.create_user(f"bench-{run_id}-{index}", password="x")
        browser = Client()
        browser.force_login(user)
        verifier, challenge = pkce_pair()
        codes.append(
            (approve(browser, authorize_params(code_challenge=challenge))["code"], verifier)
        )
    return codes


def bench_exchanges(codes, threads: int) -> list[str]:
    jobs = [lambda c=c, v=v: exchange(Client(), c, v) for c, v in codes]
    responses, elapsed = in_threads(threads, jobs)
    assert all(r.status_code == 200 for r in responses), {r.status_code for r in responses}
    print(f"code exchanges: {len(jobs)} in {elapsed:.2f}s = {len(jobs) / elapsed:.1f}/s")
    return [r.json()["refresh_token"] for r in responses]


def bench_rotations(refresh_tokens: list[str], threads: int, rounds: int) -> None:
    """Each job rotates its own family `rounds` times in a row (the CLI's pattern)."""

    def rotate(token):
        for _ in range(rounds):
            response = refresh(Client(), token)
            assert response.status_code == 200, response.content
            token = response.json()["refresh_token"]

    jobs = [lambda t=t: rotate(t) for t in refresh_tokens]
    _, elapsed = in_threads(threads, jobs)
    total = len(jobs) * rounds
    print(f"refresh rotations: {total} in {elapsed:.2f}s = {total / elapsed:.1f}/s")


def fork_check(concurrency: int = 20) -> None:
    code, verifier = prepare_codes(1)[0]
    token = exchange(Client(), code, verifier).json()["refresh_token"]
    barrier = threading.Barrier(concurrency)

    def hit():
        barrier.wait()
        return refresh(Client(), token)

    responses, _ = in_threads(concurrency, [hit] * concurrency)
    ok = sum(r.status_code == 200 for r in responses)
    invalid_grant = sum(
        r.status_code == 400 and r.json().get("error") == "invalid_grant" for r in responses
    )
    family = RefreshToken.objects.get(token_checksum=token_checksum(token)).token_family
    # Rows are revoked, never deleted, by rotation and reuse: all but the first are successors.
    successors = RefreshToken.objects.filter(token_family=family).count() - 1
    print(
        f"fork check: {concurrency} concurrent refreshes -> {ok} x 200, {invalid_grant} x "
        f"invalid_grant, {successors} successor token(s) in the family"
    )
    assert ok <= 1 and successors <= 1 and ok + invalid_grant == concurrency


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if not settings.DATABASES["default"]["ENGINE"].endswith(".postgresql"):
        sys.exit("Needs PostgreSQL: run under bin/with-test-services.")
    call_command("migrate", verbosity=0)
    call_command("ensure_cli_client", verbosity=0)
    print(f"settings {os.environ['DJANGO_SETTINGS_MODULE']}, threads {args.threads}")
    codes = prepare_codes(args.users)
    refresh_tokens = bench_exchanges(codes, args.threads)
    bench_rotations(refresh_tokens, args.threads, args.rounds)
    fork_check()


if __name__ == "__main__":
    main()
