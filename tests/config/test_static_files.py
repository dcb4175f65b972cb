"""Static files under the production settings: gunicorn itself serves the admin's CSS and the
ReDoc bundle of /api/docs/ (WhiteNoise), hashed, compressed and cached for a year, after the
`collectstatic` that the image runs at build time.

Runs the real thing: `manage.py collectstatic` into a temporary STATIC_ROOT, then gunicorn with
config.settings.production and the environment of docs/production.md, behind one
(simulated) TLS-terminating proxy.
"""

import re

import pytest
import requests

from tests.servers import Gunicorn
from tests.settings_helpers import manage, production_environment

# What the nearest proxy sends: the public host, HTTPS, and the client's address.
PROXY_HEADERS = {
    "Host": "api.example.com",
    "X-Forwarded-Proto": "https",
    "X-Forwarded-For": "203.0.113.7",
}
A_YEAR = 315360000  # WhiteNoise's max-age for files whose name carries their hash


@pytest.fixture(scope="module")
def production_server(tmp_path_factory):
    """Base URL of gunicorn under the production settings, its assets collected beforehand."""
    workdir = tmp_path_factory.mktemp("production-static")
    settings = {"STATIC_ROOT": str(workdir / "static"), "NUM_PROXIES": "1"}
    collected = manage("collectstatic", "--noinput", environment=production_environment(**settings))
    assert collected.returncode == 0, collected.stdout + collected.stderr

    # The public host and URL of production_environment, and the HTTPS redirect left on (None:
    # production's default), which PROXY_HEADERS meet.
    public = {
        "ALLOWED_HOSTS": "api.example.com",
        "BASE_URL": "https://api.example.com",
        "SECURE_SSL_REDIRECT": None,
    }
    with Gunicorn(workdir / "gunicorn.log", workers=1, **public, **settings) as server:
        yield server.base


def get(url: str, **headers) -> requests.Response:
    return requests.get(url, headers={**PROXY_HEADERS, **headers}, timeout=30)


def asset_url(page: requests.Response, pattern: str) -> str:
    assert page.status_code == 200, page.text[:500]
    match = re.search(pattern, page.text)
    assert match, f"{pattern} not linked from {page.url}"
    return match.group(0)


def test_the_admin_stylesheet_loads_hashed_and_cached_for_a_year(production_server):
    login_page = get(f"{production_server}/admin/login/")
    # collectstatic's manifest: the file name carries a hash of its content
    css = asset_url(login_page, r"/static/admin/css/base\.[0-9a-f]{12}\.css")

    response = get(production_server + css)

    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/css")
    assert "body" in response.text
    assert f"max-age={A_YEAR}" in response.headers["Cache-Control"]
    assert "immutable" in response.headers["Cache-Control"]


def test_the_redoc_bundle_of_the_api_docs_loads(production_server):
    docs_page = get(f"{production_server}/api/docs/")
    bundle = asset_url(
        docs_page,
        r"/static/drf_spectacular_sidecar/redoc/bundles/redoc\.standalone\.[0-9a-f]{12}\.js",
    )

    response = get(production_server + bundle)

    assert response.status_code == 200
    assert "javascript" in response.headers["Content-Type"]
    assert "Redoc" in response.text


def test_assets_are_sent_compressed_to_clients_that_accept_it(production_server):
    css = asset_url(
        get(f"{production_server}/admin/login/"), r"/static/admin/css/base\.[0-9a-f]{12}\.css"
    )

    plain = requests.get(
        production_server + css,
        headers={**PROXY_HEADERS, "Accept-Encoding": "identity"},
        timeout=30,
        stream=True,
    )
    compressed = requests.get(
        production_server + css,
        headers={**PROXY_HEADERS, "Accept-Encoding": "gzip"},
        timeout=30,
        stream=True,
    )

    assert compressed.status_code == plain.status_code == 200
    assert compressed.headers["Content-Encoding"] == "gzip"
    assert "Content-Encoding" not in plain.headers
    assert int(compressed.headers["Content-Length"]) < int(plain.headers["Content-Length"])
    assert "Accept-Encoding" in compressed.headers["Vary"]


def test_an_unknown_static_file_is_a_404_page_not_an_error(production_server):
    response = get(f"{production_server}/static/admin/css/no-such-file.css")

    assert response.status_code == 404


def test_outside_production_assets_are_served_without_collectstatic(client, settings, tmp_path):
    # given: the suite's settings (as dev's: base.py), nothing collected
    settings.STATIC_ROOT = tmp_path / "never-collected"

    response = client.get("/static/admin/css/base.css")

    assert response.status_code == 200
    assert b"body" in b"".join(response.streaming_content)
