"""Translate between django.tasks objects and what the broker stores (JSON done client-side).

A payload is written once at enqueue and never rewritten: the task path, its arguments, and the
priority and run_after needed to rebuild the exact ``Task``. Records map back to ``TaskResult``.
"""

import json
import os
import time
import traceback
from collections.abc import Sequence
from dataclasses import fields
from datetime import UTC, datetime
from functools import cache, lru_cache
from typing import Any

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils import timezone
from django.utils.module_loading import import_string

from ..compat import InvalidTask, Task, TaskError, TaskResult, TaskResultStatus, normalize_json
from ..exceptions import PayloadError
from .jsoncodec import dumps as compact_dumps

STATUS_OF_STATE = {
    "ready": TaskResultStatus.READY,
    "reserved": TaskResultStatus.READY,  # reserved is not running (DESIGN.md §3 rule 5)
    "running": TaskResultStatus.RUNNING,
    "successful": TaskResultStatus.SUCCESSFUL,
    "failed": TaskResultStatus.FAILED,
}


def now_ms() -> int:
    """Return the local wall clock in ms: for display timestamps only, never for leases."""
    return time.time_ns() // 1_000_000


def to_ms(value: datetime) -> int:
    if timezone.is_naive(value):
        value = timezone.make_aware(value)
    return int(value.timestamp() * 1000)


@cache
def _use_tz() -> bool:
    """Return settings.USE_TZ, read once: a lazy settings lookup cost a worker about 1 µs per
    timestamp, four per task (issue 10). Tests that override it clear this cache."""
    return settings.USE_TZ


@receiver(setting_changed)
def _forget_use_tz(*, setting: str, **kwargs: Any) -> None:
    if setting == "USE_TZ":
        _use_tz.cache_clear()


def from_ms(value: int | str | None) -> datetime | None:
    """Return the stored ms timestamp as the datetime Django would use (aware under USE_TZ)."""
    if value is None or value == "":
        return None
    moment = datetime.fromtimestamp(int(value) / 1000, tz=UTC)
    return moment if _use_tz() else timezone.make_naive(moment)


# A random UUID's version (4) and variant (RFC 4122) bits, as uuid.uuid4() sets them.
_UUID4_BITS = (0x4000 << 64) | (0x8000 << 48)
_UUID4_MASK = ~((0xF000 << 64) | (0xC000 << 48)) & ((1 << 128) - 1)


def new_task_hex() -> str:
    """Return a random UUID (version 4) as 32 hex digits, like ``uuid4().hex``.

    Built from the integer: ``uuid.UUID``'s constructor was a tenth of an enqueue (issue 11).
    """
    return f"{int.from_bytes(os.urandom(16)) & _UUID4_MASK | _UUID4_BITS:032x}"


def dumps(value: Any) -> str:
    """JSON-encode an already normalised value, refusing NaN and infinities."""
    return compact_dumps(value)


def encode_payload(
    task: Task,
    args: list[Any],
    kwargs: dict[str, Any],
    run_after_ms: int | None,
    trace: dict[str, str] | None = None,
) -> str:
    """Return the payload JSON of one enqueue; ``args`` and ``kwargs`` are already normalised.

    ``trace`` is the enqueuing span's context (tracing.py), stored only when there is one.
    The path stays first and run_after_ms last: broker/payloads.py reads them in place.
    """
    payload: dict[str, Any] = {"path": task.module_path, "args": args, "kwargs": kwargs}
    if trace:
        payload["trace"] = trace
    payload["priority"] = task.priority
    payload["run_after_ms"] = run_after_ms
    return dumps(payload)


# What Django's normalize_json returns unchanged (and json encodes): arguments of only these
# types, in a tuple or list and a dict with str keys, need no normalising.
FLAT = frozenset({str, int, float, bool, type(None)})
STR_ONLY = frozenset({str})
# TaskResult's fields as task_result fills them; should Django add one, its constructor is used.
RESULT_FIELDS = ("task", "id", "status", "enqueued_at", "started_at", "finished_at")
RESULT_FIELDS += ("last_attempted_at", "args", "kwargs", "backend", "errors", "worker_ids")
_BY_FIELD = {field.name for field in fields(TaskResult)} == {*RESULT_FIELDS, "_return_value"}


