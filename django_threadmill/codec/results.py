"""``TaskResult`` objects built from what the broker stores, and results and errors to store.

Every ``TaskResult`` the package hands out is built by ``task_result``, whatever it is built
from: a new enqueue, a record read back (``stored_result``), a reserved task about to run, an
expired attempt the reaper settles. ``finish_result`` is the one place a built result is moved
to its final state (``TaskResult`` is frozen).
"""

import inspect
import json
import traceback
from collections.abc import Sequence
from dataclasses import fields
from datetime import datetime
from typing import Any

from ..compat import Task, TaskError, TaskResult, TaskResultStatus, normalize_json
from ..exceptions import PayloadError
from ..retry import MAX_ATTEMPTS
from ..wording import a_type
from .jsoncodec import dumps, refuse_key_clash
from .text import digits_int
from .times import from_ms
from .unstorable import unstorable_in

STATUS_OF_STATE = {
    "ready": TaskResultStatus.READY,
    "reserved": TaskResultStatus.READY,  # docs/design.md, Reserved is not running
    "running": TaskResultStatus.RUNNING,
    "successful": TaskResultStatus.SUCCESSFUL,
    "failed": TaskResultStatus.FAILED,
}
UNREADABLE_ERROR_PATH = "django_threadmill.exceptions.PayloadError"

# What Django's normalize_json returns unchanged (and json encodes): arguments of only these
# types, in a tuple or list and a dict with str keys, need no normalising.
FLAT = frozenset({str, int, float, bool, type(None)})
STR_ONLY = frozenset({str})
# TaskResult's fields as task_result fills them; should Django add one, its constructor is used.
RESULT_FIELDS = (
    "task",
    "id",
    "status",
    "enqueued_at",
    "started_at",
    "finished_at",
    "last_attempted_at",
    "args",
    "kwargs",
    "backend",
    "errors",
    "worker_ids",
)
_BY_FIELD = {field.name for field in fields(TaskResult)} == {*RESULT_FIELDS, "_return_value"}


def _flat(args: Sequence[Any], kwargs: dict[str, Any]) -> bool:
    return (
        type(args) in (tuple, list)
        and type(kwargs) is dict
        and FLAT.issuperset(map(type, args))
        and STR_ONLY.issuperset(map(type, kwargs))
        and FLAT.issuperset(map(type, kwargs.values()))
    )


def task_result(
    task: Task,
    task_id: str,
    *,
    status: TaskResultStatus,
    args: Sequence[Any],
    kwargs: dict[str, Any],
    backend: str,
    enqueued_at: datetime | None = None,
    started_at: datetime | None = None,
    last_attempted_at: datetime | None = None,
    finished_at: datetime | None = None,
    errors: list[TaskError] | None = None,
    worker_ids: list[str] | None = None,
    return_value: Any = None,
    decoded: bool = False,
) -> TaskResult:
    """Return the ``TaskResult`` Django's constructor would build.

    TaskResult normalises its arguments (``normalize_json``) in ``__post_init__``. Flat
    arguments are normalised already, and so are ``decoded`` ones (just read from JSON), so for
    them the result is built field by field, without that pass: it was a sixth of the time of
    10,000 concurrent aenqueue calls, and about a tenth of a worker thread's time per echo task.
    For decoded ones it also recursed in Python, one frame per level, where JSON had decoded
    them in C (docs/enqueue.md, One call, one round trip).
    """
    result = object.__new__(TaskResult)
    set_field = object.__setattr__  # TaskResult is frozen
    set_field(result, "task", task)
    set_field(result, "id", task_id)
    set_field(result, "status", status)
    set_field(result, "enqueued_at", enqueued_at)
    set_field(result, "started_at", started_at)
    set_field(result, "finished_at", finished_at)
    set_field(result, "last_attempted_at", last_attempted_at)
    set_field(result, "args", list(args))
    set_field(result, "kwargs", dict(kwargs))
    set_field(result, "backend", backend)
    set_field(result, "errors", [] if errors is None else errors)
    set_field(result, "worker_ids", [] if worker_ids is None else worker_ids)
    set_field(result, "_return_value", return_value)
    if _BY_FIELD and (decoded or _flat(args, kwargs)):
        return result
    # Anything else TaskResult normalises itself (or refuses), as Django builds it.
    built: TaskResult = TaskResult(**{name: getattr(result, name) for name in RESULT_FIELDS})
    set_field(built, "_return_value", return_value)
    return built


