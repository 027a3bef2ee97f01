"""One attempt of a task as a worker runs it: the task loaded from its reservation, its call,
its run time on the monotonic clock, and the TaskResult Django's receivers, retry policies and
``takes_context`` tasks see, built only when one of them asks."""

from collections.abc import Coroutine
from functools import cached_property
from inspect import iscoroutine, iscoroutinefunction
from time import monotonic
from typing import Any

from ..broker import Reservation
from ..codec.results import parse_error, task_result
from ..codec.times import from_ms, run_time_ms
from ..compat import Task, TaskContext, TaskResult, TaskResultStatus

# Django's own Task.call and Task.acall. A task whose class keeps them has its function called
# directly: what they do in the lane the task runs in, without their coroutine check (1.2 µs a
# sync task). A class that overrides them (a backend's task_class) is run through them, as
# Django's backends run every task.
DJANGO_CALL = Task.call
DJANGO_ACALL = Task.acall


class Attempt:
    """One attempt of a task, loaded from its reservation; its TaskResult made on demand."""

    def __init__(
        self,
        reservation: Reservation,
        payload: dict[str, Any],
        task: Task,
        started_ms: int,
        worker_id: str,
    ) -> None:
        self.reservation = reservation
        self.lease = reservation.lease
        self.task = task
        self.args: list[Any] = payload.get("args", [])
        self.kwargs: dict[str, Any] = payload.get("kwargs", {})
        self.started_ms = started_ms
        self.worker_id = worker_id
        self.began_s = monotonic()  # what its run time is measured from

    def run_ms(self) -> int:
        """Return how long the attempt has run, in ms, on the monotonic clock: the wall
        clock's ``started_ms`` is for display, and an NTP step moves it."""
        return run_time_ms(monotonic() - self.began_s)

    @cached_property
    def result(self) -> TaskResult:
        """The RUNNING TaskResult of this attempt, as Django's receivers and policies see it."""
        reservation = self.reservation
        attempted_at = from_ms(self.started_ms)
        first_started_ms = reservation.started_ms
        return task_result(
            self.task,
            self.lease.task_id,
            status=TaskResultStatus.RUNNING,
            args=self.args,
            kwargs=self.kwargs,
            backend=self.task.backend,
            enqueued_at=from_ms(reservation.enqueued_ms),
            started_at=attempted_at if first_started_ms is None else from_ms(first_started_ms),
            last_attempted_at=attempted_at,
            errors=[parse_error(raw) for raw in reservation.errors],
            worker_ids=[*reservation.workers, self.worker_id],
            decoded=True,  # read from the payload's JSON: normalised already
        )

    def call_args(self) -> list[Any]:
        """The positional arguments of the call: the context first, if the task takes it."""
        if self.task.takes_context:
            return [TaskContext(task_result=self.result), *self.args]
        return self.args

    def call(self) -> Any:
        """Run a task on a worker thread as Django's backends do, through its ``Task.call``.

        An ``async def`` task comes here only when its module failed to import as the worker
        sorted it (worker/lanes.py) and imported for this attempt: Django's ``call`` runs it
        to its end on this thread (``async_to_sync``). It failed, "returned a coroutine it
        never awaited"."""
        task = self.task
        if type(task).call is not DJANGO_CALL:
            return task.call(*self.call_args(), **self.kwargs)
        called = task.func(*self.call_args(), **self.kwargs)
        if iscoroutine(called) and iscoroutinefunction(task.func):
            called.close()  # never started: none of it ran
            return task.call(*self.call_args(), **self.kwargs)
        return called

    def acall(self) -> Coroutine[Any, Any, Any]:
        """Return the coroutine running an ``async def`` task, from its ``Task.acall``."""
        task = self.task
        if type(task).acall is DJANGO_ACALL:
            return task.func(*self.call_args(), **self.kwargs)  # type: ignore[no-any-return]
        return task.acall(*self.call_args(), **self.kwargs)

    def built_result(self) -> TaskResult | None:
        """The TaskResult if something built it already (it is cached on first use)."""
        found: TaskResult | None = self.__dict__.get("result")
        return found
