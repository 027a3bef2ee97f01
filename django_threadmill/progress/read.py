"""``progress_of`` and ``aprogress_of``: the last progress a task reported, read back with one
HMGET."""

from ..backend import ThreadmillTaskBackend
from ..codec.progress import Progress, stored_progress
from ..compat import TaskResult, task_backends
from ..enqueue.pipeline import no_such_result
from ..wording import a_type
from ..workflows.result import WorkflowResult


def progress_of(result: TaskResult) -> Progress | None:
    """Return the last progress ``result``'s task reported, or None if it reported none yet.

    A finished task keeps its last report with its result; a retry or a requeue starts
    without one. A result of another backend has none (``report_progress`` does nothing
    there). Raise ``TaskResultDoesNotExist`` once the task's record is gone (expired or
    purged), as ``get_result`` does: None would say it has not reported yet, for ever.
    Raise ``PayloadError`` when the record cannot be read (docs/lifecycle.md, Damaged
    records), and ``TypeError`` for anything but a TaskResult (an id, say).
    """
    backend = _backend_of(result, "progress_of()", "the_task.get_result(id)")
    if backend is None:
        return None
    return _progress(result, backend.broker.progress_fields(result.id))


async def aprogress_of(result: TaskResult) -> Progress | None:
    """Async twin of ``progress_of``, on the asyncio client: it never blocks the event loop."""
    backend = _backend_of(result, "aprogress_of()", "await the_task.aget_result(id)")
    if backend is None:
        return None
    return _progress(result, await backend.broker.aprogress_fields(result.id))


def _backend_of(result: object, call: str, by_id: str) -> ThreadmillTaskBackend | None:
    """Return the ThreadmillTaskBackend that stores ``result``, None for another backend's;
    raise ``TypeError`` naming ``call`` and the fix (``by_id``, for an id) for anything but a
    TaskResult."""
    if not isinstance(result, TaskResult):
        raise TypeError(f"{call} takes a TaskResult, not {a_type(result)}. {_fix(result, by_id)}")
    backend = task_backends[result.backend]
    return backend if isinstance(backend, ThreadmillTaskBackend) else None


def _fix(result: object, by_id: str) -> str:
    """What to pass instead of ``result``: "the result enqueue() returned" misled for a
    workflow's, which is what its ``enqueue()`` returns."""
    if isinstance(result, WorkflowResult):
        return (
            "A workflow reports no progress of its own: pass one of its steps' results, e.g. "
            "workflow.results[0] (None until that step is enqueued)."
        )
    return f"Pass the result enqueue() returned, or {by_id} for an id."


def _progress(result: TaskResult, fields: dict[str, str | None] | None) -> Progress | None:
    """Return the progress in ``fields``, read from ``result``'s record (None: it is gone)."""
    if fields is None:
        raise no_such_result(result.id)
    return stored_progress(fields)
