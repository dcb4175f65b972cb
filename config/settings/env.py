"""`env`: the one reader of the environment for every settings module.

A django-environ `Env` whose parsing is strict: a malformed value (`DEBUG=flase`,
`NUM_PROXIES=one`) stops the process at start with ImproperlyConfigured naming the variable,
instead of being read as a default (django-environ reads any unknown word as a false bool and
strips letters from floats). An unset variable takes its default; a set one is always parsed.
"""

import math
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"0", "false", "no", "off"})


def _boolean(value: str) -> bool:
    word = value.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise ValueError("expected true/false (or 1/0, yes/no, on/off)")


def _number(value: str) -> float:
    number = float(value)
    if not math.isfinite(number):
        raise ValueError("expected a finite number")
    return number


class StrictEnv(environ.Env):
    def get_value(self, var, cast=None, default=environ.Env.NOTSET, parse_default=False):
        # Replaces django-environ's lookup, which also expands a value starting with "$" as the
        # name of another variable (a SECRET_KEY starting with "$" would silently become the
        # default) and converts any parse error into a bare ValueError without the name.
        if var not in self.ENVIRON:
            if default is self.NOTSET:
                raise ImproperlyConfigured(f"Set the {var} environment variable.")
            if not parse_default or not isinstance(default, str):
                return default
            value = default
        else:
            value = self.ENVIRON[var]
        try:
            return self.parse_value(value, cast)
        except (ValueError, TypeError) as error:
            raise ImproperlyConfigured(f"{var}={value!r} is not valid: {error}.") from None

    @classmethod
    def parse_value(cls, value, cast):
        if cast is bool:
            return _boolean(value)
        if cast is float:
            return _number(value)
        return super().parse_value(value, cast)

    def count(self, var: str, default: int, minimum: int = 0) -> int:
        """A whole number >= minimum (`+5`, `1.0` and `1e3` are refused)."""
        value = self.get_value(var, cast=str, default=str(default))
        stripped = value.strip()
        if not (stripped.isascii() and stripped.isdigit()) or int(stripped) < minimum:
            raise ImproperlyConfigured(
                f"{var}={value!r} is not valid: expected a whole number >= {minimum}."
            )
        return int(stripped)

    def seconds(self, var: str, default: float) -> float:
        """A duration in seconds, >= 0, fractions allowed."""
        value = self.float(var, default=float(default))
        if value < 0:
            raise ImproperlyConfigured(f"{var}={value!r} is not valid: expected seconds >= 0.")
        return value

    def seconds_list(self, var: str, default: str) -> tuple[float, ...]:
        """Comma-separated durations in seconds, each >= 0 (empty items are ignored)."""
        value = self.get_value(var, cast=str, default=default)
        try:
            items = tuple(_number(part) for part in value.split(",") if part.strip())
        except ValueError as error:
            raise ImproperlyConfigured(f"{var}={value!r} is not valid: {error}.") from None
        if any(item < 0 for item in items):
            raise ImproperlyConfigured(f"{var}={value!r} is not valid: expected seconds >= 0.")
        return items

    def database(self, var: str, conn_max_age: int) -> dict:
        """DATABASES["default"] from a PostgreSQL URL, the one engine (docs/design.md "Stack"):
        another scheme (SQLite included) or a URL without a database name is refused."""
        url = self.get_value(var, cast=str).strip()
        if url.split("://", 1)[0] not in {"postgres", "postgresql"}:
            raise ImproperlyConfigured(
                f"{var} is not a PostgreSQL URL (postgres://user:password@host:5432/name): "
                "Storefront runs on PostgreSQL only."
            )
        try:
            config = self.db_url_config(url)
        except (ValueError, TypeError, KeyError) as error:
            raise ImproperlyConfigured(f"{var} is not a valid database URL: {error}.") from None
        if not config.get("NAME"):
            raise ImproperlyConfigured(f"{var} names no database (the path after the host).")
        config["CONN_MAX_AGE"] = conn_max_age
        return config


env = StrictEnv()

BASE_DIR = Path(__file__).resolve().parent.parent.parent
# `make run`'s state (database, file cache, broker, metrics). Read here, below every settings
# module, so that none imports base.py for it.
VAR_DIR = Path(env.str("STOREFRONT_VAR_DIR", default=str(BASE_DIR / "var")))
