"""Task payloads: the JSON written once at enqueue, read back whole or a field at a time.

A payload holds the task path, its arguments, and the priority, run_after and
``enqueue_on_commit`` choice needed to rebuild the exact ``Task``, and whether the task was an
``async def`` (for the worker's lanes). The path is written first, that mark right after it, and
run_after_ms last, so ``task_path``, ``enqueued_async`` and ``run_after_ms`` read them in place
without decoding the arguments (the ack writer and the admin need only those).
"""

import json
import re
from collections.abc import Sequence
from dataclasses import fields
from functools import lru_cache, partial
from inspect import iscoroutinefunction
from typing import Any

from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.module_loading import import_string

from ..compat import InvalidTask, Task
from ..exceptions import NotATask, PayloadError, TaskNotImportable
from ..wording import a_type
from .jsoncodec import dumps, refuse_key_clash
from .task_paths import refuse_unsafe_import
from .times import from_ms


def encode_payload(
    task: Task,
    args: list[Any],
    kwargs: dict[str, Any],
    run_after_ms: int | None,
    trace: dict[str, str] | None = None,
    *,
    given: tuple[Sequence[Any], dict[str, Any]],
) -> str:
    """Return the payload JSON of one enqueue; ``args`` and ``kwargs`` are already normalised
    from ``given``, the call's arguments as passed, whose dict keys are checked for a clash.

    ``trace`` is the enqueuing span's context (observability/tracing.py), stored only when
    there is one. The path stays first, the async mark right after it, and run_after_ms last:
    ``task_path``, ``enqueued_async`` and ``run_after_ms`` read them in place.
    """
    refuse_key_clash(given)
    payload: dict[str, Any] = {"path": task.module_path}
    if iscoroutinefunction(task.func):
        payload["async"] = True
    payload["args"], payload["kwargs"] = args, kwargs
    if trace:
        payload["trace"] = trace
    on_commit = getattr(task, "enqueue_on_commit", None)  # ThreadmillTask's, from using() too
    if on_commit is not None:  # kept as priority is: what a task enqueues again runs with it
        payload["on_commit"] = on_commit
    payload["priority"] = task.priority
    payload["run_after_ms"] = run_after_ms
    return dumps(payload)


def decode_payload(raw: str | None) -> dict[str, Any]:
    """Parse a stored payload, raising ``PayloadError`` that says what is wrong with it."""
    if raw is None:
        raise PayloadError(
            "Stored record has no payload; it was corrupted or written by something other "
            "than django-threadmill."
        )
    try:
        payload = json.loads(raw)
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


def load_task(
    path: str, *, backend: str, queue: str, payload: dict[str, Any], validate: bool = True
) -> Task:
    """Import the ``Task`` at ``path`` and rebuild it as enqueued; refuse anything else.

    Only django.tasks ``Task`` instances ever run: a payload naming ``os.system`` fails here.
    ``validate=False`` is for reading a result back: the task is rebuilt as stored without
    the backend's ``validate_task``, so a result recorded on a queue since removed from
    QUEUES still reads (what it refuses is about running a task, not reading one).
    """
    priority = payload.get("priority", 0)
    if type(priority) is float and priority.is_integer():  # 5.0: stored before enqueue made ints
        priority = int(priority)
    run_after_ms = payload.get("run_after_ms")
    if type(priority) is not int or not (run_after_ms is None or type(run_after_ms) is int):
        raise PayloadError(
            f"Stored payload of {path!r} has priority={priority!r} and run_after_ms="
            f"{run_after_ms!r}; both must be whole numbers. It was corrupted."
        )
    on_commit = payload.get("on_commit")
    if on_commit is not None and type(on_commit) is not bool:
        raise PayloadError(
            f"Stored payload of {path!r} has on_commit={on_commit!r}; it must be true or false. "
            "It was corrupted."
        )
    return _rebuilt_task(path, backend, queue, priority, run_after_ms, on_commit, validate)


def forget_rebuilt_tasks() -> None:
    """Forget the tasks ``load_task`` rebuilt, so the next load finds each at its path anew:
    ``drain()`` calls it at its start, so a task a test patched (``mock.patch`` of a task, or
    its end) is run as found then, not as an earlier test's drain found it (docs/testing.md,
    2. In the test's own thread: drain()). A worker keeps them: its tasks do not change."""
    _rebuilt_task.cache_clear()


@lru_cache(maxsize=1024)
def _rebuilt_task(
    path: str,
    backend: str,
    queue: str,
    priority: int,
    run_after_ms: int | None,
    on_commit: bool | None,
    validate: bool,
) -> Task:
    """Return the task as enqueued. Cached: tasks are immutable, and rebuilding one (import,
    ``using()``, validation) was a sixth of a worker thread's time per echo task."""
    refuse_unsafe_import(path)
    try:
        found = import_string(path)
    except (Exception, SystemExit) as exc:  # ImportError, or what the module raised as it ran
        module_raised = not isinstance(exc, ImportError)
        why = f"its module raised {type(exc).__name__}: {exc}" if module_raised else exc
        raise TaskNotImportable(
            f"Task path {path!r} does not import ({why}). Deploy the code that defines it and "
            "restart the workers, which import a task's module once, or cancel the task."
        ) from exc
    if not isinstance(found, Task):
        raise NotATask(
            f"{path!r} is {a_type(found)}, not a task. Only functions decorated with "
            "@task can be enqueued."
        )
    try:
        run_after = None if run_after_ms is None else from_ms(run_after_ms)
        rebuild = found.using if validate else partial(_unvalidated, found)
        # Only when stored: a task whose class has no such choice (plain Task) takes none.
        choice = {} if on_commit is None else {"enqueue_on_commit": on_commit}
        return rebuild(
            priority=priority, queue_name=queue, run_after=run_after, backend=backend, **choice
        )
    except (InvalidTask, ValueError, TypeError) as exc:
        raise PayloadError(
            f"Task {path!r} cannot run as stored ({exc}). Fix the task's settings, or cancel it."
        ) from exc


