"""Enqueue after commit: hand a write to ``transaction.on_commit`` of the default database."""

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import cast

from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper

from ..compat import TaskResult

# What waits in a connection's run_on_commit: (savepoints, callback, robust) since Django 4.2.
CommitHook = tuple[set[str], Callable[[], object], bool]

# The tasks this process enqueued with enqueue_on_commit that turned out, at the commit, to
# duplicate an unfinished unique task, each with that task's id, the latest DUPLICATES_KEPT:
# their ids are never stored, so a read of one says why (docs/schedules.md, Unique tasks).
DUPLICATES_KEPT = 1000
_duplicates: deque[tuple[str, str]] = deque(maxlen=DUPLICATES_KEPT)


class WriteAtCommit:
    """A write waiting in ``on_commit``, with the ids and paths of the tasks it stores, marked
    once run.

    ``drain()`` reads these to tell a test whose enqueues still wait for a commit its
    ``TestCase`` never makes from one whose ``captureOnCommitCallbacks(execute=True)`` ran them,
    which Django leaves in its list (docs/testing.md, Good to know); a result read that finds
    no record, to say its task is stored at the commit (``held_for_commit``).
    """

    def __init__(
        self, write: Callable[[], object], results: Sequence[TaskResult], using: str
    ) -> None:
        self.write = write
        self.task_ids = tuple(result.id for result in results)
        self.task_paths = tuple(result.task.module_path for result in results)
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
        return (
            f"Raised at the commit of database {self.using!r}, which went through: the "
            f"transaction's changes are saved, and this enqueue of {_tasks(self.task_paths)}, "
            "made with enqueue_on_commit, failed as said above. Django ran none of the "
            "transaction's later on_commit callbacks, so its enqueues after this one were not "
            "stored either: enqueue them again once the cause above is fixed."
        )


def defer_to_commit(
    write: Callable[[], object], results: Sequence[TaskResult], using: str = DEFAULT_DB_ALIAS
) -> bool:
    """Run ``write``, which stores the tasks of ``results``, when the open transaction of
    ``using`` commits; return False if none is open.

    Outside a transaction the caller writes at once, as ``on_commit`` would, without opening a
    database connection just to ask (a web process that enqueues need not touch its database).
    A rolled-back transaction, or savepoint, drops ``write`` as Django drops its callbacks.
    """
    if not in_transaction(using):
        return False
    if not connections[using].in_atomic_block:
        raise transaction.TransactionManagementError(_no_commit_hooks(results, using))
    transaction.on_commit(WriteAtCommit(write, results, using), using=using)
    return True


def _tasks(task_paths: Sequence[str]) -> str:
    """Name the tasks of one write: "task 'a.b'", or "3 tasks ('a.b', 'a.c')"."""
    paths = ", ".join(repr(path) for path in dict.fromkeys(task_paths))
    count = len(task_paths)
    return f"task {paths}" if count == 1 else f"{count} tasks ({paths})"


def _no_commit_hooks(results: Sequence[TaskResult], using: str) -> str:
    """Say why a write cannot wait for a commit of ``using`` with autocommit off outside
    atomic(): Django's own error named on_commit(), which the project never called, and no
    fix."""
    what = _tasks([result.task.module_path for result in results])
    return (
        f"{what[0].upper()}{what[1:]} {'waits' if len(results) == 1 else 'wait'} for the commit "
        f"of database {using!r} (enqueue_on_commit), but that connection has autocommit off "
        "outside atomic() (manual transaction management), where Django runs no on_commit "
        "callbacks; nothing was stored. Enqueue inside transaction.atomic(), turn autocommit back "
        "on, or write at once with task.using(enqueue_on_commit=False)."
    )


def in_transaction(using: str = DEFAULT_DB_ALIAS) -> bool:
    """Tell whether this thread's connection ``using`` holds an open transaction.

    An unopened connection holds none, so asking opens nothing. With autocommit off outside
    atomic() it holds one too, but Django runs no on_commit callbacks there: ``defer_to_commit``
    refuses it.
    """
    connection = connections[using]
    return connection.in_atomic_block or (
        connection.connection is not None and not connection.autocommit
    )


def commit_hooks(connection: BaseDatabaseWrapper) -> list[CommitHook]:
    """Return the list of callbacks waiting on ``connection``'s transaction, itself: django-stubs
    still types its items as pairs."""
    return cast(list[CommitHook], connection.run_on_commit)


def waiting_writes(connection: BaseDatabaseWrapper) -> Iterator[WriteAtCommit]:
    """The writes waiting for the commit of ``connection``'s transaction, not run yet
    (``captureOnCommitCallbacks(execute=True)`` runs them and leaves them listed)."""
    if not connection.in_atomic_block:
        return
    for _savepoints, callback, _robust in commit_hooks(connection):
        if isinstance(callback, WriteAtCommit) and not callback.ran:
            yield callback


def held_for_commit(task_id: str) -> bool:
    """Tell whether the write of task ``task_id`` waits for the commit of a transaction this
    thread holds: read from the callbacks its connections hold, so it costs no query (a
    connection never set up in this thread holds none)."""
    return any(
        task_id in write.task_ids
        for connection in connections.all(initialized_only=True)
        for write in waiting_writes(connection)
    )


def note_duplicates(task_ids: Sequence[str], holders: Sequence[str | None]) -> None:
    """Keep, of the tasks ``task_ids`` written at a commit, those the write found held by an
    equal unfinished task (``holders``: its id, None for a task stored)."""
    _duplicates.extend(
        (task_id, holder) for task_id, holder in zip(task_ids, holders, strict=True) if holder
    )


def duplicate_held(task_id: str) -> str | None:
    """Return the id of the task that held the unique key when the write of ``task_id`` met it
    at a commit, or None: a read of the ids never stored (a copy: another thread may note)."""
    return next((held for each, held in reversed(tuple(_duplicates)) if each == task_id), None)


def held_at_commit(task_id: str, holder: str) -> str:
    """Say that ``task_id``, enqueued with enqueue_on_commit, was never stored, as ``holder``
    held the unique key at the commit, and where to read instead."""
    return (
        f"Task {task_id} is not stored: it was enqueued with enqueue_on_commit, and at the "
        f"commit an equal unique task that had not finished, {holder}, held the key, so that "
        "task stands for it (docs/schedules.md, Unique tasks). Read that one's result: "
        f"task.get_result({holder})."
    )


def stored_at_commit(subject: str, made: str, what: str) -> str:
    """Say that ``subject`` ("Task '…'", "Workflow '…'"), ``made`` ("enqueued", "launched")
    with enqueue_on_commit, is not stored before its transaction commits, so it cannot be
    ``what`` ("read", "cancelled") yet: "not found" means "not yet", not "expired"."""
    return (
        f"{subject} is not stored, so it cannot be {what}: it was {made} inside a transaction "
        "with enqueue_on_commit, and is stored when that transaction commits (never, if it "
        "rolled back). Do it after the commit."
    )