def finish_result(
    result: TaskResult, status: TaskResultStatus, finished_ms: int, return_value: Any = None
) -> None:
    """Move ``result`` to its final ``status`` in place, as Django's ImmediateBackend does."""
    object.__setattr__(result, "status", status)
    object.__setattr__(result, "finished_at", from_ms(finished_ms))
    object.__setattr__(result, "_return_value", return_value)


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
        args=args,
        kwargs=kwargs,
        backend=backend,
        enqueued_at=from_ms(enqueued_ms),
    )


def stored_result(
    task: Task, task_id: str, payload: dict[str, Any], record: dict[str, str]
) -> TaskResult:
    """Return the ``TaskResult`` a stored record stands for, in the state it is in."""
    status = record_status(record)
    stored_value = record.get("result") if status == TaskResultStatus.SUCCESSFUL else None
    try:
        return_value = json.loads(stored_value or "null")
    except (ValueError, RecursionError) as exc:  # nested too deep: written by hand
        raise PayloadError(
            f"Stored result of task {task_id!r} is not valid JSON ({exc}); it was corrupted."
        ) from exc
    return task_result(
        task,
        task_id,
        status=status,
        args=payload.get("args", []),
        kwargs=payload.get("kwargs", {}),
        backend=task.backend,
        enqueued_at=from_ms(record.get("enqueued_ms")),
        started_at=from_ms(record.get("started_ms")),
        last_attempted_at=from_ms(attempted_ms(record)),
        finished_at=from_ms(record.get("finished_ms")),
        errors=errors_of(record),
        worker_ids=record["workers"].split("\n") if record.get("workers") else [],
        return_value=return_value,
        decoded=True,
    )


def record_status(record: dict[str, str]) -> TaskResultStatus:
    """Return the status a stored record reads as, without its task (which may not import)."""
    return STATUS_OF_STATE.get(record.get("state", ""), TaskResultStatus.READY)


def record_problem(record: dict[str, str]) -> str | None:
    """Return what a record holds that no script writes, which no status or value can be read
    from (a ``state`` written or deleted by hand, a success without its ``result``), or None.
    Unchecked, the first read as READY for good, the second as a success that returned None."""
    state = record.get("state")
    if state not in STATUS_OF_STATE:
        held = "no state field" if state is None else f"the state {state!r}"
        return f"{held}, not one of {', '.join(STATUS_OF_STATE)}"
    if state == "successful" and "result" not in record:
        return "the state successful without a result field"
    return None


def attempted_ms(record: dict[str, str]) -> str | None:
    """When the last attempt started: a first attempt's start is only stored as started_ms."""
    return record.get("attempted_ms") or record.get("started_ms")


def errors_of(record: dict[str, str]) -> list[TaskError]:
    """Return the stored errors of a record, one per failed attempt, oldest first."""
    count = digits_int(record.get("nerrors", "")) or 0  # garbage reads as none (common.lua)
    if count > MAX_ATTEMPTS:  # damage, which the scripts set aside: not a million reads here
        count = 0
    return [parse_error(record.get(f"error:{n}", "")) for n in range(1, count + 1)]


# The most characters of an error kept: its traceback as stored, its message as logged (the
# start and the end, which ends with the message). A task that raised a 100 MB message had it
# stored and logged whole, and one of 600 MB failed its finish call for good.
MAX_TRACEBACK_CHARS = 64 * 1024
MAX_ERROR_TEXT_CHARS = 2000


def cut_to(text: str, most: int) -> str:
    """Return ``text``, or its start and end around a note of how much was cut."""
    if len(text) <= most:
        return text
    kept = most // 2
    return f"{text[:kept]}\n[... {len(text) - 2 * kept} characters cut ...]\n{text[-kept:]}"


