#!/usr/bin/env python
import os
import sys


def main():
    # Secure by default: a process started without DJANGO_SETTINGS_MODULE runs the production
    # settings (and refuses to start without their environment); `make run` chooses dev.
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
