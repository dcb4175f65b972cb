"""Settings of the metrics area (/metrics), imported by base.py; read from the environment.

Counters are shared between processes through prometheus_client's multiprocess mode: every
web, worker and beat process of a machine writes its values to files in
PROMETHEUS_MULTIPROC_DIR, and /metrics adds them up (docs/metrics.md "Processes (multiprocess
mode)").
"""

import ipaddress
import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from config.settings.env import VAR_DIR, env

# prometheus_client reads this variable from the environment when it is first imported, which
# is after the settings in every entry point (manage.py, config.wsgi, config.celery); the
# default is one directory per machine, shared by all of its processes.
PROMETHEUS_MULTIPROC_DIR = os.environ.setdefault(
    "PROMETHEUS_MULTIPROC_DIR", str(VAR_DIR / "prometheus")
)
Path(PROMETHEUS_MULTIPROC_DIR).mkdir(parents=True, exist_ok=True)


def _networks(name: str) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    """Comma-separated addresses or CIDR networks; a wrong entry stops the process at start."""
    networks = []
    for entry in env.str(name, default="").split(","):
        if not entry.strip():
            continue
        try:
            networks.append(ipaddress.ip_network(entry.strip(), strict=False))
        except ValueError:
            raise ImproperlyConfigured(
                f"{name} takes IP addresses or CIDR networks, not {entry.strip()!r}."
            ) from None
    return tuple(networks)


# Client addresses (as core.api.client_address sees them, through NUM_PROXIES) allowed to
# scrape /metrics. Empty by default: behind a reverse proxy every request comes from the
# proxy's address, so a loopback default would publish the metrics to the internet.
METRICS_ALLOWED_NETWORKS = _networks("METRICS_ALLOWED_ADDRESSES")
# `Authorization: Bearer <token>` also opens /metrics (Prometheus' `authorization` setting).
# Empty: no token is accepted.
METRICS_BEARER_TOKEN = env.str("METRICS_BEARER_TOKEN", default="").strip()
# Scrape-time backlog counts stop at this many rows, so a huge backlog cannot make a scrape
# slow; a gauge at the cap means "at least this many".
METRICS_BACKLOG_COUNT_CAP = env.count("METRICS_BACKLOG_COUNT_CAP", default=100_000, minimum=1)
