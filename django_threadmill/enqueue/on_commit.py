"""Enqueue after commit: hand a write to ``transaction.on_commit`` of the default database."""

from collections.abc import Callable, Sequence

from django.db import DEFAULT_DB_ALIAS, connections, transaction


class WriteAtCommit:
    """A write waiting in ``on_commit``, with the paths of the tasks it stores, marked once run.

    ``drain()`` reads these to tell a test whose enqueues still wait for a commit its
    ``TestCase`` never makes from one whose ``captureOnCommitCallbacks(execute=True)`` ran them,
    which Django leaves in its list (docs/testing.md, Good to know).
    """

    def __init__(
        self, write: Callable[[], object], task_paths: Sequence[str], using: str = DEFAULT_DB_ALIAS
    ) -> None:
        self.write = write
        self.task_paths = tuple(task_paths)
        self.using = using
        self.ran = False

    def __call__(self) -> None:
        self.ran = True
        try:
            self.write()
        except Exception as exc:
            exc.add_note(self.failed_after_commit())
            raise

    def failed_after_commit(self) -> str:
        """Say what a write that raised at the commit leaves: the error leaves ``atomic()``
        as a rollback's would, but the data is committed, and Django ran none of the
        transaction's later callbacks, its other enqueues among them (docs/enqueue.md)."""
        paths = ", ".join(repr(path) for path in dict.fromkeys(self.task_paths))
        count = len(self.task_paths)
        what = f"task {paths}" if count == 1 else f"{count} tasks ({paths})"
        return (
            f"Raised at the commit of database {self.using!r}, which went through: the "
            f"transaction's changes are saved, and this enqueue of {what}, made with "
            "enqueue_on_commit, failed as said above. Django ran none of the transaction's "
            "later on_commit callbacks, so its enqueues after this one were not stored either: "
            "enqueue them again once the cause above is fixed."
        )


def defer_to_commit(
    write: Callable[[], object], task_paths: Sequence[str], using: str = DEFAULT_DB_ALIAS
) -> bool:
    """Run ``write``, which stores tasks of ``task_paths``, when the open transaction of
    ``using`` commits; return False if none is open.

    Outside a transaction the caller writes at once, as ``on_commit`` would, without opening a
    database connection just to ask (a web process that enqueues need not touch its database).
    A rolled-back transaction, or savepoint, drops ``write`` as Django drops its callbacks.
    """
    if not in_transaction(using):
        return False
    transaction.on_commit(WriteAtCommit(write, task_paths, using), using=using)
    return True


def in_transaction(using: str = DEFAULT_DB_ALIAS) -> bool:
    """Tell whether this thread's connection ``using`` holds an open transaction.

    An unopened connection holds none, so asking opens nothing. With autocommit off outside
    atomic(), on_commit raises Django's TransactionManagementError, which is the right answer
    there.
    """
    connection = connections[using]
    return connection.in_atomic_block or (
        connection.connection is not None and not connection.autocommit
    )
