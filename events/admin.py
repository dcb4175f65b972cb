from django.contrib import admin

from core.admin_filters import StoreSlugFilter, ViewOnlyAdminMixin
from events.models import Event, EventPruneMark


class ReadOnlyAdmin(ViewOnlyAdminMixin, admin.ModelAdmin):
    """The journal is written by `events.services.record` alone, its prune marks by
    `events_prune`: the admin only reads them."""

    list_select_related = ["store"]
    autocomplete_fields = ["store"]


@admin.register(Event)
class EventAdmin(ReadOnlyAdmin):
    list_display = ["id", "type", "version", "store", "subject_type", "subject_id", "occurred_at"]
    list_filter = ["type", "subject_type", StoreSlugFilter]
    search_fields = ["=id", "=subject_id"]
    ordering = ["-occurred_at"]
    date_hierarchy = "occurred_at"
    # The journal is large: no COUNT(*) over it on every page.
    show_full_result_count = False


@admin.register(EventPruneMark)
class EventPruneMarkAdmin(ReadOnlyAdmin):
    list_display = ["store", "txid", "event_id", "updated_at"]
    list_filter = [StoreSlugFilter]
