"""How an attempt ends: the ``Finish`` written for it, and its ``TaskResult`` and signal.

An attempt ends in a worker thread (the task returned or raised), in the watchdog (it ran past
``--task-timeout``) or in the reaper (its worker went silent). All three build their ``Finish``
here and, when the attempt ends FAILED or SUCCESSFUL, mark the ``TaskResult`` and send
``task_finished`` here, so a lost worker and a raised exception reach the same retry policy and
the same receivers.
"""

from typing import Any

from ..broker import Finish, Lease, Outcome
from ..codec.results import error_json, finish_result, parse_error
from ..codec.times import now_ms
from ..compat import TaskResult, TaskResultStatus, task_finished
from ..observability.signals import asend_guarded, send_guarded
from ..retry import retry_delay


def succeeded(lease: Lease, value: str, started_ms: int, finished_ms: int) -> Finish:
    """Return the outcome of an attempt that returned ``value`` (its JSON)."""
    return Finish(
        lease=lease,
        outcome=Outcome.SUCCESSFUL,
        value=value,
        started_ms=started_ms,
        finished_ms=finished_ms,
    )


def failed(
    lease: Lease,
    error: BaseException,
    started_ms: int,
    result: TaskResult | None,
    *,
    retry: bool = True,
) -> Finish:
    """Return the outcome of an attempt that raised ``error``: a retry if the task's policy
    gives one, else FAILED.

    ``error`` joins ``result.errors`` first, so the policy sees every error so far, as Django's
    receivers will. Without a result (the task cannot be loaded) there is no policy to ask;
    an attempt stopped for running too long (``retry=False``) ends FAILED, as the watchdog
    ends a thread's.
    """
    value = error_json(error)
    delay = None
    if result is not None:
        result.errors.append(parse_error(value))
        if retry:
            delay = retry_delay(result.task, result, error)
    if delay is not None:
        return Finish(
            lease=lease,
            outcome=Outcome.RETRY,
            value=value,
            started_ms=started_ms,
            finished_ms=now_ms(),
            retry_delay_ms=int(delay.total_seconds() * 1000),
        )
    return Finish(
        lease=lease,
        outcome=Outcome.FAILED,
        value=value,
        started_ms=started_ms,
        finished_ms=now_ms(),
    )


def _final_status(finish: Finish) -> TaskResultStatus | None:
    """Return the status ``finish`` leaves its TaskResult in; None for a retry (not final)."""
    if finish.outcome is Outcome.RETRY:
        return None
    if finish.outcome is Outcome.SUCCESSFUL:
        return TaskResultStatus.SUCCESSFUL
    return TaskResultStatus.FAILED


def announce(sender: type, result: TaskResult, finish: Finish, return_value: Any = None) -> None:
    """Mark ``result`` as ``finish`` ended it and send ``task_finished``; a retry sends nothing.

    A failing receiver is logged, never raised (``send_guarded``).
    """
    status = _final_status(finish)
    if status is not None:
        finish_result(result, status, finish.finished_ms, return_value)
        send_guarded(task_finished, sender, result)


async def aannounce(
    sender: type, result: TaskResult, finish: Finish, return_value: Any = None
) -> None:
    """Async twin of ``announce``, on the event loop: async receivers are awaited there."""
    status = _final_status(finish)
    if status is not None:
        finish_result(result, status, finish.finished_ms, return_value)
        await asend_guarded(task_finished, sender, result)
