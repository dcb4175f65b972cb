"""Model instances from hand-written SQL, for the few hot reads that skip the ORM's compiler.

Compiling an ORM query costs ~1 ms of Python per request on this host (docs/benchmarks/layer.md)
against ~0.15 ms for executing plain SQL; the authentication and store lookups run on every API
request, so they use these helpers. The column lists come from the models, so a new field is
picked up without touching the SQL.
"""

from django.db import models


def select_list(model: type[models.Model], alias: str, *, exclude: tuple[str, ...] = ()) -> str:
    """`alias."col", ...` for the model's concrete fields (minus `exclude`), in field order."""
    return ", ".join(
        f'{alias}."{field.column}"'
        for field in model._meta.concrete_fields
        if field.attname not in exclude
    )


def instance_from_row(
    model: type[models.Model], row: tuple, *, exclude: tuple[str, ...] = ()
) -> models.Model:
    """The instance for `row` (in `select_list` order); excluded fields are deferred, and
    loaded by a query if ever read, as with QuerySet.defer()."""
    field_names = [f.attname for f in model._meta.concrete_fields if f.attname not in exclude]
    return model.from_db("default", field_names, row)
