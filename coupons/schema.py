"""The OpenAPI description of the coupon endpoints, per version (coupons/views.py): v1 answers a
single coupon bare, v2 in `data`; both answer batches in `data`."""

from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    extend_schema,
    extend_schema_view,
)

from core.api.schema import (
    RequiredBodySchema,
    data_envelope,
    error_responses,
    response_example,
)
from coupons.bodies import (
    CouponBatchCreateRequest,
    CouponBatchDeleteRequest,
    CouponBatchUpdateRequest,
    CouponSearchRequest,
)
from coupons.filters import CouponListFilter
from coupons.serializers import (
    COUPON_AMOUNT_CREATE_EXAMPLE,
    COUPON_CREATE_EXAMPLE,
    COUPON_EXAMPLE,
    COUPON_UPDATE_EXAMPLE,
    COUPON_UPDATED_EXAMPLE,
    CouponCreateRequest,
    CouponSerializer,
    CouponWriteSerializer,
)
from coupons.services import BATCH_MAX

# The router's path regex would give `id` the schema of a string of digits; the spec says integer.
COUPON_ID_PARAMETER = OpenApiParameter("id", int, OpenApiParameter.PATH)
# The list's `with_trashed` and `only_trashed`, as a single coupon's read takes them too.
TRASHED_PARAMETERS = [
    OpenApiParameter(name, filter.parameter_schema, OpenApiParameter.QUERY)
    for name, filter in CouponListFilter.base_filters.items()
]
COUPON_ENVELOPE = data_envelope("CouponEnvelope", CouponSerializer)
COUPONS_ENVELOPE = data_envelope("CouponsEnvelope", CouponSerializer, many=True)
SEARCH_EXAMPLE = {
    "filters": [
        {"field": "type", "operator": "=", "value": "PERCENTAGE"},
        {
            "type": "and",
            "nested": [
                {"field": "expires_at", "operator": "=", "value": None},
                {
                    "type": "or",
                    "field": "expires_at",
                    "operator": ">",
                    "value": "2030-01-01T00:00:00Z",
                },
            ],
        },
    ],
    "search": {"value": "summer", "case_sensitive": False},
    "sort": [{"field": "discount", "direction": "desc"}],
}
AUTH = {
    1: "API keys only (v1).",
    2: "API keys, or OAuth tokens with X-STORE (v2).",
}
BATCH_RULES = (
    f"All or nothing, in one transaction; 1 to {BATCH_MAX} resources; a 422 names the resource "
    "and its field in `errors` (`resources.<i>.<field>`); one event per coupon."
)


