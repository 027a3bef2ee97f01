"""``report_progress``: a running task says how far it got, at no Redis cost per call."""

import math
import numbers
import sys
from decimal import Decimal
from typing import SupportsFloat

from ..broker import ProgressReport
from ..codec.text import utf8_text
from ..compat import TaskContext
from ..wording import a_type, shown
from .channels import channel_of

NOTE_MAX_CHARS = 200  # a note is a line in the admin's task list, not a log
# How far a done may pass total and still count as total when either is a float: arithmetic's
# round-off (0.1 + 0.2 is a hair above 0.3), never a real overshoot (docs/lifecycle.md, Progress).
ROUND_OFF = 1e-9  # relative to total


def _amount(name: str, value: object) -> int | float:
    """Return ``value`` as a plain int or float, or raise naming ``name`` and the fix.

    Any real number is taken (a Decimal too, which Python does not count as one): an integral
    one (a numpy int, say) as an int, any other as a float. One past a float's range is
    refused before anything formats it: an int's text could pass Python's limit on int
    digits, and the percent is computed in floats.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real | Decimal):
        raise TypeError(
            f"report_progress() {name}={shown(value)} is {a_type(value)}, not a count or an "
            "amount. Pass an int or a float (a Decimal or a Fraction is taken too), 0 or more."
        )
    number = int(value) if isinstance(value, numbers.Integral) else _float(name, value)
    if isinstance(number, int) and abs(number) > sys.float_info.max:
        raise _past_a_float(name, f"an int of {number.bit_length()} bits")
    if not math.isfinite(number) or number < 0:
        raise ValueError(
            f"report_progress() {name}={shown(number)} is not a finite number of 0 or more. Pass 0 "
            "or more."
        )
    return abs(number)  # -0.0 passes the check: stored as is, the admin showed "-0.0 / 10"


def _float(name: str, value: numbers.Real | Decimal) -> float:
    """Return ``value`` as a float; raise for a finite one past a float's range."""
    try:
        number = float(value)
    except OverflowError:  # a Fraction's; a Decimal's comes out as inf
        number = math.inf
    except ValueError:  # a signalling NaN (Decimal("sNaN")): refused as any nan
        return math.nan
    if math.isinf(number) and value not in (math.inf, -math.inf):
        raise _past_a_float(name, a_type(value))
    return number


def _past_a_float(name: str, what: str) -> ValueError:
    return ValueError(
        f"report_progress() {name} is {what}, past what a float can hold "
        f"({sys.float_info.max:.3g}). Count in larger units."
    )


def _within(done: int | float, total: int | float) -> int | float:
    """Return ``done``, or ``total`` when ``done`` passes it by a float's round-off only (0.1 +
    0.2 of 0.3); raise for a real overshoot, by ints always."""
    if done <= total:
        return done
    floats = isinstance(done, float) or isinstance(total, float)
    if floats and math.isclose(done, total, rel_tol=ROUND_OFF):
        return total
    raise ValueError(
        f"report_progress() done={shown(done)} is more than total={shown(total)}. Pass the total "
        "you expect now, or total=None while it is not known."
    )


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
    done: SupportsFloat,
    total: SupportsFloat | None = None,
    note: str = "",
) -> None:
    """Report that the running task has done ``done`` of ``total`` (None: not known yet).

    Each is a real number of 0 or more: an int, a float, a Decimal, a Fraction, a numpy
    number; a ``done`` past ``total`` by a float's round-off only is taken as ``total``.

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
    amount = _amount("done", done)
    out_of = None if total is None else _amount("total", total)
    if out_of is not None:
        amount = _within(amount, out_of)
    note = _note(note)
    channel = channel_of(context.task_result)
    if channel is not None:
        channel.sink.put(ProgressReport(lease=channel.lease, done=amount, total=out_of, note=note))
