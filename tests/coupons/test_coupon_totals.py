"""The coupon lists' totals (`meta.total`) come from per-store counters that PostgreSQL
triggers keep in the writer's transaction (docs/decisions/coupons.md "List growth: maintained list
totals and deferred joins"): they must stay exact after every kind of write, bulk and
concurrent ones included."""

import itertools
import threading
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import OperationalError, connection, transaction
from django.utils import timezone
from rest_framework.test import APIClient

from coupons.models import Coupon, CouponTotal
from coupons.services import coupon_create, coupon_delete, coupon_restore, coupon_update
from stores.models import Store
from tests.concurrency import run_at_once
from tests.factories import CouponFactory, MembershipFactory, StoreFactory, make_api_key

pytestmark = pytest.mark.django_db

LISTINGS = {"live": "", "with": "&with_trashed=true", "only": "&only_trashed=true"}


def listed_totals(client, store) -> dict[str, int]:
    """`meta.total` of each listing of the store, as the API answers it."""
    totals = {}
    for listing, query in LISTINGS.items():
        response = client.get(f"/api/v1/coupons?limit=1{query}", HTTP_X_STORE=store.slug)
        assert response.status_code == 200, response.content
        totals[listing] = response.json()["meta"]["total"]
    return totals


def counted(store) -> dict[str, int]:
    coupons = Coupon.objects.filter(store=store)
    live = coupons.filter(deleted_at__isnull=True).count()
    deleted = coupons.filter(deleted_at__isnull=False).count()
    return {"live": live, "with": live + deleted, "only": deleted}


def assert_exact(client, store, live: int, deleted: int) -> None:
    expected = {"live": live, "with": live + deleted, "only": deleted}
    assert counted(store) == expected
    assert listed_totals(client, store) == expected


def auth_client_of(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_api_key(user)}")
    return client


def create(store, code: str) -> Coupon:
    return coupon_create(store=store, code=code, type="AMOUNT", discount=5, store_wide=True)


def test_create_soft_delete_restore_and_hard_delete_through_the_api_and_services(
    store, auth_client
):
    assert_exact(auth_client, store, 0, 0)
    created = [
        auth_client.post(
            "/api/v1/coupons",
            {"code": f"API{n}", "type": "AMOUNT", "discount": 5, "store_wide": True},
            format="json",
            HTTP_X_STORE=store.slug,
        )
        for n in range(3)
    ]
    assert [response.status_code for response in created] == [201] * 3
    assert_exact(auth_client, store, 3, 0)

    deleted = auth_client.delete(
        f"/api/v1/coupons/{created[0].json()['id']}", HTTP_X_STORE=store.slug
    )
    assert deleted.status_code == 204
    assert_exact(auth_client, store, 2, 1)

    coupon_restore(coupon=Coupon.objects.get(pk=created[0].json()["id"]))
    assert_exact(auth_client, store, 3, 0)

    # An edit that does not delete or restore leaves the totals alone.
    patched = auth_client.patch(
        f"/api/v1/coupons/{created[1].json()['id']}",
        {"discount": 7},
        format="json",
        HTTP_X_STORE=store.slug,
    )
    assert patched.status_code == 200
    assert_exact(auth_client, store, 3, 0)

    coupon_delete(coupon=Coupon.objects.get(pk=created[1].json()["id"]))
    Coupon.objects.get(pk=created[2].json()["id"]).delete()  # a hard delete
    assert_exact(auth_client, store, 1, 1)


def test_bulk_writes_across_stores_are_counted(store, auth_client, user):
    second = MembershipFactory(user=user).store
    Coupon.objects.bulk_create(
        [
            Coupon(store=s, code=f"BULK{s.pk}-{n}", type="AMOUNT", discount=1, store_wide=True)
            for s in (store, second)
            for n in range(30)
        ]
    )
    assert_exact(auth_client, store, 30, 0)
    assert_exact(auth_client, second, 30, 0)

    # One UPDATE soft-deletes coupons of both stores; one DELETE removes some of each.
    Coupon.objects.filter(code__regex=r"-[0-9]$").update(deleted_at=timezone.now())
    assert_exact(auth_client, store, 20, 10)
    assert_exact(auth_client, second, 20, 10)
    Coupon.objects.filter(code__regex=r"-[12][0-4]$").delete()
    assert_exact(auth_client, store, 10, 10)
    assert_exact(auth_client, second, 10, 10)
    # Restoring in bulk, and an update that changes nothing counted.
    Coupon.objects.filter(store=second, deleted_at__isnull=False).update(deleted_at=None)
    Coupon.objects.filter(store=second).update(times_used=3)
    assert_exact(auth_client, second, 20, 0)
    assert_exact(auth_client, store, 10, 10)


