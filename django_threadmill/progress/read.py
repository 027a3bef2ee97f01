"""``progress_of``: the last progress a task reported, read back with one HMGET."""

from ..backend import ThreadmillTaskBackend
from ..codec.progress import Progress, stored_progress
from ..compat import TaskResult, TaskResultDoesNotExist, task_backends
from ..wording import a_type


def progress_of(result: TaskResult) -> Progress | None:
    """Return the last progress ``result``'s task reported, or None if it reported none yet.

    A finished task keeps its last report with its result; a retry or a requeue starts
    without one. A result of another backend has none (``report_progress`` does nothing
    there). Raise ``TaskResultDoesNotExist`` once the task's record is gone (expired or
    purged), as ``get_result`` does: None would say it has not reported yet, for ever.
    Raise ``PayloadError`` when the record cannot be read (docs/lifecycle.md, Damaged
    records), and ``TypeError`` for anything but a TaskResult (an id, say).
    """
    if not isinstance(result, TaskResult):
        raise TypeError(
            f"progress_of() takes a TaskResult, not {a_type(result)}. Pass the result "
            "enqueue() returned, or the_task.get_result(id) for an id."
        )
    backend = task_backends[result.backend]
    if not isinstance(backend, ThreadmillTaskBackend):
        return None
    fields = backend.broker.progress_fields(result.id)
    if fields is None:
        raise TaskResultDoesNotExist(result.id)
    return stored_progress(fields)
