"""A workflow step that must not run does not start, even one a worker reserved ahead.

Cancelling a workflow cancels its steps still waiting in their queues (workflows/result.py),
and a drainer cancels a step it stored just as the workflow ended without it (its ``mark``,
workflows/launch.py). But a step a worker had reserved ahead (read-ahead), or the next attempt
of one that was running (a retry), is not waiting there for either. So before a worker starts a
workflow step it reads the step's workflow (one HMGET, for workflow steps only), and records the
step as cancelled instead when the workflow was cancelled or recorded the step as not run
(docs/workflows.md, Cancel). It reads it too when a step's attempt fails and its retry policy
would try it again: the retry is then not scheduled, since the workflow's record may expire
(``result_ttl``) before the retry is due, and a step whose workflow is gone starts. A workflow
that failed does not stop its steps already enqueued: they still run, as documented.
"""

import logging

from ..broker import Broker, Finish, Reservation
from ..broker.workflows import StoppedStep
from ..codec.times import now_ms
from ..exceptions import BrokerUnavailable, Cancelled
from . import outcome

logger = logging.getLogger(__name__)


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
        return outcome.failed(reservation.lease, error, now_ms(), None)

    def stops_retry(self, reservation: Reservation) -> bool:
        """Tell whether the workflow of ``reservation``, whose attempt failed and would be
        retried, stopped it: the attempt is then recorded FAILED, with its own error."""
        return self._stopped(reservation) is not None

    def _stopped(self, reservation: Reservation) -> StoppedStep | None:
        """Return why ``reservation``'s workflow stopped it; None when it did not, when it is
        no step, and when that cannot be read now."""
        if not reservation.workflow:
            return None
        try:
            return self.broker.stopped_step(reservation.workflow)
        except BrokerUnavailable as exc:
            logger.warning(
                "Workflow of a step unreadable, the step goes on task_id=%s error=%s",
                reservation.lease.task_id,
                exc,
            )
            return None