def test_a_coupon_moved_to_another_store_moves_its_count(store, auth_client, user):
    second = MembershipFactory(user=user).store
    CouponFactory.create_batch(3, store=store)
    CouponFactory(store=store, deleted_at=timezone.now())
    Coupon.objects.filter(store=store, deleted_at__isnull=False).update(store=second)
    Coupon.objects.filter(pk=Coupon.objects.filter(store=store).first().pk).update(store=second)
    assert_exact(auth_client, store, 2, 0)
    assert_exact(auth_client, second, 1, 1)


def test_admin_soft_delete_action_is_counted(admin_client, store, auth_client):
    coupons = CouponFactory.create_batch(4, store=store)
    admin_client.post(
        "/admin/coupons/coupon/",
        {"action": "soft_delete", "_selected_action": [c.pk for c in coupons[:3]]},
        follow=True,
    )
    assert_exact(auth_client, store, 1, 3)


def test_deleting_a_store_removes_its_totals_and_leaves_the_others(store, auth_client):
    doomed = StoreFactory()
    CouponFactory.create_batch(5, store=doomed)
    CouponFactory(store=doomed, deleted_at=timezone.now())
    CouponFactory.create_batch(2, store=store)
    assert CouponTotal.objects.filter(store=doomed).exists()

    doomed.delete()  # Django's cascade (the admin refuses: coupons are not deletable there)

    assert not Store.objects.filter(pk=doomed.pk).exists()
    # The cascade deleted the counter row and the coupons (in whichever order) without
    # recreating the row: the commit's foreign key check would have failed.
    assert not CouponTotal.objects.filter(store_id=doomed.pk).exists()
    assert_exact(auth_client, store, 2, 0)


@pytest.mark.django_db(transaction=True)
def test_a_store_deleted_in_its_own_transaction_commits(user):
    doomed = MembershipFactory(user=user).store
    CouponFactory.create_batch(3, store=doomed)
    with transaction.atomic():  # the deferred foreign keys are checked at this commit
        Store.objects.filter(pk=doomed.pk).delete()
    assert not CouponTotal.objects.filter(store_id=doomed.pk).exists()


@pytest.mark.django_db(transaction=True)
def test_truncate_leaves_no_stale_totals(user):
    store = MembershipFactory(user=user).store
    auth_client = auth_client_of(user)
    CouponFactory.create_batch(3, store=store)
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE coupons_coupon CASCADE")
    assert_exact(auth_client, store, 0, 0)
    CouponFactory(store=store)
    assert_exact(auth_client, store, 1, 0)


def test_a_page_past_the_end_takes_the_same_total(store, auth_client):
    CouponFactory.create_batch(3, store=store)
    CouponFactory(store=store, deleted_at=timezone.now())
    body = auth_client.get("/api/v1/coupons?limit=2&page=9&with_trashed=true").json()
    assert (body["data"], body["meta"]["total"], body["meta"]["last_page"]) == ([], 4, 2)


def test_recount_lists_repairs_a_broken_counter_and_reports_it(store, auth_client, other_store):
    CouponFactory.create_batch(3, store=store)
    CouponFactory(store=store, deleted_at=timezone.now())
    CouponFactory.create_batch(2, store=other_store)
    CouponTotal.objects.filter(store=store).update(live=99)
    CouponTotal.objects.filter(store=other_store).update(deleted=7)
    assert listed_totals(auth_client, store)["live"] == 99  # the API serves the counter

    out = StringIO()
    call_command("recount_lists", "--store", str(store.pk), stdout=out)

    assert f"coupons: store {store.pk} live was 99, is 3 (repaired)" in out.getvalue()
    assert_exact(auth_client, store, 3, 1)
    # Only the store asked for; a full run repairs the other one, then finds nothing.
    assert CouponTotal.objects.get(store=other_store).deleted == 7
    out = StringIO()
    call_command("recount_lists", stdout=out)
    assert f"coupons: store {other_store.pk} deleted was 7, is 0" in out.getvalue()
    assert CouponTotal.objects.get(store=other_store).deleted == 0
    out = StringIO()
    call_command("recount_lists", stdout=out)
    assert "No drift." in out.getvalue()


