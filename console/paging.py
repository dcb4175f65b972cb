"""Keyset pages for the long lists (deliveries, events): newest first, a bounded page, and an
"older" link holding the last row's position. No count: it would read every matching row of a
list that grows without bound."""

from django.db.models import Q

PAGE_SIZE = 25


def keyset_page(rows, *, order: tuple[str, str], after: tuple | None, size: int = PAGE_SIZE):
    """`rows` ordered by `order` descending; the page after the position `after` (a pair of
    the two fields' values), and the position of its last row when older rows follow."""
    first, second = order
    if after is not None:
        older = Q(**{f"{first}__lt": after[0]}) | Q(**{first: after[0], f"{second}__lt": after[1]})
        rows = rows.filter(older)
    found = list(rows.order_by(f"-{first}", f"-{second}")[: size + 1])
    page = found[:size]
    more = len(found) > size
    last = page[-1] if more else None
    return page, ((getattr(last, first), getattr(last, second)) if last else None)