def _flat(args: Sequence[Any], kwargs: dict[str, Any]) -> bool:
    return (
        type(args) in (tuple, list)
        and type(kwargs) is dict
        and FLAT.issuperset(map(type, args))
        and STR_ONLY.issuperset(map(type, kwargs))
        and FLAT.issuperset(map(type, kwargs.values()))
    )


def new_result(
    task: Task,
    task_id: str,
    enqueued_ms: int,
    args: Sequence[Any],
    kwargs: dict[str, Any],
    backend: str,
) -> TaskResult:
    """Return the READY ``TaskResult`` of a new enqueue."""
    return task_result(
        task,
        task_id,
        status=TaskResultStatus.READY,
        enqueued_at=from_ms(enqueued_ms),
        started_at=None,
        last_attempted_at=None,
        args=args,
        kwargs=kwargs,
        backend=backend,
        errors=[],
        worker_ids=[],
    )


def task_result(
    task: Task,
    task_id: str,
    *,
    status: TaskResultStatus,
    enqueued_at: datetime | None,
    started_at: datetime | None,
    last_attempted_at: datetime | None,
    args: Sequence[Any],
    kwargs: dict[str, Any],
    backend: str,
    errors: list[TaskError],
    worker_ids: list[str],
) -> TaskResult:
    """Return the ``TaskResult`` Django's constructor would build (not finished yet).

    TaskResult normalises its arguments (``normalize_json``) in ``__post_init__``. Flat
    arguments are normalised already, so for them the result is built field by field, without
    that pass: it was a sixth of the time of 10,000 concurrent aenqueue calls (issue 11), and
    about a tenth of a worker thread's time per echo task (issue 10).
    """
    result = object.__new__(TaskResult)
    set_field = object.__setattr__  # TaskResult is frozen
    set_field(result, "task", task)
    set_field(result, "id", task_id)
    set_field(result, "status", status)
    set_field(result, "enqueued_at", enqueued_at)
    set_field(result, "started_at", started_at)
    set_field(result, "finished_at", None)
    set_field(result, "last_attempted_at", last_attempted_at)
    set_field(result, "args", list(args))
    set_field(result, "kwargs", dict(kwargs))
    set_field(result, "backend", backend)
    set_field(result, "errors", errors)
    set_field(result, "worker_ids", worker_ids)
    set_field(result, "_return_value", None)
    if _BY_FIELD and _flat(args, kwargs):
        return result
    # Anything else TaskResult normalises itself (or refuses), as Django builds it.
    return TaskResult(**{name: getattr(result, name) for name in RESULT_FIELDS})


def load_task(path: str, *, backend: str, queue: str, payload: dict[str, Any]) -> Task:
    """Import the ``Task`` at ``path`` and rebuild it as enqueued; refuse anything else.

    Only django.tasks ``Task`` instances ever run: a payload naming ``os.system`` fails here.
    """
    priority = payload.get("priority", 0)
    run_after_ms = payload.get("run_after_ms")
    if type(priority) is not int or not (run_after_ms is None or type(run_after_ms) is int):
        raise PayloadError(
            f"Stored payload of {path!r} has priority={priority!r} and run_after_ms="
            f"{run_after_ms!r}; both must be whole numbers. It was corrupted."
        )
    return _rebuilt_task(path, backend, queue, priority, run_after_ms)


