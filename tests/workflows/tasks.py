"""Tasks for the workflow tests, at module level so worker processes import them."""

import os
import threading
from datetime import timedelta

from django_threadmill.codec.ids import read_step_marker
from django_threadmill.compat import TaskContext, task, task_backends
from django_threadmill.retry import ExponentialBackoff
from django_threadmill.task import task as threadmill_task
from django_threadmill.workflows import get_workflow

# Attempts follow one another at once: the tests run at the speed of the worker.
AT_ONCE_AGAIN = ExponentialBackoff(base_delay=0, max_delay=0, jitter=0, max_attempts=3)
# A retry due in an hour: longer than a short result_ttl keeps an ended workflow.
IN_AN_HOUR = ExponentialBackoff(
    base_delay=timedelta(hours=1), max_delay=timedelta(hours=1), jitter=0, max_attempts=3
)


def _count(log: str, what: str) -> None:
    """Append ``what`` to ``log`` in one write, so tests count runs outside Redis."""
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{what}\n".encode())
    finally:
        os.close(fd)


@task
def number(n: int) -> int:
    return n


@task
def add(value: int, n: int) -> int:
    """The chain's value plus ``n``."""
    return value + n


@task
def collect(values: list[int], log: str = "") -> list[int]:
    """A group's callback: return the values it was given, counted in ``log`` when named."""
    if log:
        _count(log, "collect")
    return values


@task
def counted(n: int, log: str) -> int:
    """Return ``n``, and count the run in ``log``."""
    _count(log, f"counted {n}")
    return n


# Two tasks wait here for each other, so that they finish at the same moment.
AT_ONCE = threading.Barrier(2, timeout=30)


@task
def together(n: int) -> int:
    """Return ``n`` once another ``together`` task runs too (in another thread)."""
    AT_ONCE.wait()
    return n


@task
def boom(value: int) -> None:
    raise ValueError(f"boom after {value}")


def _cancel_own_workflow(context: TaskContext) -> str:
    """Cancel the workflow the running step belongs to (its record names it); return its id."""
    result = context.task_result
    record = task_backends[result.backend].broker.record(result.id)
    marked = read_step_marker(record.get("workflow"))
    assert marked is not None, "not a workflow step"
    assert get_workflow(marked[0], result.backend).cancel("from a step")
    return marked[0]


@task(takes_context=True)
def cancels_its_workflow(context: TaskContext, log: str) -> None:
    """Cancel the workflow this step belongs to, counted in ``log``."""
    _count(log, "cancels")
    _cancel_own_workflow(context)


@threadmill_task(takes_context=True, retry=AT_ONCE_AGAIN)
def cancels_its_workflow_then_fails(context: TaskContext, log: str) -> None:
    """Cancel the workflow this step belongs to and fail, under a policy that would retry."""
    _count(log, "cancels and fails")
    _cancel_own_workflow(context)
    raise ValueError("fails after the cancel")


@threadmill_task(takes_context=True, retry=IN_AN_HOUR)
def cancels_its_workflow_then_fails_for_later(context: TaskContext, log: str) -> None:
    """Cancel the workflow this step belongs to and fail, under a policy that would retry in
    an hour."""
    _count(log, "cancels and fails")
    _cancel_own_workflow(context)
    raise ValueError("fails after the cancel")


@threadmill_task(takes_context=True, retry=IN_AN_HOUR)
async def acancels_its_workflow_then_fails_for_later(context: TaskContext, log: str) -> None:
    """``cancels_its_workflow_then_fails_for_later`` as an ``async def`` task."""
    _count(log, "cancels and fails")
    _cancel_own_workflow(context)
    raise ValueError("fails after the cancel")


@threadmill_task(takes_context=True, retry=IN_AN_HOUR)
def cancels_its_workflow_which_expires(context: TaskContext, log: str, fail: bool = False) -> None:
    """Cancel the workflow this step belongs to, then delete its hash, as ``result_ttl``
    passing would while steps a worker holds wait; fail after that when ``fail``, under a
    policy that would retry in an hour."""
    _count(log, "cancels")
    workflow_id = _cancel_own_workflow(context)
    broker = task_backends[context.task_result.backend].broker
    broker.client.delete(broker.keyspace.workflow(workflow_id))
    if fail:
        raise ValueError("fails after its workflow expired")


@threadmill_task(takes_context=True, retry=AT_ONCE_AGAIN)
def fails_first(context: TaskContext, value: int, log: str) -> int:
    """Fail the first attempt, return ``value`` times ten on the next; counted in ``log``."""
    _count(log, f"fails_first attempt {context.attempt}")
    if context.attempt < 2:
        raise ValueError(f"attempt {context.attempt}")
    return value * 10


@threadmill_task(takes_context=True, retry=AT_ONCE_AGAIN)
def always_fails(context: TaskContext, value: int) -> None:
    """Fail every attempt, naming it."""
    raise ValueError(f"attempt {context.attempt} of {value}")


@task
def text_of(value: object, size: int) -> str:
    """Return ``size`` characters: a value as large as the test needs."""
    return "x" * size


@task
def length(value: str) -> int:
    return len(value)


@task
async def acounted(n: int, log: str) -> int:
    """``counted`` as an ``async def`` task: it runs on the worker's event loop."""
    _count(log, f"counted {n}")
    return n


@task(takes_context=True)
async def acancels_its_workflow(context: TaskContext, log: str) -> None:
    """``cancels_its_workflow`` as an ``async def`` task (its Redis calls block the loop)."""
    _count(log, "cancels")
    _cancel_own_workflow(context)


@task
def named_task(value: object, task: object = None) -> list[object]:
    """Return its input and its argument named ``task``, which step() must pass on."""
    return [value, task]


@task
def boom_with(value: int, message: str) -> None:
    """Fail with ``message``."""
    raise ValueError(message)


@task(takes_context=True)
def attempt_and_value(context: TaskContext, value: object) -> list[object]:
    """Return the attempt number and the input: a step may take the task context."""
    return [context.attempt, value]


@task
def not_json(n: int) -> set[int]:
    """Return a set, which JSON cannot hold."""
    return {n}


# The tasks of docs/workflows.md's first example, with its names.
@task
def fetch(url: str) -> str:
    """Return what a download of ``url`` would be named."""
    return url.rsplit("/", 1)[-1]


@task
def resize(image: str, size: int) -> str:
    return f"{image}@{size}"


@task
def publish(images: list[str]) -> str:
    return " ".join(images)


@task
def notify() -> str:
    """Take no argument, as a Celery ``si()`` signature's task may."""
    return "notified"
