"""The bodies of the coupon search and batch endpoints: read into what the services
take, or a 422 whose `errors` name the resource and its field (`resources.<i>.<field>` of a
list, `resources.<id>.<field>` of an update), as the single writes name the field alone.

The serializers at the end only describe these bodies in the schema; each coupon of a batch is
validated by CouponWriteSerializer, as its single write would be.
"""

from collections.abc import Mapping
from typing import Any

from rest_framework import serializers

from core.api.errors import ValidationFailed
from core.api.fields import StrictIntegerField
from coupons.models import Coupon
from coupons.search import MAX_DEPTH, OPERATORS, Search, coupon_search_parse
from coupons.serializers import CouponWriteSerializer
from coupons.services import BATCH_MAX

RESOURCES_LIST_RULE = f"must be a list of 1 to {BATCH_MAX} coupons (objects)"
RESOURCES_MAP_RULE = f"must be an object of 1 to {BATCH_MAX} coupon ids, each with its changes"
RESOURCES_IDS_RULE = f"must be a list of 1 to {BATCH_MAX} distinct coupon ids (integers from 1)"


def _body(data: Any) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise ValidationFailed.field("resources", "the body must be a JSON object")
    return data


def _resources(data: Any, kind: type, rule: str) -> Any:
    resources = _body(data).get("resources")
    if not isinstance(resources, kind) or not 1 <= len(resources) <= BATCH_MAX:
        raise ValidationFailed.field("resources", rule)
    return resources


def _validated(items: Mapping[Any, Any], serializer_for) -> dict[Any, dict]:
    """Each item through its serializer; every item's errors at once, keyed by resource."""
    valid, errors = {}, {}
    for key, item in items.items():
        serializer = serializer_for(key, item)
        if serializer.is_valid():
            valid[key] = serializer.validated_data
            continue
        for field, messages in serializer.errors.items():
            errors[f"resources.{key}.{field}"] = [str(message) for message in messages]
    if errors:
        raise ValidationFailed(errors)
    return valid


def batch_create_resources(data: Any) -> list[dict]:
    """`{"resources": [coupon, ...]}`: each coupon as POST /coupons takes it."""
    resources = _resources(data, list, RESOURCES_LIST_RULE)
    if not all(isinstance(item, Mapping) for item in resources):
        raise ValidationFailed.field("resources", RESOURCES_LIST_RULE)
    valid = _validated(dict(enumerate(resources)), lambda _, item: CouponWriteSerializer(data=item))
    return [valid[index] for index in range(len(resources))]


def batch_update_ids(data: Any) -> dict[str, int]:
    """The coupon ids of `{"resources": {"<id>": changes, ...}}`, by their key."""
    resources = _resources(data, Mapping, RESOURCES_MAP_RULE)
    ids = {}
    for key in resources:
        if not (isinstance(key, str) and key.isascii() and key.isdigit() and len(key) < 19):
            raise ValidationFailed.field(f"resources.{key}", "must be a coupon id")
        ids[key] = int(key)
    return ids


def batch_update_resources(data: Any, coupons: Mapping[str, Coupon]) -> dict[int, dict]:
    """Each coupon's changes as PATCH takes them, checked over the coupon as read (the service
    checks them again under the lock)."""
    resources = _body(data)["resources"]
    valid = _validated(
        resources,
        lambda key, item: CouponWriteSerializer(coupons[key], data=item, partial=True),
    )
    return {coupons[key].pk: changes for key, changes in valid.items()}


def batch_delete_ids(data: Any) -> list[int]:
    """`{"resources": [id, ...]}`."""
    resources = _resources(data, list, RESOURCES_IDS_RULE)
    ids = all(isinstance(i, int) and not isinstance(i, bool) and i >= 1 for i in resources)
    if not ids or len(set(resources)) != len(resources):
        raise ValidationFailed.field("resources", RESOURCES_IDS_RULE)
    return resources


def search_body(data: Any) -> Search:
    """Laravel Orion's search body over the coupon's own fields (coupons/search.py). `includes`
    names relations, and a coupon has none the API exposes."""
    if not isinstance(data, Mapping):
        raise ValidationFailed.field("filters", "the body must be a JSON object")
    includes = data.get("includes")
    if includes not in (None, []):
        raise ValidationFailed.field("includes", "a coupon has no relations to include")
    return coupon_search_parse(data)


# The schema of those bodies.
class SearchFilterSerializer(serializers.Serializer):
    field = serializers.CharField(required=False, help_text="A field of the coupon.")
    operator = serializers.ChoiceField(choices=OPERATORS, required=False, default="=")
    value = serializers.JSONField(required=False, help_text="Read as the field's type.")
    type = serializers.ChoiceField(choices=["and", "or"], required=False, default="and")
    nested = serializers.ListField(
        child=serializers.DictField(),
        required=False,
        help_text=f"A group of filters of this same shape, at most {MAX_DEPTH} levels deep.",
    )


class SearchSortSerializer(serializers.Serializer):
    field = serializers.CharField()
    direction = serializers.ChoiceField(choices=["asc", "desc"], required=False, default="asc")


class SearchTermSerializer(serializers.Serializer):
    value = serializers.CharField(allow_blank=True, max_length=255)
    case_sensitive = serializers.BooleanField(required=False, default=False)


class CouponSearchRequest(serializers.Serializer):
    filters = SearchFilterSerializer(many=True, required=False)
    sort = SearchSortSerializer(many=True, required=False)
    search = SearchTermSerializer(required=False)
    includes = serializers.ListField(
        child=serializers.DictField(), required=False, max_length=0, help_text="Always empty."
    )


class CouponBatchCreateRequest(serializers.Serializer):
    resources = serializers.ListField(
        child=CouponWriteSerializer(), min_length=1, max_length=BATCH_MAX
    )


class CouponBatchUpdateRequest(serializers.Serializer):
    resources = serializers.DictField(
        child=CouponWriteSerializer(partial=True),
        help_text=f"1 to {BATCH_MAX} coupon ids (as keys), each with the fields to change.",
    )


class CouponBatchDeleteRequest(serializers.Serializer):
    resources = serializers.ListField(
        child=StrictIntegerField(min_value=1), min_length=1, max_length=BATCH_MAX
    )
