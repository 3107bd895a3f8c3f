"""The ledger's own test suite, run by Django's test runner against the server under test:
transactions, nested atomic blocks (savepoints), select_for_update, and the foreign keys
the database enforces."""

import threading
from decimal import Decimal

from django.contrib.auth.models import User
from django.db import DatabaseError, IntegrityError, connections, transaction
from django.db.models import Count, ProtectedError, Sum
from django.test import TestCase, TransactionTestCase

from .models import Account, Entry, InsufficientFunds, transfer


class LedgerTests(TestCase):
    """Each test runs inside a transaction the runner rolls back (savepoints inside)."""

    def setUp(self):
        self.ann = User.objects.create_user("ann", password="pw")
        self.a = Account.objects.create(owner=self.ann, name="ann-main", balance=Decimal("100.00"))
        self.b = Account.objects.create(owner=self.ann, name="ann-savings")

    def test_transfer_moves_money_and_records_entries(self):
        transfer(self.a.id, self.b.id, Decimal("30.50"))
        self.a.refresh_from_db()
        self.b.refresh_from_db()
        self.assertEqual((self.a.balance, self.b.balance), (Decimal("69.50"), Decimal("30.50")))
        self.assertEqual(Entry.objects.aggregate(total=Sum("amount"))["total"], Decimal("0.00"))

    def test_a_failed_transfer_leaves_nothing(self):
        with self.assertRaises(InsufficientFunds):
            transfer(self.a.id, self.b.id, Decimal("500"))
        self.a.refresh_from_db()
        self.assertEqual(self.a.balance, Decimal("100.00"))
        self.assertEqual(Entry.objects.count(), 0)

    def test_inner_atomic_rolls_back_to_its_savepoint(self):
        with transaction.atomic():
            Entry.objects.create(account=self.a, amount=Decimal("1"))
            try:
                with transaction.atomic():
                    Entry.objects.create(account=self.a, amount=Decimal("2"))
                    raise RuntimeError("undo the inner block")
            except RuntimeError:
                pass
            Entry.objects.create(account=self.a, amount=Decimal("3"))
        self.assertEqual(sorted(e.amount for e in Entry.objects.all()), [Decimal("1.00"), Decimal("3.00")])

    def test_the_database_refuses_an_orphan_entry(self):
        with self.assertRaises(IntegrityError):
            with transaction.atomic():
                Entry.objects.create(account_id=999_999, amount=Decimal("1"))

    def test_the_database_refuses_deleting_a_referenced_account_behind_the_orm(self):
        Entry.objects.create(account=self.a, amount=Decimal("1"))
        with self.assertRaises(IntegrityError):
            with transaction.atomic(), connections["default"].cursor() as c:
                c.execute("DELETE FROM ledger_account WHERE id = %s", [self.a.id])

    def test_protect_and_cascade(self):
        Entry.objects.create(account=self.a, amount=Decimal("1"))
        with self.assertRaises(ProtectedError):
            self.a.delete()
        Entry.objects.all().delete()
        self.ann.delete()
        self.assertEqual(Account.objects.count(), 0)

    def test_aggregates_per_account(self):
        for n in range(3):
            Entry.objects.create(account=self.a, amount=Decimal(n))
        rows = Account.objects.annotate(n=Count("entries"), total=Sum("entries__amount")).order_by("name").values_list("name", "n", "total")
        self.assertEqual(list(rows), [("ann-main", 3, Decimal("3.00")), ("ann-savings", 0, None)])


class LockingTests(TransactionTestCase):
    """Two connections: a row locked with select_for_update keeps a second one out."""

    def test_select_for_update_nowait_is_refused_while_another_holds_the_row(self):
        owner = User.objects.create_user("bob", password="pw")
        account = Account.objects.create(owner=owner, name="bob-main")
        held, release, outcome = threading.Event(), threading.Event(), {}

        def holder():
            with transaction.atomic():
                Account.objects.select_for_update().get(id=account.id)
                held.set()
                release.wait(10)
            connections.close_all()

        thread = threading.Thread(target=holder)
        thread.start()
        try:
            self.assertTrue(held.wait(10))
            try:
                with transaction.atomic():
                    Account.objects.select_for_update(nowait=True).get(id=account.id)
                outcome["locked"] = False
            except DatabaseError:
                outcome["locked"] = True
            with transaction.atomic():
                # SKIP LOCKED passes over the held row.
                outcome["skipped"] = list(Account.objects.select_for_update(skip_locked=True).filter(id=account.id))
        finally:
            release.set()
            thread.join(10)
        self.assertEqual(outcome, {"locked": True, "skipped": []})
        with transaction.atomic():
            self.assertEqual(Account.objects.select_for_update(nowait=True).get(id=account.id).name, "bob-main")
