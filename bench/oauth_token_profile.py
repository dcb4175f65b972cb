"""cProfile of refresh rotations, ours and the stock DOT peer of bench/oauth_token.py, in one
process: the SQL statements of one rotation each, then the cumulative profile of the token
path. Run under bin/with-test-services:

    bin/with-test-services .venv/bin/python bench/oauth_token_profile.py --rotations 200
"""

import argparse
import io
import pstats
import sys
from cProfile import Profile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import oauth_token as bench
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

# The parts the comparison in docs/benchmarks/oauth.md is made of.
FUNCTIONS = (
    r"views.py:\d+\(post\)|authorization_flow_token_response|validate_token_request|"
    r"client_authentication_required|validate_refresh_token|_accept_live_refresh_token|"
    r"save_bearer_token|_locked_installation|models.py:\d+\(revoke\)|"
    r"_create_access_token|_create_refresh_token|rate_limit_consume"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rotations", type=int, default=200)
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    call_command("ensure_cli_client", verbosity=0)
    application = bench.peer_application()
    families = args.rotations // bench.CHAIN + 1

    def peer_post(client, token):
        data = {
            "grant_type": "refresh_token",
            "client_id": application.client_id,
            "refresh_token": token,
        }
        return client.post(bench.PEER_URL, data)

    sides = (
        ("ours", bench.ours_refresh_tokens(families), bench.refresh),
        ("DOT peer", bench.peer_refresh_tokens(application, families), peer_post),
    )
    for name, tokens, post in sides:
        client = Client()
        with CaptureQueriesContext(connection) as queries:
            assert post(client, tokens.pop()).status_code == 200
        print(f"== {name}: {len(queries.captured_queries)} SQL statements per rotation")
        for query in queries.captured_queries:
            print("  ", " ".join(query["sql"].split())[:100])
        profile = Profile()
        profile.enable()
        for token in tokens:
            bench.rotate_chain(client, token, post)
        profile.disable()
        out = io.StringIO()
        pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(FUNCTIONS)
        print(f"   {len(tokens) * bench.CHAIN} rotations profiled")
        print(out.getvalue())


if __name__ == "__main__":
    main()
