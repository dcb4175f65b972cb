"""Token endpoint benchmark: refresh rotations/s of ours against a stock django-oauth-toolkit
peer in the same run, code exchanges/s, and the fork check (20 concurrent refreshes of one
refresh token issue at most one successor).

In-process: Django's test Client (the full WSGI stack and middleware, no network), production
settings plus the peer's URL (bench/oauth_settings.py), a real PostgreSQL and Redis. The peer
is DOT's own TokenView and OAuth2Validator at /bench/dot-token, serving a second, public
Application, with the same OAUTH2_PROVIDER settings (rotation, reuse protection on). Run it on
throwaway services:

    bin/with-test-services .venv/bin/python bench/oauth_token.py --rotations 400 --rounds 3

Rotations run on one thread, ours and the peer alternating (order swapped every round); the
ratio is taken from the medians over rounds. `--compare DIR` (repeatable) adds a side per
checkout: our token view with DIR's validator (bench/oauth_urls.py), interleaved the same way,
so a validator change is measured before and after in one run against the same peer. It
migrates the (throwaway) database named by DATABASE_URL and creates users in it.
"""

import argparse
import os
import secrets
import statistics
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.oauth_settings")
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(48))
os.environ.setdefault("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver")
os.environ.setdefault("BASE_URL", "https://api.example.com")
os.environ.setdefault("SECURE_SSL_REDIRECT", "false")
os.environ.setdefault("OAUTH_RATE_LIMIT_PER_MINUTE", "100000000")
os.environ.setdefault("LOG_LEVEL", "ERROR")

import django

django.setup()

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.utils import timezone  # noqa: E402
from oauth2_provider.models import AccessToken, Application, RefreshToken  # noqa: E402

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
        user = User.objects.create_user(f"bench-{run_id}-{index}")  # no password: no hashing
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


PEER_URL = "/bench/dot-token"
CHAIN = 5  # rotations in a row per family (the CLI's pattern: always the newest token)


def peer_application() -> Application:
    """The peer's client: public, like the CLI, so neither side pays for secret hashing."""
    return Application.objects.create(
        name="bench DOT peer",
        client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris="http://127.0.0.1/callback",
        client_secret="",
        hash_client_secret=False,
    )


def peer_refresh_tokens(application: Application, count: int) -> list[str]:
    """Fresh families for the peer, stored as DOT stores a code exchange; not timed."""
    run_id = secrets.token_hex(3)
    tokens = []
    for index in range(count):
        user = User.objects.create_user(f"peer-{run_id}-{index}")
        access, refresh_value = secrets.token_urlsafe(30), secrets.token_urlsafe(30)
        access_token = AccessToken.objects.create(
            user=user,
            application=application,
            token_checksum=token_checksum(access),
            expires=timezone.now() + timedelta(hours=1),
            scope=settings.OAUTH_SCOPE_ADMIN,
        )
        RefreshToken.objects.create(
            user=user,
            application=application,
            token_checksum=token_checksum(refresh_value),
            access_token=access_token,
            token_family=uuid.uuid4(),
        )
        tokens.append(refresh_value)
    return tokens


def ours_refresh_tokens(count: int) -> list[str]:
    """Fresh families through our real flow (consent, code exchange); not timed."""
    return [exchange(Client(), c, v).json()["refresh_token"] for c, v in prepare_codes(count)]


def rotate_chain(client, token: str, post) -> list[float]:
    """Rotates one family CHAIN times in a row; the time of each request."""
    seconds = []
    for _ in range(CHAIN):
        started = time.perf_counter()
        response = post(client, token)
        seconds.append(time.perf_counter() - started)
        assert response.status_code == 200, response.content
        token = response.json()["refresh_token"]
    return seconds


def compare_rotations(rotations: int, rounds: int, compared: list[Path]) -> None:
    """Ours, the compared checkouts and the peer interleaved family by family (who goes first
    rotates), so all see the same load on this shared machine; per round, rotations/s and the
    median request."""
    families = max(1, rotations // CHAIN)
    application = peer_application()

    def post_to(url, client_id):
        def post(client, token):
            data = {"grant_type": "refresh_token", "client_id": client_id, "refresh_token": token}
            return client.post(url, data)

        return post

    sides = {"ours": (lambda: ours_refresh_tokens(families), refresh)}
    for index, directory in enumerate(compared):
        url = f"/bench/compare-token/{index}"
        sides[directory.name] = (
            lambda: ours_refresh_tokens(families),
            post_to(url, settings.CLI_CLIENT_ID),
        )
    sides["DOT peer"] = (
        lambda: peer_refresh_tokens(application, families),
        post_to(PEER_URL, application.client_id),
    )
    names = list(sides)
    results: dict[str, list[list[float]]] = {name: [] for name in sides}
    for round_number in range(rounds):
        tokens = {name: prepare() for name, (prepare, _post) in sides.items()}
        timings: dict[str, list[float]] = {name: [] for name in sides}
        clients = {name: Client() for name in sides}
        for index in range(families):
            first = (index + round_number) % len(names)
            order = names[first:] + names[:first]
            for name in order:
                timings[name] += rotate_chain(clients[name], tokens[name][index], sides[name][1])
        for name in sides:
            results[name].append(timings[name])
    print(
        f"refresh rotations, one thread, {families * CHAIN} per side per round, {rounds} rounds, "
        f"ours and the peer interleaved per family"
    )
    print("| side | rotations/s (median of rounds) | per round | median ms | p10 ms |")
    print("|---|---|---|---|---|")
    rates, medians = {}, {}
    for name, runs in results.items():
        per_round = [len(run) / sum(run) for run in runs]
        rates[name] = statistics.median(per_round)
        medians[name] = statistics.median(statistics.median(run) for run in runs)
        p10 = statistics.median(statistics.quantiles(run, n=10)[0] for run in runs)
        rounds_text = ", ".join(f"{rate:.1f}" for rate in per_round)
        print(
            f"| {name} | {rates[name]:.1f} | {rounds_text} | {medians[name] * 1000:.2f} "
            f"| {p10 * 1000:.2f} |"
        )
    for name in names[1:]:
        per_round_ratio = ", ".join(
            f"{sum(t) / sum(o):.2f}" for o, t in zip(results["ours"], results[name], strict=True)
        )
        print(
            f"ours / {name} rotations/s: {rates['ours'] / rates[name]:.2f} "
            f"(per round: {per_round_ratio}); {name} / ours median request time: "
            f"{medians[name] / medians['ours']:.2f}"
        )


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
    parser.add_argument("--users", type=int, default=200, help="code exchanges")
    parser.add_argument("--threads", type=int, default=4, help="for the code exchanges")
    parser.add_argument("--rotations", type=int, default=400, help="per side per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--compare",
        type=Path,
        action="append",
        default=[],
        help="a checkout whose oauth_cli/validators.py to measure too (repeatable)",
    )
    args = parser.parse_args()
    # Read by bench/oauth_urls.py when the URLconf first loads (the first request).
    os.environ["BENCH_COMPARE_DIRS"] = os.pathsep.join(str(d.resolve()) for d in args.compare)
    if not settings.DATABASES["default"]["ENGINE"].endswith(".postgresql"):
        sys.exit("Needs PostgreSQL: run under bin/with-test-services.")
    call_command("migrate", verbosity=0)
    call_command("ensure_cli_client", verbosity=0)
    print(f"settings {os.environ['DJANGO_SETTINGS_MODULE']}, threads {args.threads}")
    compare_rotations(args.rotations, args.rounds, args.compare)
    bench_exchanges(prepare_codes(args.users), args.threads)
    fork_check()


if __name__ == "__main__":
    main()