@receiver(setting_changed)
def _forget_rebuilt_tasks(*, setting: str, **kwargs: Any) -> None:
    """Rebuild tasks afresh once USE_TZ or TIME_ZONE changed (a test's override): a cached
    task kept the run_after read under the old ones, naive where it must now be aware, or
    hours off in another TIME_ZONE."""
    if setting in ("USE_TZ", "TIME_ZONE"):
        _rebuilt_task.cache_clear()


def _unvalidated(found: Task, **stored: Any) -> Task:
    """``found.using(**stored)`` built without ``__post_init__``: django.tasks validates every
    ``Task`` it builds against today's settings (``validate_task``). As in ``using()``, a
    None keeps ``found``'s value."""
    task = object.__new__(type(found))
    for name in (f.name for f in fields(found)):
        value = stored.get(name)
        object.__setattr__(task, name, getattr(found, name) if value is None else value)
    return task


# Partial reads ---------------------------------------------------------------------------

_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"\s*")


def _after_space(text: str, at: int) -> int:
    """Return where the whitespace starting at ``at`` ends."""
    space = _SPACE.match(text, at)
    assert space is not None  # \s* matches anywhere, if only the empty string
    return space.end()


_PATH_OPENING = '{"path":'
_RUN_AFTER_KEY = '"run_after_ms":'
_NO_RUN_AFTER = _RUN_AFTER_KEY + "null}"  # how encode_payload ends without run_after
_ASYNC_MARK = ',"async":true'  # how encode_payload marks an async def task, after the path


def task_path(payload: str | None) -> str:
    """Return the task path from a payload without decoding all its arguments if possible."""
    if not payload:
        return ""
    if payload.startswith(_PATH_OPENING + '"'):  # how encode_payload writes it
        end = payload.find('"', len(_PATH_OPENING) + 1)
        path = payload[len(_PATH_OPENING) + 1 : end]
        if end > 0 and "\\" not in path:  # a path with escapes is read by the decoder below
            return path
    try:
        if payload.startswith(_PATH_OPENING):
            path, _ = _DECODER.raw_decode(payload, _after_space(payload, len(_PATH_OPENING)))
        else:
            path = json.loads(payload).get("path", "")
    except (ValueError, AttributeError):
        return ""
    return path if isinstance(path, str) else ""


def enqueued_async(payload: str) -> bool:
    """Tell whether ``payload`` says its task was an ``async def`` when enqueued, read in place
    right after the path: a worker sorts such a task on its event loop before the task's module
    was imported there (worker/lanes.py). A payload written before the mark, or by hand, says
    no; one that says so wrongly costs an import in the loop's executor, never a wrong lane.
    """
    if not payload.startswith(_PATH_OPENING + '"'):
        return False
    end = payload.find('"', len(_PATH_OPENING) + 1)
    return end > 0 and payload.startswith(_ASYNC_MARK, end + 1)


# Bytes of a payload the admin's task list reads to show its task path, written first: the
# whole payload (up to max_payload_bytes, or more written by hand) was read for each row.
PATH_HEAD_BYTES = 1024
CUT_PATH_MARK = "…"  # ends a task path longer than PATH_HEAD_BYTES leave room for


def task_path_in_head(head: str | None) -> str:
    """Return the task path from a payload's first PATH_HEAD_BYTES; one running past them
    reads as the part read and CUT_PATH_MARK (filtering by it finds the tasks it starts).

    A payload is ASCII (the codec escapes the rest), so the head's length in characters is
    its length in bytes (one written by hand in other bytes, its path cut, shows no path).
    """
    path = task_path(head)
    if path or not head or len(head) < PATH_HEAD_BYTES or not head.startswith(_PATH_OPENING + '"'):
        return path
    return head[len(_PATH_OPENING) + 1 :] + CUT_PATH_MARK


def run_after_ms(payload: str) -> int | None:
    """Return the run_after_ms a payload stores, or None (none, or unreadable).

    The last occurrence of the key is the payload's own: argument text comes before it.
    """
    if payload.endswith(_NO_RUN_AFTER):  # the usual payload: nothing to decode
        return None
    at = payload.rfind(_RUN_AFTER_KEY)
    if at < 0:
        return None
    try:
        value, _ = _DECODER.raw_decode(payload, _after_space(payload, at + len(_RUN_AFTER_KEY)))
    except ValueError:
        return None
    return value if type(value) is int else None
