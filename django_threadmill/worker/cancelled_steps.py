"""A step of a cancelled workflow does not start, even one a worker reserved before the cancel.

Cancelling a workflow cancels its steps still waiting in their queues (workflows/result.py),
but a step a worker had reserved ahead (read-ahead), or the next attempt of one that was running
(a retry), is not waiting there. So before a worker starts a workflow step it reads its
workflow's status (one HMGET, for workflow steps only), and records the step as cancelled
instead when the workflow was (docs/workflows.md, Cancel). A workflow that failed does not stop
its steps already enqueued: they still run, as documented.
"""

import logging

from ..broker import Broker, Finish, Reservation
from ..codec.ids import read_step_marker
from ..codec.times import now_ms
from ..exceptions import BrokerUnavailable, Cancelled
from . import outcome

logger = logging.getLogger(__name__)


class CancelledSteps:
    """Tell a worker which reserved steps belong to a cancelled workflow."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker

    def cancellation(self, reservation: Reservation) -> Finish | None:
        """Return the cancelled outcome to record for ``reservation`` instead of running it,
        or None when it runs: not a workflow step, its workflow not cancelled, or that cannot
        be read now (a step is not held back for an outage; its own writes will wait)."""
        marked = read_step_marker(reservation.workflow) if reservation.workflow else None
        if marked is None:
            return None
        workflow_id, _ = marked
        try:
            status, why = self.broker.workflow_values(workflow_id, ["status", "why"])
        except BrokerUnavailable as exc:
            logger.warning(
                "Workflow of a step unreadable, the step runs task_id=%s error=%s",
                reservation.lease.task_id,
                exc,
            )
            return None
        if status != "cancelled":
            return None
        logger.info(
            "Step of a cancelled workflow not started task_id=%s workflow_id=%s",
            reservation.lease.task_id,
            workflow_id,
        )
        error = Cancelled.before_it_ran(f"its workflow was {why or 'cancelled'}")
        return outcome.failed(reservation.lease, error, now_ms(), None)
