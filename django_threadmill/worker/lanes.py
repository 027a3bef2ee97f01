"""Which lane a reserved task runs in: ``async def`` tasks on the event loop, others on threads."""

from functools import lru_cache
from inspect import iscoroutinefunction

from django.utils.module_loading import import_string

from ..broker import Reservation
from ..codec.task_paths import refuse_unsafe_import
from ..compat import Task


@lru_cache(maxsize=1024)
def runs_async(path: str) -> bool:
    """Tell whether the task at ``path`` is an ``async def``; asked once per task path.

    A path that does not import, or names no task, goes to a thread, where the executor
    records it FAILED with the reason.
    """
    try:
        refuse_unsafe_import(path)
        found = import_string(path)
    except (Exception, SystemExit):  # ImportError, or what the module raised as it ran
        return False
    return isinstance(found, Task) and iscoroutinefunction(found.func)


def is_async(reservation: Reservation) -> bool:
    """Tell whether ``reservation`` is for the event loop (its lease names the task path)."""
    return runs_async(reservation.lease.task_path)
