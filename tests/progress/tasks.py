"""Tasks that report progress, at module level so worker processes import them."""

import asyncio
import threading
import time
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

from django.utils.translation import gettext_lazy

from django_threadmill.compat import TaskContext, task
from django_threadmill.progress import report_progress


@task(takes_context=True)
def reports_then_waits(context: TaskContext, gate: str, times: int = 1) -> str:
    """Report ``times`` times in a tight loop, the last 3 of 10; wait until ``gate`` exists;
    report 10 of 10 and return at once, so that last report goes with the outcome."""
    for n in range(times):
        report_progress(context, 3, 10, f"step 3 ({n + 1} of {times})")
    while not Path(gate).exists():
        time.sleep(0.01)  # the task's own wait, polled; the test creates the file
    report_progress(context, 10, 10, "done")
    return "done"


@task(takes_context=True)
async def areports_then_waits(context: TaskContext, gate: str, times: int = 1) -> str:
    """``reports_then_waits`` as an ``async def`` task, waiting on the event loop."""
    for n in range(times):
        report_progress(context, 3, 10, f"step 3 ({n + 1} of {times})")
    while not Path(gate).exists():
        await asyncio.sleep(0.01)
    report_progress(context, 10, 10, "done")
    return "done"


@task(takes_context=True)
def reports_then_fails(context: TaskContext) -> None:
    report_progress(context, 1, 2, "halfway")
    raise ValueError("failed halfway")


@task(takes_context=True)
def reports_from_its_own_thread(context: TaskContext) -> None:
    """Report from a thread the task starts: the report reaches the worker all the same."""
    helper = threading.Thread(target=report_progress, args=(context, 5), kwargs={"note": "aside"})
    helper.start()
    helper.join()


@task(takes_context=True)
def reports_a_note(context: TaskContext, note: str) -> None:
    report_progress(context, 1, 2, note)


@task(takes_context=True)
def reports_unknown_total(context: TaskContext, done: float) -> None:
    report_progress(context, done, note="counting")


@task(takes_context=True)
def reports_as(context: TaskContext, kind: str, done: str, total: str) -> None:
    """Report ``done`` of ``total``, written as text and read as ``kind``: "Decimal",
    "Fraction" or "float" (a task's arguments are JSON, which has none of the first two)."""
    number = {"Decimal": Decimal, "Fraction": Fraction, "float": float}[kind]
    report_progress(context, number(done), number(total))


@task
def plain() -> int:
    return 1


@task(takes_context=True)
def reports_a_translated_note(context: TaskContext) -> None:
    report_progress(context, 1, 2, gettext_lazy("Sending the newsletter"))
