"""GET /metrics: the Prometheus text format, for scrapers on the allow-list or with the token.

Anyone else gets the site's ordinary 404, the answer for a path that does not exist, so the
endpoint cannot be found by probing (docs/decisions/metrics.md "Access").
"""

import hmac
import ipaddress
import os

from django.conf import settings
from django.http import Http404, HttpResponse
from django.middleware.security import SecurityMiddleware
from django.views.decorators.csrf import csrf_exempt
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector

from core.api.client_address import client_address
from core.api.views import require_get
from core.operations.health import HealthCollector

# Collectors of shared state (rows), read at each scrape: apps add theirs in AppConfig.ready
# (webhooks: its backlog), as config imports no app.
SCRAPE_COLLECTORS: list = []


def scrape_allowed(request) -> bool:
    """The client's address is on METRICS_ALLOWED_ADDRESSES, or it sent METRICS_BEARER_TOKEN."""
    token = settings.METRICS_BEARER_TOKEN
    scheme, _, presented = request.headers.get("Authorization", "").partition(" ")
    if token and scheme.lower() == "bearer":
        return hmac.compare_digest(presented.strip().encode(), token.encode())
    try:
        address = ipaddress.ip_address(client_address(request))
    except ValueError:
        return False
    return any(address in network for network in settings.METRICS_ALLOWED_NETWORKS)


def metrics_registry() -> CollectorRegistry:
    """Every process's counters (multiprocess mode) or this process's, plus SCRAPE_COLLECTORS."""
    registry = CollectorRegistry(auto_describe=False)
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        MultiProcessCollector(registry)
    else:
        # The default registry (this process's metrics) is a collector too: it has collect().
        registry.register(REGISTRY)
    registry.register(HealthCollector())
    for collector in SCRAPE_COLLECTORS:
        registry.register(collector)
    return registry


@require_get
def _metrics_page(request):
    response = HttpResponse(generate_latest(metrics_registry()), content_type=CONTENT_TYPE_LATEST)
    response["Cache-Control"] = "no-store"
    return response


def _refusal(request):
    """What a path that does not exist answers: over plain HTTP in production, the HTTPS
    redirect (/metrics itself is exempt from it, for scrapers on the private network), then the
    404. Django's own rule, SecurityMiddleware's, without the exemption."""
    https_redirect = SecurityMiddleware(lambda request: None)
    https_redirect.redirect_exempt = []
    redirect = https_redirect.process_request(request)
    if redirect is not None:
        return redirect
    raise Http404


@csrf_exempt
def metrics(request):
    # Access first: a refused client learns nothing, not even which methods the path allows.
    if not scrape_allowed(request):
        return _refusal(request)
    return _metrics_page(request)
