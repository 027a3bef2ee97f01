"""How the ack writer says what a write did not record: each start notice or outcome Redis
answered otherwise, at the level its reason deserves, and a batch Redis refused this worker."""

import logging
from collections.abc import Sequence

from ..broker import Ack, Finish, Rejected, Start
from ..exceptions import BrokerRefused, MaybeApplied
from ..wording import listed_values

# How each item a call did not record is logged: a retried batch whose first try landed is no
# news; another owner settling the task, or its record gone, is worth a look; a damaged record
# needs an operator.
REJECTIONS = {
    Ack.ALREADY: (
        logging.INFO,
        "already recorded under this lease (a retried call whose first try landed)",
    ),
    Ack.STALE: (
        logging.WARNING,
        "settled or held by another owner (the lease was reaped, the task released or "
        "reserved again)",
    ),
    Ack.DAMAGED: (
        logging.ERROR,
        "its record cannot be read and was set aside (docs/lifecycle.md, Damaged records)",
    ),
    Ack.MISSING: (
        logging.WARNING,
        "its record is gone (Redis lost its data, or it was deleted or expired)",
    ),
}


def log_refused(
    log: logging.Logger, kind: str, items: Sequence[Start | Finish], error: BrokerRefused
) -> None:
    """Say what became of a batch Redis refused, which stops this worker: left to the reaper;
    or, where Redis refused only the confirmation OPTIONS['durability'] asks for, applied but
    not confirmed, each task named: a Redis that loses it leaves its lease to the reaper."""
    if isinstance(error, MaybeApplied):
        log.error(
            "Ack batch applied but not confirmed kind=%s size=%d task_ids=%s error=%s (Redis "
            "refused the confirmation, and this worker stops; if Redis loses these writes, the "
            "reaper settles these tasks once their leases lapse)",
            kind,
            len(items),
            task_ids(items),
            error,
        )
        return
    log.error(
        "Ack batch left to the reaper kind=%s size=%d task_ids=%s error=%s (Redis refused this "
        "worker, which stops; the reaper settles these tasks once their leases lapse)",
        kind,
        len(items),
        task_ids(items),
        error,
    )


def task_ids(items: Sequence[Start | Finish]) -> str:
    """Name the tasks of a batch not written, for its log line: which outcomes the reaper
    will settle as lost (a task that succeeded is recorded FAILED, or run again), at most 20
    of them and a count of the others (``listed_values``)."""
    return listed_values([item.lease.task_id for item in items])


def log_not_recorded(
    log: logging.Logger, kind: str, rejected: Sequence[Rejected[Start] | Rejected[Finish]]
) -> None:
    """Say which starts or outcomes were not recorded and why, each at its level."""
    for item, ack in rejected:
        level, why = REJECTIONS[ack]
        log.log(level, "Ack not recorded kind=%s task_id=%s: %s", kind, item.lease.task_id, why)