def test_recount_lists_restores_a_missing_row(store, auth_client):
    """What a restore with the triggers off (session_replication_role = replica) leaves."""
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL session_replication_role = replica")
        Coupon.objects.bulk_create(
            [
                Coupon(store=store, code=f"R{n}", type="AMOUNT", discount=1, store_wide=True)
                for n in range(4)
            ]
        )
        cursor.execute("SET LOCAL session_replication_role = origin")
    assert listed_totals(auth_client, store)["live"] == 0  # not counted: the drift

    call_command("recount_lists", stdout=StringIO())

    assert_exact(auth_client, store, 4, 0)


@pytest.mark.django_db(transaction=True)
def test_twenty_concurrent_creations_in_one_store_count_twenty(user):
    store = MembershipFactory(user=user).store
    client = auth_client_of(user)

    codes = itertools.count()

    outcomes = run_at_once(lambda: create(store, f"RACE{next(codes)}").pk, 20)

    assert all(isinstance(outcome, int) for outcome in outcomes), outcomes
    assert_exact(client, store, 20, 0)


@pytest.mark.django_db(transaction=True)
def test_concurrent_creations_and_deletions_stay_exact(user):
    store = MembershipFactory(user=user).store
    other = MembershipFactory(user=user).store
    existing = [create(store, f"OLD{n}") for n in range(10)]
    client = auth_client_of(user)
    tasks = (
        [lambda c=c: coupon_delete(coupon=c).pk for c in existing]
        + [lambda n=n: create(store, f"NEW{n}").pk for n in range(10)]
        + [lambda n=n: create(other, f"OTHER{n}").pk for n in range(5)]
    )
    counter = itertools.count()

    outcomes = run_at_once(lambda: tasks[next(counter)](), len(tasks))

    assert all(isinstance(outcome, int) for outcome in outcomes), outcomes
    assert_exact(client, store, 10, 10)
    assert_exact(client, other, 5, 0)


@pytest.mark.django_db(transaction=True)
def test_an_edit_that_changes_no_total_does_not_wait_for_a_recount(user):
    # An update changes the totals table only when a total changes (core/database/list_totals.py):
    # editing a coupon takes no lock on it, so it does not wait for recount_lists' EXCLUSIVE
    # lock (nor deadlock with a TRUNCATE); a soft delete, which moves a count, does wait.
    store = MembershipFactory(user=user).store
    coupon = create(store, "EDITED")
    locked, release = threading.Event(), threading.Event()

    def hold_the_totals_table_as_recount_does():
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(f"LOCK TABLE {CouponTotal._meta.db_table} IN EXCLUSIVE MODE")
                locked.set()
                release.wait(30)
        finally:
            connection.close()

    holder = threading.Thread(target=hold_the_totals_table_as_recount_does, daemon=True)
    holder.start()
    try:
        assert locked.wait(10)
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '2s'")
        coupon_update(coupon=coupon, changes={"discount": 7, "code": "RENAMED"})
        Coupon.objects.filter(store=store).update(times_used=2)
        with pytest.raises(OperationalError, match="lock timeout"):
            coupon_delete(coupon=coupon)
    finally:
        release.set()
        holder.join(10)
        with connection.cursor() as cursor:
            cursor.execute("RESET lock_timeout")
    assert_exact(auth_client_of(user), store, 1, 0)


@pytest.mark.django_db(transaction=True)
def test_recount_lists_during_concurrent_writes_leaves_exact_totals(user):
    store = MembershipFactory(user=user).store
    existing = [create(store, f"OLD{n}") for n in range(6)]
    CouponTotal.objects.filter(store=store).update(live=1000)  # drift to repair meanwhile
    client = auth_client_of(user)
    tasks = (
        [lambda c=c: coupon_delete(coupon=c).pk for c in existing]
        + [lambda n=n: create(store, f"NEW{n}").pk for n in range(8)]
        + [lambda: call_command("recount_lists", stdout=StringIO()) or 0 for _ in range(3)]
    )
    counter = itertools.count()

    outcomes = run_at_once(lambda: tasks[next(counter)](), len(tasks))

    assert all(isinstance(outcome, int) for outcome in outcomes), outcomes
    assert_exact(client, store, 8, 6)
