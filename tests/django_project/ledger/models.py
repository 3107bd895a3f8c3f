"""A ledger: users own accounts; entries move money into and out of them."""

from decimal import Decimal

from django.contrib.auth.models import User
from django.db import models, transaction


class Account(models.Model):
    owner = models.ForeignKey(User, on_delete=models.CASCADE, related_name="accounts")
    name = models.CharField(max_length=50, unique=True)
    balance = models.DecimalField(max_digits=12, decimal_places=2, default=Decimal("0"))


class Entry(models.Model):
    account = models.ForeignKey(Account, on_delete=models.PROTECT, related_name="entries")
    amount = models.DecimalField(max_digits=12, decimal_places=2)
    memo = models.CharField(max_length=100, blank=True)
    created = models.DateTimeField(auto_now_add=True)


class InsufficientFunds(Exception):
    pass


def transfer(source_id: int, target_id: int, amount: Decimal) -> None:
    """Moves `amount` between two accounts, both rows locked in id order."""
    with transaction.atomic():
        accounts = {a.id: a for a in Account.objects.select_for_update().filter(id__in=[source_id, target_id]).order_by("id")}
        source, target = accounts[source_id], accounts[target_id]
        Entry.objects.create(account=source, amount=-amount, memo=f"to {target.name}")
        Entry.objects.create(account=target, amount=amount, memo=f"from {source.name}")
        source.balance -= amount
        target.balance += amount
        if source.balance < 0:
            raise InsufficientFunds(source.name)
        source.save(update_fields=["balance"])
        target.save(update_fields=["balance"])
