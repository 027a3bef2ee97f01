"""Keep a test's transaction usable after a task's database error (docs/testing.md, Good to
know).

A worker runs each task's queries in autocommit: an INSERT that breaks a unique constraint
fails that task and nothing else. A drain runs them inside the test's transaction, which such
an error leaves unusable (Django marks it after a failed ``save()`` or ``create()``; PostgreSQL
aborts it after any failed statement), so every task after it, and the test's own queries,
failed with ``TransactionManagementError``. Each task, or batch of async tasks, therefore runs
after a savepoint, and one that leaves the transaction unusable is rolled back to it.

The savepoint statements go straight to the database driver: they stand in for a worker's
autocommit, so ``assertNumQueries`` and ``execute_wrapper`` around a drain see only the tasks'
own queries.
"""

import itertools
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import DatabaseError, connections
from django.db.backends.base.base import BaseDatabaseWrapper

_numbers = itertools.count(1)  # savepoint names; a task may drain() in turn


@contextmanager
def rolled_back_if_broken() -> Iterator[None]:
    """Run the block after a savepoint in each transaction this thread holds; roll back to it
    any the block left unusable. An interrupt (Ctrl-C, a test's timeout) leaves them as
    they are."""
    marks = [
        (connection, _savepoint(connection))
        for connection in connections.all(initialized_only=True)
        if _recoverable(connection)
    ]
    try:
        yield
    except Exception:
        _restore(marks)
        raise
    _restore(marks)


def _recoverable(connection: BaseDatabaseWrapper) -> bool:
    """Tell whether ``connection`` is in a transaction a task's error could spoil: one that is
    usable now, on a database with savepoints (autocommit has nothing to spoil)."""
    return (
        connection.in_atomic_block
        and not connection.needs_rollback
        and not connection.closed_in_transaction
        and connection.features.uses_savepoints
    )


def _savepoint(connection: BaseDatabaseWrapper) -> str:
    sid = f"threadmill_drain_{next(_numbers)}"
    _execute(connection, connection.ops.savepoint_create_sql(sid))
    return sid


def _restore(marks: list[tuple[BaseDatabaseWrapper, str]]) -> None:
    for connection, sid in marks:
        if connection.in_atomic_block and not connection.closed_in_transaction:
            _release(connection, sid)


def _release(connection: BaseDatabaseWrapper, sid: str) -> None:
    """Release the savepoint ``sid``, rolled back to first if the transaction is unusable, as
    Django's ``atomic()`` ends a block that raised; one that cannot be rolled back stays
    marked for the test's own rollback."""
    try:
        if connection.needs_rollback:
            connection.needs_rollback = False
            _execute(connection, connection.ops.savepoint_rollback_sql(sid))
        try:
            _execute(connection, connection.ops.savepoint_commit_sql(sid))
        except DatabaseError:  # PostgreSQL: a failed statement Django did not mark aborted it
            _execute(connection, connection.ops.savepoint_rollback_sql(sid))
            _execute(connection, connection.ops.savepoint_commit_sql(sid))
    except DatabaseError:
        connection.needs_rollback = True


def _execute(connection: BaseDatabaseWrapper, sql: str) -> None:
    """Run ``sql`` on the driver's own cursor: no query log, no execute wrappers."""
    with connection.wrap_database_errors:
        cursor = connection.connection.cursor()
        try:
            cursor.execute(sql)
        finally:
            cursor.close()
