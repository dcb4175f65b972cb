"""Settings: production refuses an unsafe environment and passes `check --deploy`; a process
started without DJANGO_SETTINGS_MODULE is a production one; dev relaxations are opt-ins."""

import os

import pytest
from django.test import Client

from tests.settings_helpers import (
    LOAD_SETTINGS,
    RANDOM_KEY,
    RELAXATIONS,
    ROOT,
    manage,
    production_environment,
    run_python,
    settings_of,
)


def load_production(**env):
    environment = {k: v for k, v in os.environ.items() if k != "SECRET_KEY"}
    environment.update(
        DJANGO_SETTINGS_MODULE="config.settings.production",
        ALLOWED_HOSTS="api.example.com",
        BASE_URL="https://api.example.com",
    )
    environment.update(env)
    return run_python(LOAD_SETTINGS, env=environment)


def test_production_refuses_the_default_secret_key():
    result = load_production()
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert "SECRET_KEY" in result.stderr


def test_production_refuses_a_short_secret_key():
    assert load_production(SECRET_KEY="short").returncode != 0


@pytest.mark.parametrize(
    "key",
    ["x" * 60, "abcd" * 20, "django-insecure-" + RANDOM_KEY],
    ids=["repeated", "short-cycle", "django-insecure"],  # the same in every xdist worker
)
def test_production_refuses_a_key_django_deems_weak(key):
    assert load_production(SECRET_KEY=key).returncode != 0


def test_production_starts_with_a_real_secret_key():
    result = load_production(SECRET_KEY=RANDOM_KEY)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_the_embedded_broker_keeps_its_files_under_the_var_dir(tmp_path):
    # given: `make run`'s defaults (no REDIS_URL: kombu's filesystem broker), started elsewhere
    var_dir, cwd = tmp_path / "var", tmp_path / "cwd"
    (var_dir / "broker" / "processed").mkdir(parents=True)
    cwd.mkdir()
    environment = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    environment.update(
        DJANGO_SETTINGS_MODULE="config.settings.dev",
        STOREFRONT_VAR_DIR=str(var_dir),
        PYTHONPATH=str(ROOT),
    )
    # when: a broadcast (celery control) goes through the broker's exchange table
    script = "import django; django.setup(); from config.celery import app; app.control.ping()"
    result = run_python(script, env=environment, cwd=cwd)
    # then: nothing is written into the working directory
    assert result.returncode == 0, result.stderr
    assert list(cwd.iterdir()) == []
    assert (var_dir / "broker" / "control").is_dir()


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"ALLOWED_HOSTS": None}, "ALLOWED_HOSTS"),
        ({"ALLOWED_HOSTS": ""}, "ALLOWED_HOSTS"),
        ({"ALLOWED_HOSTS": "*"}, "ALLOWED_HOSTS"),
        ({"ALLOWED_HOSTS": "api.example.com,*"}, "ALLOWED_HOSTS"),
        ({"REDIS_URL": None}, "REDIS_URL"),
        ({"NUM_PROXIES": "one"}, "NUM_PROXIES"),
        ({"NUM_PROXIES": "-1"}, "NUM_PROXIES"),
    ],
)
def test_production_refuses_to_start_without_a_safe_environment(env, named):
    result = run_python(LOAD_SETTINGS, env=production_environment(**env))

    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert named in result.stderr


