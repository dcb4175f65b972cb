"""CLIENT_IPV6_PREFIX_LENGTH and LOGIN_KNOWN_BROWSER_DAYS: a malformed value stops the process
at start, naming the variable, instead of silently keying the limits on something else."""

import pytest

from tests.settings_helpers import LOAD_SETTINGS, production_environment, run_python, settings_of


def test_a_prefix_length_in_range_is_taken():
    values = settings_of(
        production_environment(CLIENT_IPV6_PREFIX_LENGTH="56"), "CLIENT_IPV6_PREFIX_LENGTH"
    )
    assert values == {"CLIENT_IPV6_PREFIX_LENGTH": 56}


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("CLIENT_IPV6_PREFIX_LENGTH", "129"),
        ("CLIENT_IPV6_PREFIX_LENGTH", "31"),
        ("CLIENT_IPV6_PREFIX_LENGTH", "/64"),
        ("CLIENT_IPV6_PREFIX_LENGTH", ""),
        ("LOGIN_KNOWN_BROWSER_DAYS", "0"),
    ],
)
def test_a_value_out_of_range_stops_the_process(name, value):
    result = run_python(LOAD_SETTINGS, env=production_environment(**{name: value}))

    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert name in result.stderr
