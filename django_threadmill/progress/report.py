"""``report_progress``: a running task says how far it got, at no Redis cost per call."""

import math
import sys

from ..broker import ProgressReport
from ..codec.text import utf8_text
from ..compat import TaskContext
from ..wording import a_type
from .channels import channel_of

NOTE_MAX_CHARS = 200  # a note is a line in the admin's task list, not a log


def _amount(name: str, value: object) -> int | float:
    """Return ``value`` as a plain int or float, or raise naming ``name`` and the fix.

    An int past a float's range is refused before anything formats it: its text could pass
    Python's limit on int digits, and the percent is computed in floats.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(
            f"report_progress() {name}={value!r} is {a_type(value)}, not a number. Pass an int "
            "or a float, 0 or more."
        )
    if isinstance(value, int) and abs(value) > sys.float_info.max:
        raise ValueError(
            f"report_progress() {name} is an int of {value.bit_length()} bits, past what a "
            f"float can hold ({sys.float_info.max:.3g}). Count in larger units."
        )
    if (isinstance(value, float) and not math.isfinite(value)) or value < 0:
        raise ValueError(
            f"report_progress() {name}={value!r} is not a finite number of 0 or more. Pass 0 "
            "or more."
        )
    return int(value) if isinstance(value, int) else float(value)


def _note(note: object) -> str:
    note = utf8_text(note, "report_progress() note")
    if len(note) > NOTE_MAX_CHARS:
        raise ValueError(
            f"report_progress() note is {len(note)} characters long; at most {NOTE_MAX_CHARS} "
            "are kept. Shorten it: it is a line in the admin, not a log."
        )
    return note


def report_progress(
    context: TaskContext,
    done: int | float,
    total: int | float | None = None,
    note: str = "",
) -> None:
    """Report that the running task has done ``done`` of ``total`` (None: not known yet).

    Call it from a task declared with ``@task(takes_context=True)``, as often as you like, from
    a sync or an ``async def`` task (it never waits on I/O). In a threadmill worker the latest
    report of each task is kept in memory and written at most every half second, or with the
    task's outcome, never one Redis call per report; ``progress_of`` reads it back. Run by any
    other backend (Django's ImmediateBackend in a project's tests, say), it checks its
    arguments and does nothing, so task code stays portable (docs/lifecycle.md, Progress).
    """
    if not isinstance(context, TaskContext):
        raise TypeError(
            f"report_progress() takes the task's context first, not {a_type(context)}. Declare "
            "the task with @task(takes_context=True) and pass the context it is given."
        )
    done = _amount("done", done)
    if total is not None:
        total = _amount("total", total)
        if done > total:
            raise ValueError(
                f"report_progress() done={done!r} is more than total={total!r}. Pass the "
                "total you expect now, or total=None while it is not known."
            )
    note = _note(note)
    channel = channel_of(context.task_result)
    if channel is not None:
        channel.sink.put(ProgressReport(lease=channel.lease, done=done, total=total, note=note))
