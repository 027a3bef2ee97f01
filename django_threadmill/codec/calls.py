"""Whether a task's function can take the arguments it will be called with, checked where the
call is fixed long before it runs (a workflow's steps at enqueue, a schedule's slots at the
system check): unchecked, the mistake shows only when the call runs, after the work before it."""

import inspect
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

from ..compat import Task


def call_misfit(
    task: Task, args: Sequence[Any], kwargs: dict[str, Any], *, leading: int = 0
) -> str | None:
    """Return why ``task``'s function cannot be called with ``leading`` values first, then
    ``args`` and ``kwargs`` (the context comes before them all, if it takes one): Python's own
    words. None when it can, and when the function has no signature to read (some built in C).
    """
    signature = _signature(task.func)
    if signature is None:
        return None
    given = [None] * (int(task.takes_context) + leading)
    try:
        signature.bind(*given, *args, **kwargs)
    except TypeError as exc:
        return str(exc)
    return None


@cache
def _signature(func: Callable[..., Any]) -> inspect.Signature | None:
    """``func``'s signature, read once: a group of 10,000 steps is often of one task."""
    try:
        return inspect.signature(func)
    except (TypeError, ValueError):
        return None
