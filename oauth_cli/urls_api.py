from core.api.routers import ApiRouter
from oauth_cli import api_views

router = ApiRouter()
router.register("oauth/installation", api_views.InstallationViewSet, basename="oauth-installation")

urlpatterns = router.urls