@pytest.mark.django_db
def test_production_is_https_only_by_default(settings):
    # given: this process on the HTTPS settings of production with the documented environment
    # (DEBUG, ALLOWED_HOSTS and the session cookie: test_check_deploy_reports_nothing_...)
    names = (
        "SECURE_SSL_REDIRECT",
        "SECURE_REDIRECT_EXEMPT",
        "SECURE_HSTS_SECONDS",
        "SECURE_HSTS_INCLUDE_SUBDOMAINS",
        "SECURE_PROXY_SSL_HEADER",
        "CSRF_COOKIE_SECURE",
        "SECURE_CONTENT_TYPE_NOSNIFF",
    )
    for name, value in settings_of(production_environment(), *names).items():
        setattr(settings, name, value)
    client = Client()

    # plain HTTP is redirected, also when the client says a proxy saw HTTPS (none is trusted)
    for claimed in ({}, {"HTTP_X_FORWARDED_PROTO": "https"}):
        response = client.get("/accounts/login/", **claimed)
        assert response.status_code == 301
        assert response["Location"] == "https://testserver/accounts/login/"
    # over HTTPS: HSTS for a year with the subdomains, and cookies for HTTPS only
    response = client.get("/accounts/login/", secure=True)
    assert response.status_code == 200
    assert response["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains"
    assert response.cookies["csrftoken"]["secure"] is True
    # and browsers do not guess another content type (Django's default, kept by production)
    assert response["X-Content-Type-Options"] == "nosniff"


def test_behind_a_tls_terminating_proxy_the_redirect_can_be_left_to_it():
    values = settings_of(
        production_environment(NUM_PROXIES="1", SECURE_SSL_REDIRECT="false"),
        "SECURE_SSL_REDIRECT",
        "SECURE_HSTS_SECONDS",
        "SECURE_PROXY_SSL_HEADER",
        "REST_FRAMEWORK",
    )

    assert values["SECURE_SSL_REDIRECT"] is False
    assert values["SECURE_HSTS_SECONDS"] == 365 * 24 * 3600
    assert values["SECURE_PROXY_SSL_HEADER"] == ["HTTP_X_FORWARDED_PROTO", "https"]
    assert values["REST_FRAMEWORK"]["NUM_PROXIES"] == 1


def test_check_deploy_reports_nothing_with_the_documented_environment():
    result = manage(
        "check", "--deploy", "--fail-level", "WARNING", environment=production_environment()
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues (1 silenced)" in result.stdout


def test_check_deploy_keeps_the_other_checks_live():
    # given: HSTS turned off, one of the checks that must not be silenced
    environment = production_environment(SECURE_HSTS_SECONDS="0")

    result = manage("check", "--deploy", "--fail-level", "WARNING", environment=environment)

    assert result.returncode != 0
    assert "security.W004" in result.stderr + result.stdout


@pytest.mark.parametrize(
    "script",
    [
        "import django; django.setup()",  # what manage.py does (see the next test)
        "import config.celery",
    ],
)
def test_a_process_without_a_settings_module_runs_production(script):
    environment = production_environment(DJANGO_SETTINGS_MODULE=None, SECRET_KEY=None)
    if script.startswith("import config"):
        script += "; from django.conf import settings; settings.DEBUG"
    else:
        script = "import manage, os, sys; sys.argv = ['manage.py', 'check']; manage.main()"

    result = run_python(script, env=environment)

    assert result.returncode != 0
    assert "SECRET_KEY" in result.stderr


def test_manage_py_without_a_settings_module_uses_production_settings():
    environment = production_environment(DJANGO_SETTINGS_MODULE=None)

    result = manage("diffsettings", "--all", environment=environment)

    assert result.returncode == 0, result.stderr
    assert "SECURE_SSL_REDIRECT = True" in result.stdout
    assert "WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS = False" in result.stdout


def test_dev_settings_alone_relax_nothing_that_weakens_security():
    environment = {k: v for k, v in os.environ.items() if k not in RELAXATIONS}
    environment.update(DJANGO_SETTINGS_MODULE="config.settings.dev")

    values = settings_of(
        environment,
        "DEBUG",
        "WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS",
        "SESSION_COOKIE_SECURE",
        "CSRF_COOKIE_SECURE",
    )

    assert values == {
        "DEBUG": False,
        "WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS": False,
        "SESSION_COOKIE_SECURE": True,
        "CSRF_COOKIE_SECURE": True,
    }


def test_the_dev_relaxations_are_explicit_opt_ins():
    environment = {k: v for k, v in os.environ.items() if k not in RELAXATIONS}
    environment.update(
        DJANGO_SETTINGS_MODULE="config.settings.dev",
        DEBUG="true",
        WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS="true",
        SECURE_COOKIES="false",
    )

    values = settings_of(
        environment, "DEBUG", "WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS", "SESSION_COOKIE_SECURE"
    )

    assert values == {
        "DEBUG": True,
        "WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS": True,
        "SESSION_COOKIE_SECURE": False,
    }


def dev_environment(**env) -> dict:
    environment = {k: v for k, v in os.environ.items() if k not in RELAXATIONS}
    environment.update(DJANGO_SETTINGS_MODULE="config.settings.dev")
    environment.update(env)
    return environment


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("DEBUG", "flase"),
        ("DEBUG", ""),
        ("SECURE_COOKIES", "nope"),
        ("WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS", "maybe"),
        ("DATABASE_URL", "postgress://storefront:pw@db:5432/storefront"),
        ("DATABASE_URL", "storefront.sqlite3"),
        ("DATABASE_URL", ""),
        ("DATABASE_URL", "postgres://storefront:pw@db:port/storefront"),
        ("DATABASE_URL", "postgres://storefront:pw@db:5432"),
        ("DATABASE_CONN_MAX_AGE", "60s"),
        ("API_RATE_LIMIT_PER_MINUTE", "1e3"),
        ("API_RATE_LIMIT_PER_MINUTE", "0"),
        ("LOGIN_FAILURE_LIMIT", "ten"),
        ("EVENTS_PRUNE_BATCH_SIZE", "1.5"),
        ("WEBHOOKS_TIMEOUT_SECONDS", "10s"),
        ("WEBHOOKS_TIMEOUT_SECONDS", "nan"),
        ("WEBHOOKS_LEASE_SECONDS", "-1"),
        ("WEBHOOKS_RETRY_SCHEDULE_SECONDS", "5,300,x"),
        ("WEBHOOKS_SWEEP_BATCH_SIZE", "many"),
    ],
)
def test_a_malformed_value_stops_the_process_naming_the_variable(name, value):
    result = run_python(LOAD_SETTINGS, env=dev_environment(**{name: value}))

    assert result.returncode != 0
    assert f"ImproperlyConfigured: {name}" in result.stderr


