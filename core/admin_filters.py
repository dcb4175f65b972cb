"""The "by store" filter of every admin changelist that lists rows of many stores, and the
admin mixins of rows only services create or change.

In the shared layer, as it imports no app: accounts' API key admin uses it too, and accounts
sits below stores (docs/decisions/layer.md "A layered house").
"""

from django.contrib import admin


class StoreSlugFilter(admin.SimpleListFilter):
    """A text input for a store slug instead of Django's default related-field filter, which
    renders one link per store: with thousands of stores the sidebar would load them all on
    every changelist page. Subclasses name the lookup (`field_path`)."""

    title = "store"
    parameter_name = "store"
    template = "admin/store_slug_filter.html"
    field_path = "store__slug"

    def __init__(self, request, params, model, model_admin):
        super().__init__(request, params, model, model_admin)
        # The filter's form is a plain GET form: it resubmits the changelist's other filters,
        # search and ordering (not the page number: a new filter starts on page one).
        self.other_params = [
            (name, value)
            for name, values in request.GET.lists()
            if name not in (self.parameter_name, "p")
            for value in values
        ]

    def lookups(self, request, model_admin):
        return []

    def has_output(self):
        return True

    def choices(self, changelist):
        yield {
            "selected": self.value() is None,
            "query_string": changelist.get_query_string(remove=[self.parameter_name]),
            "display": "All",
        }

    def queryset(self, request, queryset):
        slug = self.value()
        if not slug:
            return queryset
        return queryset.filter(**{self.field_path: slug.strip().lower()}).distinct()


class NoAddAdminMixin:
    """ModelAdmin (or inline) mixin: the rows come from services, never from an add form."""

    def has_add_permission(self, request, obj=None):
        return False


class ViewOnlyAdminMixin(NoAddAdminMixin):
    """ModelAdmin mixin: the rows are shown, never added, changed or deleted by hand."""

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


def store_slug_filter(field_path: str) -> type[StoreSlugFilter]:
    """A StoreSlugFilter over another lookup (e.g. `current_store__slug`)."""
    return type("StoreSlugFilter", (StoreSlugFilter,), {"field_path": field_path})
