#!/usr/bin/env python
import os
import sys

DEVELOPMENT_HINT = (
    "For development in a checkout, choose the development settings: "
    "DJANGO_SETTINGS_MODULE=config.settings.dev .venv/bin/python manage.py ..."
)


def main():
    # Secure by default: a process started without DJANGO_SETTINGS_MODULE runs the production
    # settings (and refuses to start without their environment); `make run` chooses dev.
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        settings.INSTALLED_APPS  # noqa: B018  (loads the settings: their refusals come first)
    except ImproperlyConfigured as refusal:
        # What is missing, in one line: a person reads it, a traceback would bury it.
        module = os.environ["DJANGO_SETTINGS_MODULE"]
        hint = f" {DEVELOPMENT_HINT}" if module == "config.settings.production" else ""
        sys.exit(f"manage.py: {module} cannot start: {refusal}{hint}")
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
