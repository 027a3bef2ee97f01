"""How an attempt ends: the ``Finish`` written for it, and its ``TaskResult`` and signal.

An attempt ends in a worker thread (the task returned or raised), in the watchdog (it ran past
``--task-timeout``) or in the reaper (its worker went silent). All three build their ``Finish``
here and, when the attempt ends FAILED or SUCCESSFUL, mark the ``TaskResult`` and send
``task_finished`` here, so a lost worker and a raised exception reach the same retry policy and
the same receivers. A ``TaskResult`` is built only when something needs it: the retry policy
of a failed attempt, or a receiver that hears the signal.
"""

from dataclasses import dataclass
from typing import Any, Protocol

from ..broker import Finish, Lease, Outcome
from ..codec.results import error_json, finish_result, parse_error
from ..codec.times import now_ms
from ..compat import TaskResult, TaskResultStatus, task_finished
from ..conf.durations import whole_ms
from ..observability.signals import asend_guarded, heard, send_guarded
from ..observability.tracing import record_failure
from ..retry import retry_delay


def succeeded(lease: Lease, value: str, started_ms: int, finished_ms: int, run_ms: int) -> Finish:
    """Return the outcome of an attempt that returned ``value`` (its JSON) after ``run_ms``."""
    return Finish(
        lease=lease,
        outcome=Outcome.SUCCESSFUL,
        value=value,
        started_ms=started_ms,
        finished_ms=finished_ms,
        run_ms=run_ms,
    )


def failed(
    lease: Lease,
    error: BaseException,
    started_ms: int,
    result: TaskResult | None,
    *,
    retry: bool = True,
    run_ms: int | None = None,
) -> Finish:
    """Return the outcome of an attempt that raised ``error``: a retry if the task's policy
    gives one, else FAILED.

    ``error`` joins ``result.errors`` first, so the policy sees every error so far, as Django's
    receivers will, and goes on the attempt's run span, if it is traced. Without a result (the
    task cannot be loaded) there is no policy to ask; an attempt stopped for running too long
    (``retry=False``) ends FAILED, as the watchdog ends a thread's. ``run_ms`` is how long it
    ran (None where it did not run, or is unknown).
    """
    value = error_json(error)
    stored = parse_error(value)
    record_failure(lease, error, stored.traceback)
    delay = None
    if result is not None:
        result.errors.append(stored)
        if retry:
            delay = retry_delay(result.task, result, error)
    return Finish(
        lease=lease,
        outcome=Outcome.FAILED if delay is None else Outcome.RETRY,
        value=value,
        started_ms=started_ms,
        finished_ms=now_ms(),
        retry_delay_ms=0 if delay is None else whole_ms(delay),
        run_ms=run_ms,
    )


def _final_status(finish: Finish) -> TaskResultStatus | None:
    """Return the status ``finish`` leaves its TaskResult in; None for a retry (not final)."""
    if finish.outcome is Outcome.RETRY:
        return None
    if finish.outcome is Outcome.SUCCESSFUL:
        return TaskResultStatus.SUCCESSFUL
    return TaskResultStatus.FAILED


class ResultSource(Protocol):
    """Where an attempt's TaskResult comes from: built on demand, or built already."""

    @property
    def result(self) -> TaskResult: ...

    def built_result(self) -> TaskResult | None: ...


@dataclass(frozen=True, slots=True)
class Built:
    """A TaskResult built already (the reaper's), as a ``ResultSource``."""

    result: TaskResult

    def built_result(self) -> TaskResult | None:
        return self.result


def _finished(
    source: ResultSource, finish: Finish, return_value: Any
) -> tuple[TaskResult | None, bool]:
    """Return the TaskResult ``finish`` ends, marked so, and whether ``task_finished`` is
    heard. The result is built only if it is heard; one built already (a receiver of
    ``task_started`` may hold it) is marked either way, as Django's backends do."""
    status = _final_status(finish)
    if status is None:
        return None, False
    sent = heard(task_finished, status)
    result = source.result if sent else source.built_result()
    if result is not None:
        finish_result(result, status, finish.finished_ms, return_value)
    return result, sent


def announce(sender: type, source: ResultSource, finish: Finish, return_value: Any = None) -> None:
    """Mark the attempt's TaskResult as ``finish`` ended it and send ``task_finished``; a retry
    sends nothing. A failing receiver is logged, never raised (``send_guarded``)."""
    result, sent = _finished(source, finish, return_value)
    if result is not None and sent:
        send_guarded(task_finished, sender, result)


async def aannounce(
    sender: type, source: ResultSource, finish: Finish, return_value: Any = None
) -> None:
    """Async twin of ``announce``, on the event loop: async receivers are awaited there."""
    result, sent = _finished(source, finish, return_value)
    if result is not None and sent:
        await asend_guarded(task_finished, sender, result)
