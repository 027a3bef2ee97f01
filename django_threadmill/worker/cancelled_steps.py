"""A workflow step that must not run does not start, even one a worker reserved ahead.

Cancelling a workflow cancels its steps still waiting in their queues (workflows/result.py),
and a drainer cancels a step it stored just as the workflow ended without it (its ``mark``,
workflows/launch.py). But a step a worker had reserved ahead (read-ahead), or the next attempt
of one that was running (a retry), is not waiting there for either. So before a worker starts a
workflow step it reads the step's workflow (one HMGET, for workflow steps only), and records the
step as cancelled instead when the workflow was cancelled or recorded the step as not run
(docs/workflows.md, Cancel). It reads it too when a step's attempt fails and its retry policy
would try it again: the retry is then not scheduled. The reaper asks the same of a step whose
worker died while running it (worker/reap_settle.py). The workflow's hash expires ``result_ttl``
after it ended, sooner than a held step may wait: the step's own record says it then
(``Workflows.stopped_step``). A workflow that failed does not stop its steps already enqueued:
they still run, as documented.
"""

import logging
from typing import Protocol

from ..broker import Broker, Finish, Lease, Outcome, Reservation
from ..broker.workflows import StoppedStep
from ..codec.times import now_ms
from ..exceptions import BrokerUnavailable, Cancelled
from . import outcome

logger = logging.getLogger(__name__)


class HeldStep(Protocol):
    """An attempt a worker or the reaper holds: a reservation, or an expired attempt."""

    @property
    def lease(self) -> Lease: ...

    @property
    def workflow(self) -> str: ...  # a step's ``<workflow id>:<step>``, else ""


class CancelledSteps:
    """Tell a worker which reserved steps their workflow stopped."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker

    def cancellation(self, reservation: Reservation) -> Finish | None:
        """Return the cancelled outcome to record for ``reservation`` instead of running it,
        or None when it runs: not a workflow step, its workflow did not stop it, or that
        cannot be read now (a step is not held back for an outage; its own writes will wait)."""
        stopped = self._stopped(reservation)
        if stopped is None:
            return None
        logger.info(
            "Step its workflow stopped not started task_id=%s workflow_id=%s",
            reservation.lease.task_id,
            stopped.workflow_id,
        )
        error = Cancelled.before_it_ran(stopped.reason)
        return outcome.failed(reservation.lease, error, now_ms(), None)._replace(cancelled=True)

    def retry_checked(self, finish: Finish, held: HeldStep) -> Finish:
        """Return ``finish``, the outcome of ``held``'s failed attempt; a retry as FAILED, with
        the attempt's own error, when ``held`` is a step its workflow stopped: it gets no more
        attempts (docs/workflows.md, Cancel). The worker and the reaper both decide so."""
        if finish.outcome is Outcome.RETRY and self._stopped(held) is not None:
            return finish._replace(outcome=Outcome.FAILED, retry_delay_ms=0)
        return finish

    def _stopped(self, held: HeldStep) -> StoppedStep | None:
        """Return why ``held``'s workflow stopped it; None when it did not, when it is no
        step, and when that cannot be read now."""
        if not held.workflow:
            return None
        try:
            return self.broker.stopped_step(held.lease.task_id, held.workflow)
        except BrokerUnavailable as exc:
            logger.warning(
                "Workflow of a step unreadable, the step goes on task_id=%s error=%s",
                held.lease.task_id,
                exc,
            )
            return None
