from django.apps import AppConfig


class StoresConfig(AppConfig):
    name = "stores"

    def ready(self):
        from stores.services import connect_receivers

        connect_receivers()
