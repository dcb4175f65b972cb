"""The one router every app registers its ViewSets on (docs/style.md, NetBox's `api/urls.py`).

DRF's SimpleRouter without trailing slashes (the spec's paths have none), plus singleton
resources: a ViewSet with `singleton = True` is one object per store or user (the webhook
channel, the OAuth installation), served at the prefix itself with no `{pk}`:

    GET/PUT/PATCH/DELETE {prefix}      -> retrieve / update / partial_update / destroy
    POST {prefix}/<url_path>           -> an @action(detail=False)

Methods a ViewSet does not implement answer the envelope's 405 with `Allow`, as DRF does.
"""

from rest_framework.routers import DynamicRoute, Route, SimpleRouter

SINGLETON_ROUTES = [
    Route(
        url=r"^{prefix}{trailing_slash}$",
        mapping={
            "get": "retrieve",
            "put": "update",
            "patch": "partial_update",
            "delete": "destroy",
        },
        name="{basename}",
        detail=False,
        initkwargs={"suffix": "Instance"},
    ),
    DynamicRoute(
        url=r"^{prefix}/{url_path}{trailing_slash}$",
        name="{basename}-{url_name}",
        detail=False,
        initkwargs={},
    ),
]


class ApiRouter(SimpleRouter):
    def __init__(self):
        super().__init__(trailing_slash=False)

    def get_routes(self, viewset):
        if not getattr(viewset, "singleton", False):
            return super().get_routes(viewset)
        # SimpleRouter reads its route table from self.routes: swap it for this viewset only.
        self.routes = SINGLETON_ROUTES
        try:
            return super().get_routes(viewset)
        finally:
            del self.routes
