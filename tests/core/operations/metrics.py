"""Reading /metrics in tests: the text format parsed by prometheus_client's own parser."""

from prometheus_client.parser import text_string_to_metric_families

SCRAPER_ADDRESS = "127.0.0.1"  # the test client's REMOTE_ADDR


def scrape(client) -> dict:
    """{(sample name, frozenset(labels)): value} of one scrape (allow-listed)."""
    response = client.get("/metrics")
    assert response.status_code == 200, response.content[:500]
    samples = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples


def value(samples: dict, name: str, **labels) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)