def error_text(exc: BaseException, most: int = MAX_ERROR_TEXT_CHARS) -> str:
    """Return ``str(exc)`` (cut to ``most`` characters), or what stopped it: an exception's
    own ``__str__`` may raise anything (a ``RecursionError``, a ``SystemExit``), and the worker
    must still record it."""
    try:
        return cut_to(str(exc), most)
    except BaseException as failure:  # whatever it raised, the task's error wins
        return f"<str() of the exception raised {type(failure).__name__}>"


def _formatted_traceback(exc: BaseException) -> str:
    """Return the traceback ``exc`` prints (cut to MAX_TRACEBACK_CHARS), or its frames and class
    where formatting it raised (a ``__notes__`` or ``__str__`` that raises what ``traceback``
    does not catch)."""
    try:
        return cut_to("".join(traceback.format_exception(exc)), MAX_TRACEBACK_CHARS)
    except BaseException as failure:  # whatever it raised, the task's error wins
        kind = type(exc)
        return "".join(
            [
                "Traceback (most recent call last):\n",
                *traceback.format_tb(exc.__traceback__),
                f"{kind.__module__}.{kind.__qualname__}: {error_text(exc)} (formatting it "
                f"raised {type(failure).__name__})\n",
            ]
        )


def error_json(exc: BaseException) -> str:
    """Return the stored form of a ``TaskError`` for ``exc``, as ImmediateBackend records it."""
    kind = type(exc)
    return dumps(
        {
            "exception_class_path": f"{kind.__module__}.{kind.__qualname__}",
            "traceback": _formatted_traceback(exc),
        }
    )


def parse_error(raw: str) -> TaskError:
    """Return the ``TaskError`` stored as ``raw``; an unreadable one says so in its traceback.

    Both fields must be strings, as the worker stores them: pages and retry policies read them
    as text, and a number there (written by hand) made the admin's task page answer 500.
    """
    try:
        data = json.loads(raw)
        path, trace = data["exception_class_path"], data["traceback"]
    except (ValueError, TypeError, KeyError, RecursionError):  # nested too deep: by hand too
        return _unreadable_error(raw)
    if not isinstance(path, str) or not isinstance(trace, str):
        return _unreadable_error(raw)
    return TaskError(exception_class_path=path, traceback=trace)


def _unreadable_error(raw: str) -> TaskError:
    return TaskError(
        exception_class_path=UNREADABLE_ERROR_PATH,
        traceback=f"Stored error is not readable: {raw[:200]!r}",
    )


def encode_result(value: Any, task_path: str, max_bytes: int) -> tuple[Any, str]:
    """Return the normalised return value and its JSON; raise ``TypeError`` or ``ValueError``
    with the fix for a value that is not JSON, or whose JSON is longer than ``max_bytes``."""
    try:
        normalized = normalize_json(value)
        refuse_key_clash(value)
        encoded = dumps(normalized)
    except (TypeError, ValueError) as exc:
        if inspect.iscoroutine(value):
            # Closed, so Python does not print "never awaited" outside the worker's log.
            value.close()
            raise TypeError(
                f"Task {task_path!r} returned a coroutine it never awaited. Await it inside an "
                "async def task (return await ...), make the task async def (and a decorator "
                "around it: async def too, or its wrapper marked with asgiref's "
                "markcoroutinefunction), or call it with asgiref's async_to_sync."
            ) from None
        where = unstorable_in(value, "return value")
        raise TypeError(
            f"Task {task_path!r} returned {a_type(value)}, which is not JSON"
            f"{'' if where is None else f': {where}'} ({exc}). "
            "Return strings, numbers, booleans, None, lists or dicts with string keys instead."
        ) from exc
    except RecursionError as exc:
        raise TypeError(
            f"Task {task_path!r} returned {a_type(value)} nested too deeply to store "
            "as JSON (or holding itself). Flatten it, or store the data elsewhere and return "
            "its key."
        ) from exc
    if len(encoded) > max_bytes:
        raise ValueError(
            f"Task {task_path!r} returned {len(encoded)} bytes of JSON, above "
            f"max_result_bytes={max_bytes}. Store large results elsewhere (a file or a model) "
            "and return its key, or raise OPTIONS['max_result_bytes']."
        )
    return normalized, encoded
