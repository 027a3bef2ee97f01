"""Exceptions raised by django-threadmill, all under one base class."""

from typing import Any

from django.core.exceptions import ImproperlyConfigured, SuspiciousOperation


class ThreadmillError(Exception):
    """Base class for every error django-threadmill raises itself."""


def _rebuilt(
    kind: type[BaseException], args: tuple[object, ...], state: dict[str, object]
) -> BaseException:
    """Rebuild an error of ``kind`` as it was raised, without calling its ``__init__``."""
    error = kind.__new__(kind, *args)
    error.__dict__.update(state)
    return error


def _reduced_as_raised(self: BaseException) -> tuple[object, ...]:
    """``__reduce__`` of an error whose ``__init__`` takes other arguments than its ``args``
    (a message it builds, a count beside it): the default rebuilds it as ``kind(*args)``,
    which raised a ``TypeError`` where the error crosses to another process (Django's
    parallel test runner, a process pool)."""
    return (_rebuilt, (type(self), self.args, self.__dict__))


class ImproperlyConfiguredThreadmill(ThreadmillError, ImproperlyConfigured):
    """A ``TASKS`` entry or a command option that cannot work, with the fix in the message."""


class BrokerUnavailable(ThreadmillError):
    """Redis could not be reached, refused our credentials, or refused the write."""