@pytest.mark.parametrize("module", ["dev", "test", "production"])
@pytest.mark.parametrize(
    "url", ["sqlite:///var/storefront.sqlite3", "mysql://storefront:pw@db:3306/storefront"]
)
def test_every_settings_module_refuses_a_database_other_than_postgresql(module, url):
    environment = production_environment(
        DJANGO_SETTINGS_MODULE=f"config.settings.{module}", DATABASE_URL=url
    )

    result = run_python(LOAD_SETTINGS, env=environment)

    assert result.returncode != 0
    assert (
        "ImproperlyConfigured: DATABASE_URL is not a PostgreSQL URL "
        "(postgres://user:password@host:5432/name): Storefront runs on PostgreSQL only."
    ) in result.stderr


def test_production_refuses_a_malformed_security_switch():
    # given: a typo in a switch whose default is the safe value
    result = run_python(LOAD_SETTINGS, env=production_environment(SECURE_SSL_REDIRECT="flase"))

    assert result.returncode != 0
    assert "ImproperlyConfigured: SECURE_SSL_REDIRECT='flase'" in result.stderr


def test_a_bad_database_url_is_reported_without_its_password():
    environment = dev_environment(DATABASE_URL="postgress://storefront:s3cret-pw@db/storefront")

    result = run_python(LOAD_SETTINGS, env=environment)

    assert "ImproperlyConfigured: DATABASE_URL" in result.stderr
    assert "s3cret-pw" not in result.stderr


def test_well_formed_values_are_read():
    environment = dev_environment(
        DEBUG="on",
        SECURE_COOKIES="0",
        DATABASE_URL="postgres://storefront:pw@db.internal:6432/shop",
        DATABASE_CONN_MAX_AGE="0",
        ALLOWED_HOSTS="a.example.com,b.example.com",
        WEBHOOKS_TIMEOUT_SECONDS="2.5",
        WEBHOOKS_RETRY_SCHEDULE_SECONDS="1, 2.5,,3",
        LOGIN_FAILURE_LIMIT="3",
        # a value starting with "$" is itself, not the name of another variable
        CLI_CLIENT_ID="$HOME",
    )

    values = settings_of(
        environment,
        "DEBUG",
        "SESSION_COOKIE_SECURE",
        "DATABASES",
        "ALLOWED_HOSTS",
        "WEBHOOKS_TIMEOUT_SECONDS",
        "WEBHOOKS_RETRY_SCHEDULE_SECONDS",
        "LOGIN_FAILURE_LIMIT",
        "CLI_CLIENT_ID",
    )

    database = values.pop("DATABASES")["default"]
    assert values == {
        "DEBUG": True,
        "SESSION_COOKIE_SECURE": False,
        "ALLOWED_HOSTS": ["a.example.com", "b.example.com"],
        "WEBHOOKS_TIMEOUT_SECONDS": 2.5,
        "WEBHOOKS_RETRY_SCHEDULE_SECONDS": [1.0, 2.5, 3.0],
        "LOGIN_FAILURE_LIMIT": 3,
        "CLI_CLIENT_ID": "$HOME",
    }
    assert {k: database[k] for k in ("ENGINE", "NAME", "USER", "HOST", "PORT", "CONN_MAX_AGE")} == {
        "ENGINE": "core.database.backend",
        "NAME": "shop",
        "USER": "storefront",
        "HOST": "db.internal",
        "PORT": 6432,
        "CONN_MAX_AGE": 0,
    }


