"""Content negotiation of the API (REST_FRAMEWORK DEFAULT_CONTENT_NEGOTIATION_CLASS)."""

from rest_framework.negotiation import DefaultContentNegotiation


class ApiContentNegotiation(DefaultContentNegotiation):
    """DRF's negotiation, answered at once for a request that states no preference.

    Most API requests send no Accept header, `*/*` (curl) or the first renderer's own media
    type: for those DRF's answer is always the first renderer and its media type, and parsing
    and ranking the header to get there was about 4% of an authenticated no-op
    (docs/benchmarks/layer.md, issue 30). Any other Accept header, a format suffix or a
    `format` query parameter is negotiated by DRF as before.
    """

    def select_renderer(self, request, renderers, format_suffix=None):
        if renderers and format_suffix is None:
            accept = request.headers.get("accept", "*/*")
            first = renderers[0]
            if accept in ("*/*", first.media_type) and (
                self.settings.URL_FORMAT_OVERRIDE not in request.query_params
            ):
                return first, first.media_type
        return super().select_renderer(request, renderers, format_suffix)
