from django.apps import AppConfig


class ApiConfig(AppConfig):
    """The shared API conventions: error envelope, paginator, idempotency, rate limits."""

    name = "core.api"
    label = "api"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from core.operations import deploy_checks  # registers the deploy checks

        deploy_checks.development_opt_ins_warn()