# What `make run`'s opt-ins (RELAXATIONS) trip in the deploy checklist: DEBUG, session and CSRF
# cookies sent over plain HTTP, webhooks to private addresses, insecure cookies.
RELAXATION_CHECKS = (
    "security.W018",
    "security.W012",
    "security.W016",
    "storefront.E001",
    "storefront.E002",
)


def test_dev_with_nothing_set_trips_none_of_the_checks_a_relaxation_trips(tmp_path):
    # DATABASE_URL stays (the suite's): without it the dev settings start `make run`'s
    # PostgreSQL (tests/devtools/test_make_run_database.py).
    environment = dev_environment(STOREFRONT_VAR_DIR=str(tmp_path))

    result = manage("check", "--deploy", environment=environment)

    assert result.returncode == 0, result.stderr
    assert [check for check in RELAXATION_CHECKS if check in result.stderr] == [], result.stderr


@pytest.mark.parametrize(
    "env, prepared",
    [
        ({}, True),
        # a connection per request (docs/scaling.md's PgBouncer set-up): nothing to reuse
        ({"DATABASE_CONN_MAX_AGE": "0"}, False),
        ({"DATABASE_CONN_MAX_AGE": "0", "DATABASE_PREPARED_STATEMENTS": "true"}, True),
        ({"DATABASE_PREPARED_STATEMENTS": "false"}, False),
    ],
)
def test_prepared_statements_follow_connection_reuse_unless_told(env, prepared):
    environment = production_environment(
        DATABASE_CONN_MAX_AGE=None, DATABASE_PREPARED_STATEMENTS=None
    )
    environment.update(env)
    assert settings_of(environment, "DATABASE_PREPARED_STATEMENTS") == {
        "DATABASE_PREPARED_STATEMENTS": prepared
    }


@pytest.mark.parametrize(
    ("relaxation", "check"),
    [
        ({"WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS": "true"}, "storefront.E001"),
        ({"SECURE_COOKIES": "false"}, "storefront.E002"),
    ],
)
def test_check_deploy_fails_on_a_make_run_relaxation_under_production(relaxation, check):
    # given: production settings that inherited one of `make run`'s opt-ins
    environment = production_environment(**relaxation)
    # when: the deploy checklist runs at its default level (errors only)
    result = manage("check", "--deploy", environment=environment)
    # then: an error, not a warning one may overlook
    assert result.returncode != 0
    assert "ERROR" in result.stderr and check in result.stderr, result.stderr


def test_every_settings_module_validates_passwords_with_djangos_four_validators():
    validators = [
        "django.contrib.auth.password_validation.UserAttributeSimilarityValidator",
        "django.contrib.auth.password_validation.MinimumLengthValidator",
        "django.contrib.auth.password_validation.CommonPasswordValidator",
        "django.contrib.auth.password_validation.NumericPasswordValidator",
    ]
    for environment in (production_environment(), dev_environment()):
        configured = settings_of(environment, "AUTH_PASSWORD_VALIDATORS")
        names = [v["NAME"] for v in configured["AUTH_PASSWORD_VALIDATORS"]]
        assert names == validators, environment["DJANGO_SETTINGS_MODULE"]


def test_seed_demo_refuses_to_run_under_production_settings():
    # seed_demo makes a superuser whose password is "demo"
    result = manage("seed_demo", environment=production_environment())

    assert result.returncode != 0
    assert "CommandError: seed_demo" in result.stderr, result.stderr
    assert "Demo data ready" not in result.stdout


def test_manage_py_missing_a_setting_says_so_in_one_line_and_names_the_fix():
    # given: a newcomer's shell: no settings module, no production environment
    environment = {
        k: v
        for k, v in production_environment(DJANGO_SETTINGS_MODULE=None).items()
        if k not in {"SECRET_KEY", "DATABASE_URL"}
    }

    result = manage("create_api_key", "--user", "demo", environment=environment)

    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith("manage.py: config.settings.production cannot start: ")
    assert "DJANGO_SETTINGS_MODULE=config.settings.dev" in line
