"""Migrations run by a test with Django's MigrationExecutor, to the schema of their targets."""

from django.db import connection
from django.db.migrations.executor import MigrationExecutor


def migrate(targets):
    """Migrates the test database to `targets` (forwards or backwards); returns the apps of
    that schema (historical models)."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def migrate_to_latest():
    """Migrates the test database forwards to every app's latest migration."""
    return migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
