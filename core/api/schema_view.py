"""/api/schema/, built once per process (core.api.schema is imported while DRF loads its
settings, before drf_spectacular.views can be: hence a module of its own)."""

import hashlib
import threading
from dataclasses import dataclass

from django.http import HttpResponse
from django.utils.cache import get_conditional_response
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SCHEMA_KWARGS, SpectacularAPIView


@dataclass(frozen=True)
class RenderedSchema:
    content: bytes
    content_type: str
    etag: str


class SchemaCache:
    """The schema document, built at most once, and each format rendered at most once.

    The document depends only on the code and the settings, which change with a deploy, never
    at run time: nothing is invalidated. Building it (and rendering YAML) costs far more CPU
    than a request should, and every anonymous GET of /api/schema/ would pay it again.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._document = None
        self._renderings: dict[type, RenderedSchema] = {}

    def rendered(self, renderer_class, build_document) -> RenderedSchema:
        rendering = self._renderings.get(renderer_class)
        if rendering is not None:
            return rendering
        # One build even when the first requests arrive together (gthread workers).
        with self._lock:
            if self._document is None:
                self._document = build_document()
            rendering = self._renderings.get(renderer_class)
            if rendering is None:
                rendering = self._renderings[renderer_class] = _render(
                    renderer_class, self._document
                )
        return rendering


def _render(renderer_class, document) -> RenderedSchema:
    renderer = renderer_class()
    content = renderer.render(document, renderer.media_type, {})
    content_type = renderer.media_type
    if renderer.charset:
        content_type += f"; charset={renderer.charset}"
    return RenderedSchema(content, content_type, f'"{hashlib.sha256(content).hexdigest()}"')


schema_cache = SchemaCache()


class CachedSchemaView(SpectacularAPIView):
    """/api/schema/ from `schema_cache`, with an ETag (a revalidation is a 304 without the
    body). Content negotiation as drf-spectacular's: YAML by default, JSON with `Accept` or
    `?format=json`. `?lang` and `?version` are not served: the API has one version and its
    descriptions are English."""

    @extend_schema(**SCHEMA_KWARGS)
    def get(self, request, *args, **kwargs):
        renderer_class = type(request.accepted_renderer)
        rendered = schema_cache.rendered(renderer_class, self._build_document)
        response = HttpResponse(rendered.content, content_type=rendered.content_type)
        response["ETag"] = rendered.etag
        response["Content-Disposition"] = f'inline; filename="{self._get_filename(request, None)}"'
        return get_conditional_response(request, etag=rendered.etag, response=response)

    def _build_document(self) -> dict:
        # What `manage.py spectacular` builds: no request, so nothing of the first one (its
        # host, its credential) is baked into what every later request gets.
        generator = self.generator_class(urlconf=self.urlconf, patterns=self.patterns)
        return generator.get_schema(request=None, public=self.serve_public)