@lru_cache(maxsize=1024)
def _rebuilt_task(
    path: str, backend: str, queue: str, priority: int, run_after_ms: int | None
) -> Task:
    """Return the task as enqueued. Cached: tasks are immutable, and rebuilding one (import,
    ``using()``, validation) was a sixth of a worker thread's time per echo task."""
    try:
        found = import_string(path)
    except ImportError as exc:
        raise PayloadError(
            f"Task path {path!r} does not import ({exc}). Deploy the code that defines it, or "
            "cancel the task."
        ) from exc
    if not isinstance(found, Task):
        raise PayloadError(
            f"{path!r} is a {type(found).__name__}, not a task. Only functions decorated with "
            "@task can be enqueued."
        )
    try:
        return found.using(
            priority=priority,
            queue_name=queue,
            run_after=from_ms(run_after_ms) if run_after_ms else None,
            backend=backend,
        )
    except (InvalidTask, ValueError, TypeError) as exc:
        raise PayloadError(
            f"Task {path!r} cannot run as stored ({exc}). Fix the task's settings, or cancel it."
        ) from exc


def decode_payload(raw: str | None) -> dict[str, Any]:
    """Parse a stored payload, raising ``PayloadError`` that says what is wrong with it."""
    try:
        payload = json.loads(raw or "")
    except ValueError as exc:
        raise PayloadError(f"Stored payload is not valid JSON ({exc}); it was corrupted.") from exc
    except RecursionError as exc:  # written by hand: enqueue refuses arguments nested this deep
        raise PayloadError(
            "Stored payload is nested too deeply to decode; it was not written by enqueue."
        ) from exc
    if (
        not isinstance(payload, dict)
        or not isinstance(payload.get("path"), str)
        or not isinstance(payload.get("args", []), list)
        or not isinstance(payload.get("kwargs", {}), dict)
    ):
        raise PayloadError(
            "Stored payload lacks a task path, a list of args or a dict of kwargs; "
            "it was corrupted or written by something other than django-threadmill."
        )
    return payload


def error_json(exc: BaseException) -> str:
    """Return the stored form of a ``TaskError`` for ``exc``, as ImmediateBackend records it."""
    kind = type(exc)
    return dumps(
        {
            "exception_class_path": f"{kind.__module__}.{kind.__qualname__}",
            "traceback": "".join(traceback.format_exception(exc)),
        }
    )


def parse_error(raw: str) -> TaskError:
    try:
        data = json.loads(raw)
        return TaskError(
            exception_class_path=data["exception_class_path"], traceback=data["traceback"]
        )
    except (ValueError, TypeError, KeyError):
        return TaskError(
            exception_class_path="django_threadmill.exceptions.PayloadError",
            traceback=f"Stored error is not readable: {raw[:200]!r}",
        )


def attempted_ms(record: dict[str, str]) -> str | None:
    """When the last attempt started: a first attempt's start is only stored as started_ms."""
    return record.get("attempted_ms") or record.get("started_ms")


def errors_of(record: dict[str, str]) -> list[TaskError]:
    count = int(record.get("nerrors") or 0)
    return [parse_error(record.get(f"error:{n}", "")) for n in range(1, count + 1)]


def build_result(
    task: Task,
    *,
    task_id: str,
    status: TaskResultStatus,
    payload: dict[str, Any],
    record: dict[str, str],
) -> TaskResult:
    """Return the ``TaskResult`` a stored record stands for."""
    result = TaskResult(
        task=task,
        id=task_id,
        status=status,
        enqueued_at=from_ms(record.get("enqueued_ms")),
        started_at=from_ms(record.get("started_ms")),
        finished_at=from_ms(record.get("finished_ms")),
        last_attempted_at=from_ms(attempted_ms(record)),
        args=payload.get("args", []),
        kwargs=payload.get("kwargs", {}),
        backend=task.backend,
        errors=errors_of(record),
        worker_ids=record.get("workers", "").split("\n") if record.get("workers") else [],
    )
    if status == TaskResultStatus.SUCCESSFUL:
        object.__setattr__(result, "_return_value", json.loads(record.get("result") or "null"))
    return result


def encode_result(value: Any, task_path: str) -> tuple[Any, str]:
    """Return the normalised return value and its JSON; raise ``TypeError`` with the fix."""
    try:
        normalized = normalize_json(value)
        return normalized, dumps(normalized)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"Task {task_path!r} returned a {type(value).__name__}, which is not JSON ({exc}). "
            "Return strings, numbers, booleans, None, lists or dicts instead."
        ) from exc
