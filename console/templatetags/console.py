"""Template filters of the console: times in UTC ISO form with a relative hint, JSON shown
formatted. Server-side: the pages need no script."""

import json
from datetime import UTC

from django import template
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.html import format_html
from django.utils.timesince import timesince, timeuntil

register = template.Library()


@register.filter
def utc(moment):
    """`<time>` with `2026-11-29T05:35:00Z` and a hint: "3 minutes ago", "in 2 days"."""
    if isinstance(moment, str):  # an API representation's time
        moment = parse_datetime(moment)
    if moment is None:
        return "—"
    iso = moment.astimezone(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    now = timezone.now()
    if abs((now - moment).total_seconds()) < 60:
        hint = "just now"
    elif moment <= now:
        hint = f"{timesince(moment, now, depth=1)} ago"
    else:
        hint = f"in {timeuntil(moment, now, depth=1)}"
    return format_html(
        '<time datetime="{}">{}</time> <span class="hint">({})</span>', iso, iso, hint
    )


@register.filter
def pretty_json(value) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


@register.filter
def field_error(field_errors: dict, name: str) -> list[str]:
    return field_errors.get(name, []) if field_errors else []