class MaybeApplied(BrokerUnavailable):
    """Redis may have applied the call that failed: the connection dropped after it was sent,
    the call was interrupted, or Redis did not confirm the write per OPTIONS['durability'].

    From an enqueue, ``task_ids`` holds the ids of the tasks that call carried: check
    ``get_result(id)`` before enqueuing them again, since a new enqueue is a new task.
    """

    def __init__(self, message: str, task_ids: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.task_ids = task_ids


class PartlyEnqueued(BrokerUnavailable):
    """A call to a sharded queue stored the tasks of some shards and not the others.

    ``written`` holds the ids certainly stored (or found to duplicate an unfinished unique
    task, whose holder is in ``existing``); ``maybe_written`` those whose shard's call may have
    been applied (a ``MaybeApplied`` there): check ``get_result(id)`` before enqueuing them
    again. Retry only the calls of the ids in neither. ``errors`` holds, per id not written, the
    error of its shard's call: what a coalesced ``enqueue`` of that one task raises.
    """

    def __init__(
        self,
        message: str,
        written: frozenset[str] = frozenset(),
        existing: dict[str, str] | None = None,
        maybe_written: frozenset[str] = frozenset(),
        errors: dict[str, BrokerUnavailable] | None = None,
    ) -> None:
        super().__init__(message)
        self.written = written
        self.existing = existing or {}
        self.maybe_written = maybe_written
        self.errors = errors or {}


class PartlyRenewed(BrokerUnavailable):
    """A lease renewal that some queues took and others did not (a key of another type there,
    or on a Redis Cluster their primary down): Redis pushed the leases of the queues that took
    it, as it would have with no error.

    ``answered`` holds the ids of the leases of those queues, each renewed unless it is in
    ``lost``, the ids Redis found lost there; ``error`` is the first failed queue's error, and
    ``failed`` the queue parts whose call failed.
    """

    def __init__(
        self,
        message: str,
        error: BrokerUnavailable,
        answered: frozenset[str] = frozenset(),
        lost: tuple[str, ...] = (),
        failed: tuple[str, ...] = (),
    ) -> None:
        super().__init__(message)
        self.error = error
        self.answered = answered
        self.lost = lost
        self.failed = failed

    __reduce__ = _reduced_as_raised


class PartlyAcked(BrokerUnavailable):
    """A batch of start notices or outcomes that the calls of some queue parts recorded and
    the others' did not (on a Redis Cluster their primary down, or a key of another type
    there): what the calls that answered recorded stands, and only the rest is sent again.

    ``answered`` holds the leases of the items whose part's call answered, each recorded
    unless it is in ``rejected`` (with why); ``progress_unwritten`` the progress reports that
    rode the batch and were not written; ``error`` is the first failed part's error (when
    only progress reports failed, their call's).
    """

    def __init__(
        self,
        message: str,
        error: BrokerUnavailable,
        answered: frozenset[Any] = frozenset(),
        rejected: tuple[Any, ...] = (),
        progress_unwritten: tuple[Any, ...] = (),
    ) -> None:
        super().__init__(message)
        self.error = error
        self.answered = answered
        self.rejected = rejected
        self.progress_unwritten = progress_unwritten

    __reduce__ = _reduced_as_raised


class ReservationsUnconfirmed(BrokerUnavailable):
    """No replica confirmed a reservation under OPTIONS['durability'] = "replicated": the
    tasks went back unstarted, as a failover now could have another worker run them too."""


class ResumedNotWoken(BrokerUnavailable):
    """A queue was resumed, but Redis refused its wake tokens: a key the resume reads holds a
    value of another type, so idle workers were not woken (docs/lifecycle.md, Keys of another
    type)."""


class BrokerRefused(BrokerUnavailable):
    """Redis refused our credentials or a command for lack of ACL rights, or our TLS set-up is
    wrong (broker/tls.py): waiting cannot help."""


class ConfirmationRefused(MaybeApplied, BrokerRefused):
    """Redis refused the WAIT or WAITAOF that confirms a write per OPTIONS['durability'] (an
    ACL without it, renamed away): the write may be applied, and no retry confirms it."""


class UnstorableArguments(ThreadmillError, TypeError, ValueError):
    """A task's arguments cannot be stored as JSON; nothing was written.

    A ``TypeError``, as Django's backends refuse most such values, and a ``ValueError`` too,
    as they refuse bytes that are not UTF-8: code written against them catches it either way
    (docs/lifecycle.md, Where results differ from Django's own backends).
    """


class PayloadError(ThreadmillError):
    """A stored task payload cannot be decoded or no longer names a task."""


class TaskNotImportable(PayloadError, ImportError):
    """A stored task path does not import (its code is not deployed here, or was removed).

    An ``ImportError`` too, so code that already catches a failed import by path catches it.
    """


class NotATask(PayloadError, SuspiciousOperation):
    """A stored task path names something that is not a task, which is never called.

    A ``SuspiciousOperation`` too: such a payload was forged or corrupted, and Django answers
    and logs it as one when a view lets it through (docs/reliability.md, Security).
    """


class DrainDidNotEmpty(ThreadmillError):
    """``drain()`` ran its ``max_tasks`` and tasks were still queued: a task that enqueues
    itself, or tasks that enqueue each other, would have kept it running for good.

    ``ran`` holds how many attempts it ran; those it had reserved beyond go back to READY.
    """

    __reduce__ = _reduced_as_raised

    def __init__(self, message: str, ran: int) -> None:
        super().__init__(message)
        self.ran = ran


class LeaseExpired(ThreadmillError):
    """The worker running this attempt stopped renewing its lease (it died or lost Redis)."""


class Cancelled(ThreadmillError):
    """An operator cancelled the task before it ran."""

    @classmethod
    def before_it_ran(cls, reason: str = "") -> "Cancelled":
        """The error of a task cancelled before it ran, by hand or with its workflow."""
        return cls("Cancelled before it ran" + (f": {reason}" if reason else "."))


class TaskTimeout(ThreadmillError):
    """The attempt ran longer than the task timeout and was abandoned."""


class TransactionLeftOpen(ThreadmillError):
    """The task returned inside a ``transaction.atomic()`` block it entered and never left: the
    worker rolled it back, so the task's writes in it are undone."""


class StepOfCancelledWorkflow(ThreadmillError):
    """A requeue of a step whose workflow was cancelled, or recorded it as not run, refused: a
    worker starts no such step (docs/workflows.md, Cancel), so a new attempt would only fail
    again."""

    __reduce__ = _reduced_as_raised

    def __init__(
        self, task_id: str, workflow_id: str, step: int, why: str, *, not_run: bool = False
    ) -> None:
        ended = (
            f"which ended without it ({why}), and a worker starts no step its workflow "
            "recorded as not run"
            if not_run
            else f"which was cancelled ({why}), and a worker starts no step of a cancelled workflow"
        )
        super().__init__(
            f"Task {task_id} was not requeued: it is step {step} of workflow {workflow_id}, "
            f"{ended}. Enqueue the task anew to run it."
        )
        self.task_id, self.workflow_id, self.step, self.why = task_id, workflow_id, step, why
        self.not_run = not_run


class UniqueKeyHeld(ThreadmillError):
    """A requeue of a unique task refused: an equal task that has not finished holds the
    unique key, and the two would run at once (docs/schedules.md, Unique tasks)."""

    __reduce__ = _reduced_as_raised

    def __init__(self, task_id: str, holder_id: str) -> None:
        super().__init__(
            f"Task {task_id} was not requeued: an equal unique task, {holder_id}, has not "
            f"finished, and the two would run at once. Requeue it once {holder_id} has finished "
            "(docs/schedules.md, Unique tasks)."
        )
        self.task_id, self.holder_id = task_id, holder_id


class WorkflowDoesNotExist(ThreadmillError, LookupError):
    """No workflow has this id in this backend (it never did, or it ended and expired)."""
