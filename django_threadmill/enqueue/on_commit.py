"""Enqueue after commit: hand a write to ``transaction.on_commit`` of the default database."""

from collections.abc import Callable

from django.db import DEFAULT_DB_ALIAS, connections, transaction


def defer_to_commit(write: Callable[[], object], using: str = DEFAULT_DB_ALIAS) -> bool:
    """Run ``write`` when the open transaction of ``using`` commits; return False if none is open.

    Outside a transaction the caller writes at once, as ``on_commit`` would, without opening a
    database connection just to ask (a web process that enqueues need not touch its database).
    A rolled-back transaction, or savepoint, drops ``write`` as Django drops its callbacks.
    """
    connection = connections[using]
    # An unopened connection holds no transaction. With autocommit off outside atomic(),
    # on_commit raises Django's TransactionManagementError, which is the right answer there.
    if not connection.in_atomic_block and (connection.connection is None or connection.autocommit):
        return False
    transaction.on_commit(write, using=using)
    return True
