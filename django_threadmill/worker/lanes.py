"""Which lane a reserved task runs in: ``async def`` tasks on the event loop, others on threads."""

from inspect import iscoroutinefunction

from django.utils.module_loading import import_string

from ..broker import Reservation
from ..codec.payloads import enqueued_async
from ..codec.task_paths import refuse_unsafe_import
from ..compat import Task

# Task paths whose lane is kept; past this many the record starts afresh, so that paths read
# from Redis (a forged one each time) cannot grow it without bound.
MOST_PATHS = 1024
_async_by_path: dict[str, bool] = {}  # task path -> whether it is an ``async def`` task


def runs_async(path: str) -> bool:
    """Tell whether the task at ``path`` is an ``async def``; imported once per task path.

    A path that does not import, or names no task, goes to a thread, where the executor
    records it FAILED with the reason. A failed import is not kept: a module that raised once
    (a module-level query before the database was up) kept every task of an ``async def`` on
    the threads for the life of the process, where each then failed.
    """
    found = _async_by_path.get(path)
    if found is None:
        try:
            refuse_unsafe_import(path)
            task = import_string(path)
        except (Exception, SystemExit):  # ImportError, or what the module raised as it ran
            return False
        found = isinstance(task, Task) and iscoroutinefunction(task.func)
        if len(_async_by_path) >= MOST_PATHS:
            _async_by_path.clear()
        _async_by_path[path] = found
    return found


def is_async(reservation: Reservation) -> bool:
    """Tell whether ``reservation`` is for the event loop (its lease names the task path);
    the first time its path is asked, this imports the task's module."""
    return runs_async(reservation.lease.task_path)


def known_lane(reservation: Reservation) -> bool | None:
    """Tell whether ``reservation`` is for the event loop if that is known without importing
    anything (its path was asked before), else None: a dict look-up, for the prefetcher."""
    return _async_by_path.get(reservation.lease.task_path)


def sorted_on_loop(reservation: Reservation) -> bool:
    """Tell whether a task whose lane is not known yet is sorted by the event loop, which
    imports its module in its executor: its payload says it was an ``async def`` when enqueued.
    Sorted by a worker thread, it waited for one to be free, behind sync tasks that held them
    all, with the loop idle."""
    return enqueued_async(reservation.payload)
