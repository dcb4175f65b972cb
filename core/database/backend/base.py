"""The PostgreSQL backend (DATABASES ENGINE "core.database.backend"): django-prometheus' (query,
error and connection counts for /metrics) that waits for a restarting server when it opens a
connection (core/database/connections.py `connect_waiting`), and opens a web request's
connections with the statement timeout (core/database/connections.py
`with_statement_timeout`)."""

from django_prometheus.db.backends.postgresql import base

from core.database.connections import connect_waiting, with_statement_timeout


class DatabaseWrapper(base.DatabaseWrapper):
    def get_connection_params(self):
        return with_statement_timeout(super().get_connection_params())

    def get_new_connection(self, conn_params):
        return connect_waiting(
            super().get_new_connection, conn_params, error=self.Database.OperationalError
        )