def coupon_schema(*, version: int):
    """The class decorator describing CouponViewSet (1) or CouponV2ViewSet (2)."""
    auth = AUTH[version]

    def single():
        return COUPON_ENVELOPE if version == 2 else CouponSerializer

    def example(name, value, status=200):
        return response_example(name, {"data": value} if version == 2 else value, status)

    def op(name: str) -> str:
        return f"coupons_{name}" if version == 1 else f"coupons_v2_{name}"

    deleted = {204: None} if version == 1 else {200: COUPON_ENVELOPE}
    return extend_schema_view(
        list=extend_schema(
            operation_id=op("list"),
            summary="List the store's coupons, oldest first (id order)",
            description="A Laravel-style page of the store's live coupons; `with_trashed=true` "
            f"adds the soft-deleted ones, `only_trashed=true` lists only them. {auth}",
            responses={200: CouponSerializer(many=True), **error_responses(403, 422)},
        ),
        create=extend_schema(
            operation_id=op("create"),
            summary="Create a coupon",
            description="A percentage or amount coupon; its code must be unused among the "
            f"store's live coupons (422 on `code` otherwise). {auth}",
            request=CouponCreateRequest,
            responses={201: single(), **error_responses(403, 409, 415, 422)},
            examples=[
                OpenApiExample("Percentage", value=COUPON_CREATE_EXAMPLE, request_only=True),
                OpenApiExample("Amount", value=COUPON_AMOUNT_CREATE_EXAMPLE, request_only=True),
                example("Created", COUPON_EXAMPLE, 201),
            ],
        ),
        retrieve=extend_schema(
            operation_id=op("retrieve"),
            parameters=[COUPON_ID_PARAMETER, *TRASHED_PARAMETERS],
            summary="A coupon of the store",
            description="A live coupon; a soft-deleted one with `with_trashed=true` or "
            "`only_trashed=true`, as the list reads them (`only_trashed`: a live coupon is a "
            f"404). Otherwise a soft-deleted coupon, or another store's, is a 404. {auth}",
            responses={200: single(), **error_responses(403, 404, 422)},
            examples=[example("Coupon", COUPON_EXAMPLE)],
        ),
        update=extend_schema(
            operation_id=op("replace"),
            parameters=[COUPON_ID_PARAMETER],
            summary="Replace a live coupon",
            description="The whole coupon, as on create: the fields the body omits go back to "
            "their defaults (null; `applies_to` one_time; no products or variants). A code "
            f"already used by another live coupon is a 422 on `code`. {auth}",
            request=CouponCreateRequest,
            responses={200: single(), **error_responses(403, 404, 409, 415, 422)},
            examples=[
                OpenApiExample("Replacement", value=COUPON_CREATE_EXAMPLE, request_only=True),
                example("Replaced", COUPON_EXAMPLE),
            ],
        ),
        partial_update=extend_schema(
            operation_id=op("update"),
            parameters=[COUPON_ID_PARAMETER],
            summary="Change some fields of a live coupon",
            description="Only the fields sent change; the result is checked as a whole (422). "
            f"A code already used by a live coupon is a 422 on `code`. {auth}",
            request=CouponWriteSerializer(partial=True),
            responses={200: single(), **error_responses(403, 404, 409, 415, 422)},
            examples=[
                OpenApiExample(
                    "New discount and expiry", value=COUPON_UPDATE_EXAMPLE, request_only=True
                ),
                example("Updated", COUPON_UPDATED_EXAMPLE),
            ],
        ),
        destroy=extend_schema(
            operation_id=op("destroy"),
            parameters=[COUPON_ID_PARAMETER],
            summary="Soft-delete a coupon; it then answers 404 and frees its code",
            description="The coupon stays listed with `with_trashed` / `only_trashed` but can "
            "no longer be read, changed or applied. "
            + ("No body (204). " if version == 1 else "Answers the deleted coupon. ")
            + auth,
            request=None,
            responses={**deleted, **error_responses(403, 404, 409, 422)},
            examples=[]
            if version == 1
            else [example("Deleted", {**COUPON_EXAMPLE, "deleted_at": "2026-06-02T10:00:00Z"})],
        ),
        search=extend_schema(
            operation_id=op("search"),
            summary="Search the store's coupons (Laravel Orion's search body)",
            description="`filters` (field, operator, value; `type` and/or; `nested` groups), "
            "`sort` and `search` (in the code) over the coupon's own fields; a field it may not "
            "name is a 422 naming it (`filters.<i>.field`). `limit`, `page`, `with_trashed` and "
            f"`only_trashed` are query parameters, paged as the list. {auth}",
            request=CouponSearchRequest,
            responses={200: CouponSerializer(many=True), **error_responses(403, 415, 422)},
            examples=[
                OpenApiExample("Search", value=SEARCH_EXAMPLE, request_only=True),
                response_example("Page", COUPON_EXAMPLE),
            ],
        ),
        batch_create=extend_schema(
            operation_id=op("batch_create"),
            summary="Create coupons in one request",
            description=f"Each resource as on create. {BATCH_RULES} {auth}",
            request=CouponBatchCreateRequest,
            responses={201: COUPONS_ENVELOPE, **error_responses(403, 409, 415, 422)},
            examples=[
                OpenApiExample(
                    "Two coupons",
                    value={"resources": [COUPON_CREATE_EXAMPLE, COUPON_AMOUNT_CREATE_EXAMPLE]},
                    request_only=True,
                ),
                response_example(
                    "Created",
                    {"data": [COUPON_EXAMPLE, {**COUPON_EXAMPLE, "id": 43, "code": "TENOFF"}]},
                    201,
                ),
            ],
        ),
    )


BATCH_EXAMPLE = response_example(
    "Coupons", {"data": [COUPON_EXAMPLE, {**COUPON_EXAMPLE, "id": 43, "code": "TENOFF"}]}
)
BATCH_AUTH = "API keys on v1; API keys, or OAuth tokens with X-STORE, on v2."
# The PATCH and DELETE of /coupons/batch are methods mapped onto the POST action, which
# extend_schema_view cannot reach: coupons/views.py decorates them with these.
BATCH_UPDATE_SCHEMA = extend_schema(
    summary="Change several coupons in one request",
    description="`resources` maps coupon ids to their changes, each as on PATCH; an id that is "
    f"not a live coupon of the store is a 422 on `resources.<id>`. {BATCH_RULES} {BATCH_AUTH}",
    request=CouponBatchUpdateRequest,
    responses={200: COUPONS_ENVELOPE, **error_responses(403, 409, 415, 422)},
    examples=[
        OpenApiExample(
            "Two coupons",
            value={"resources": {"42": {"discount": 30}, "43": {"limit": None}}},
            request_only=True,
        ),
        BATCH_EXAMPLE,
    ],
)
BATCH_DELETE_SCHEMA = extend_schema(
    summary="Soft-delete several coupons in one request",
    description="Answers the deleted coupons. An id that is not a live coupon of the store is "
    f"a 422 on `resources.<i>`. {BATCH_RULES} {BATCH_AUTH}",
    request=CouponBatchDeleteRequest,
    responses={200: COUPONS_ENVELOPE, **error_responses(403, 409, 415, 422)},
    examples=[
        OpenApiExample("Two coupons", value={"resources": [42, 43]}, request_only=True),
        BATCH_EXAMPLE,
    ],
)


class CouponSchema(RequiredBodySchema):
    """The batch PATCH and DELETE need their body too (RequiredBodySchema covers POST and
    PUT)."""

    def _get_request_for_media_type(self, serializer, direction="request"):
        schema, required = super()._get_request_for_media_type(serializer, direction)
        return schema, required or getattr(self.view, "action", None) in BODY_ACTIONS


BODY_ACTIONS = ("batch_update", "batch_delete")


class CouponV2Schema(CouponSchema):
    """The v2 operations' generated ids apart from v1's (the batch PATCH and DELETE have none
    of their own)."""

    def get_operation_id(self):
        return super().get_operation_id().replace("coupons_", "coupons_v2_", 1)
