"""Prepare one enqueue: encode the call, check its size, give it an id; nothing reaches Redis."""

from collections.abc import Sequence
from dataclasses import replace
from itertools import repeat
from typing import Any

from ..broker import Broker, Guard, NewTask
from ..codec.ids import make_task_id, new_task_hex
from ..codec.payloads import encode_payload
from ..codec.results import new_result
from ..codec.times import now_ms, to_ms
from ..codec.unstorable import circular_at, unstorable_at
from ..compat import Task, TaskResult
from ..exceptions import UnstorableArguments
from ..observability.tracing import carrier
from ..wording import a_type
from .unique import unique_guard


def prepare(
    task: Task, args: Sequence[Any], kwargs: dict[str, Any], *, broker: Broker
) -> tuple[NewTask, TaskResult]:
    """Encode one call of a validated ``task`` under a new id and the task's unique key, if it
    has one; raise before anything reaches Redis (``UnstorableArguments`` for arguments JSON
    cannot hold)."""
    new, result = encode_call(task, args, kwargs, broker=broker)
    return unique_call(task, new, result, broker=broker)


def encode_call(
    task: Task,
    args: Sequence[Any],
    kwargs: dict[str, Any],
    *,
    broker: Broker,
    task_id: str | None = None,
    guard: Guard | None = None,
) -> tuple[NewTask, TaskResult]:
    """Encode one call of a validated ``task``; raise before anything reaches Redis.

    ``task_id`` and ``guard`` come from a schedule (its slot's id and marker) or a workflow
    (its step's); otherwise the id is new and there is no guard: ``prepare`` adds the task's
    unique key, whose own errors ``enqueue_many`` keeps as they are (``unique_call``).
    """
    settings = broker.settings
    task = _whole_priority(task)
    task_id = task_id or make_task_id(new_task_hex(), task.queue_name)
    enqueued_ms = now_ms()  # the result's view; the record gets the Redis time (enqueue.lua)
    check_keyword_names(task.module_path, kwargs)
    run_after_ms = None if task.run_after is None else to_ms(task.run_after)
    try:
        result = new_result(task, task_id, enqueued_ms, args, kwargs, settings.alias)
        payload = encode_payload(
            task, result.args, result.kwargs, run_after_ms, carrier(), given=(args, kwargs)
        )
    except (TypeError, ValueError) as exc:
        where = unstorable_at(args, kwargs)
        raise UnstorableArguments(
            f"Arguments of task {task.module_path!r} cannot be stored as JSON"
            f"{'' if where is None else f': {where}'} ({exc}). "
            "Pass strings, numbers, booleans, None, lists and dicts with string keys only."
        ) from exc
    except RecursionError as exc:
        raise UnstorableArguments(_too_deep(task.module_path, args, kwargs)) from exc
    check_payload_size(task.module_path, payload, settings.max_payload_bytes)
    new = NewTask(
        id=task_id,
        payload=payload,
        priority=task.priority,
        run_after_ms=run_after_ms,
        guard=guard,
    )
    return new, result


def unique_call(
    task: Task, new: NewTask, result: TaskResult, *, broker: Broker
) -> tuple[NewTask, TaskResult]:
    """Give an encoded call of ``task`` its unique guard, if the task has one, under a new id
    in its digest's shard when it must move; an error of its ``unique_key`` is raised as is."""
    guard = unique_guard(task, result.args, result.kwargs)
    if guard is None:
        return new, result
    routed_id = _unique_task_id(broker, task.queue_name, guard)
    if routed_id is not None:
        new, result = replace(new, id=routed_id), replace(result, id=routed_id)
    return replace(new, guard=guard), result


def _too_deep(task_path: str, args: Sequence[Any], kwargs: dict[str, Any]) -> str:
    """Say why encoding ran out of stack: a value holding itself, named where, else nesting
    too deep to store."""
    circular = circular_at(args, kwargs)
    if circular is not None:
        return (
            f"Arguments of task {task_path!r} cannot be stored as JSON: {circular}. Pass a "
            "copy without the cycle (plain lists and dicts), or the ids of the objects."
        )
    return (
        f"Arguments of task {task_path!r} are nested too deeply to store as JSON. "
        "Flatten them, or store the data elsewhere and pass its key."
    )


def check_keyword_names(task_path: str, kwargs: dict[Any, Any]) -> None:
    """Raise ``TypeError`` for a keyword argument not named by a str.

    JSON would store 1 as "1": the call would fail only in the worker. A schedule's checks
    apply the same rule, since its ``kwargs`` would fail every slot (schedules/checks.py).
    """
    for name in kwargs:
        if not isinstance(name, str):
            raise TypeError(
                f"Keyword argument {name!r} of task {task_path!r} is named by "
                f"{a_type(name)}, not a str. Name keyword arguments by str."
            )


def check_payload_size(task_path: str, payload: str, max_payload_bytes: int) -> None:
    """Raise ``ValueError`` for a payload above ``max_payload_bytes``.

    A schedule's checks apply the same rule, since its arguments would fail every slot
    (schedules/checks.py).
    """
    if len(payload) > max_payload_bytes:
        raise ValueError(
            f"Task {task_path!r} payload is {len(payload)} bytes, above "
            f"max_payload_bytes={max_payload_bytes}. Store large data "
            "elsewhere (a file or a model) and pass its key, or raise OPTIONS"
            "['max_payload_bytes']."
        )


def _whole_priority(task: Task) -> Task:
    """Return ``task`` with its priority as an int.

    Django accepts a whole float (``priority=5.0``), but a stored priority must be an int
    to be read back (codec/payloads.py ``load_task``), so it is stored as one.
    """
    if type(task.priority) is int:
        return task
    return replace(task, priority=int(task.priority))


def _unique_task_id(broker: Broker, queue: str, guard: Guard) -> str | None:
    """Return a new id in the shard of a unique task's digest; None if it need not move.

    Uniqueness is checked within the shard a task's id lands in, so equal unique tasks on
    a sharded queue must meet in one shard (broker/keys.py ``routed_task_id``). The digest is
    known only once the arguments are validated, so this id replaces the first one.
    """
    if broker.settings.shards_of(queue) == 1:
        return None
    ids = (make_task_id(new_task_hex(), queue) for _ in repeat(None))
    return broker.routed_id(queue, ids, guard.name)
