"""The Scheduler: fire each schedule's due slot through the idempotent enqueue, leader-free.

Every supervisor runs one. A slot's task id derives from (alias, schedule, slot), and the
enqueue script skips an id that exists and a slot at or before the schedule's last fired one
(kept in Redis in the task's queue), so however many supervisors fire a slot, and however long
after its task finished and expired, it is stored once. Only the latest due slot fires: slots
missed while no supervisor ran fire once, not once each. Slots are decided on Redis ``TIME``, so
a supervisor whose host clock drifted fires nothing early or late (docs/design.md, One clock).
"""

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from itertools import chain, count
from uuid import NAMESPACE_URL, uuid5

from ..broker import Guard, GuardKind
from ..broker.keys import routed_task_id
from ..codec.ids import make_task_id
from ..compat import Task
from ..conf.schedules import Schedule, bound_elsewhere, scheduled_task
from ..enqueue.pipeline import EnqueuePipeline
from ..exceptions import BrokerUnavailable
from .slots import slot_ms, slots_around

logger = logging.getLogger(__name__)

# The longest wait fire_due asks for: a slot further off is reckoned again on the Redis clock
# this often. The supervisor sleeps on the monotonic clock, which stands still while the host is
# suspended (a laptop, a paused or migrated VM), so a slot due meanwhile fires at most this long
# after the resume; a minute is cron's own step and costs one TIME call a minute. (A wait past
# 2**31 - 1 ms, 24.8 days, a monthly cron's, would also overflow poll().)
LONGEST_WAIT = timedelta(minutes=1)


def slot_task_id(alias: str, schedule: str, slot: int, queue: str, shards: int = 1) -> str:
    """Return the id of the task of one slot: the same in every supervisor.

    On a sharded queue every slot of a schedule lands in the shard of the schedule's name,
    where its fired marker lives, so the marker guards every slot (keys.routed_task_id).
    """
    name = f"threadmill:{alias}:{schedule}:{slot}"
    names = chain([name], (f"{name}:{n}" for n in count(1)))
    ids = (make_task_id(uuid5(NAMESPACE_URL, candidate).hex, queue) for candidate in names)
    return routed_task_id(ids, schedule, shards)


class BoundElsewhere(ValueError):
    """A schedule's task is bound to another backend (``threadmill.E011``)."""

    def __init__(self, problem: str, backend: str) -> None:
        super().__init__(problem)
        self.backend = backend


class Scheduler:
    """Fire the schedules of one ``TASKS`` entry when their slots come (supervisor thread only).

    It enqueues through the entry's pipeline: the tasks are validated by ``using()`` when
    ``scheduled_task`` builds them, as a backend would. ``clock`` is Redis time unless a test
    gives its own.
    """

    def __init__(
        self, pipeline: EnqueuePipeline, clock: Callable[[], datetime] | None = None
    ) -> None:
        self.pipeline = pipeline
        self.clock = clock or pipeline.broker.server_time
        self.schedules = list(pipeline.settings.schedules.values())
        self._due: dict[str, datetime | None] = {s.name: None for s in self.schedules}
        self._tasks: dict[str, Task] = {}

    def fire_due(self, stopped: Callable[[], bool] = lambda: False) -> timedelta | None:
        """Fire every schedule whose next slot has come; return how long to wait before calling
        again: until the next slot, at most ``LONGEST_WAIT``.

        ``stopped`` is asked before each schedule: once it holds, the call ends there, the
        schedules not fired yet still due (a supervisor's stop: docs/worker.md, Signals reach
        the main thread).

        At the first call, each schedule fires its latest past slot (a slot missed while no
        supervisor ran). Raises the first ``BrokerUnavailable`` once every due schedule was
        tried: a schedule Redis refused stays due, and one queue's failure (a key of another
        type, a Cluster node down) does not hold back the schedules of the others. A
        schedule that cannot fire (its task fails to import, its module exits as it is
        imported, or its enqueue fails) is logged and skipped until its next slot; one whose
        slots cannot be reckoned (its cron does not parse, its time zone is unknown:
        ``threadmill.E010``, which ``--skip-checks`` lets through), or whose task is bound to
        another backend (``threadmill.E011``: ``threadmill_schedules`` lists it as never
        firing), is logged once and dropped, and the others fire on.
        """
        now = self.clock()
        refused: BrokerUnavailable | None = None
        for schedule in list(self.schedules):
            if stopped():
                break
            due = self._due[schedule.name]
            if due is not None and due > now:
                continue
            try:
                latest, following = slots_around(schedule, now)
            except Exception:  # cronsim raises its own CronSimError
                logger.exception(
                    "Schedule has no slots and is dropped until the worker restarts "
                    "schedule=%s (manage.py check names the problem: threadmill.E010)",
                    schedule.name,
                )
                self._drop(schedule)
                continue
            try:
                self._fire(schedule, latest, awaited=due is not None)
            except BrokerUnavailable as exc:
                refused = refused or exc
                continue
            except BoundElsewhere as exc:
                logger.error(
                    "Schedule is dropped until the worker restarts schedule=%s (%s: manage.py "
                    "check reports it as threadmill.E011). Point its 'task' at a @task bound to "
                    "backend %r, or move the schedule to TASKS[%r]['OPTIONS']['schedules'].",
                    schedule.name,
                    exc,
                    self.pipeline.settings.alias,
                    exc.backend,
                )
                self._drop(schedule)
                continue
            except (Exception, SystemExit):  # a task module may exit as it is imported
                logger.exception("Schedule failed to fire schedule=%s", schedule.name)
            self._due[schedule.name] = following
        if refused is not None:
            raise refused
        upcoming = [due for due in self._due.values() if due is not None]
        return None if not upcoming else max(timedelta(0), min(min(upcoming) - now, LONGEST_WAIT))

    def _drop(self, schedule: Schedule) -> None:
        """Leave ``schedule`` out until the worker restarts: it can never fire."""
        self.schedules.remove(schedule)
        del self._due[schedule.name]

    def _task(self, schedule: Schedule) -> Task:
        """Return the task ``schedule`` enqueues (imported once), or raise ``BoundElsewhere``
        for a task bound to another backend: the checks and ``threadmill_schedules`` say such a
        schedule never fires, so it fires nothing (docs/schedules.md, Checks)."""
        if schedule.name not in self._tasks:
            task = scheduled_task(schedule)
            problem = bound_elsewhere(schedule, task, self.pipeline.settings.alias)
            if problem:
                raise BoundElsewhere(problem, task.backend)
            self._tasks[schedule.name] = task
        return self._tasks[schedule.name]

    def _fire(self, schedule: Schedule, slot: datetime, *, awaited: bool) -> None:
        """Enqueue ``slot``'s task unless it is stored or fired already.

        A slot the supervisor ``awaited`` (not its first look at the schedule) fires even when
        Redis has no marker: the marker was lost (FLUSHDB, a restart without persistence), and
        taking the slot for a new schedule's first would skip it (docs/schedules.md).
        """
        task = self._task(schedule)
        at_ms = slot_ms(slot)
        settings = self.pipeline.settings
        result = self.pipeline.enqueue_guarded(
            task,
            schedule.args,
            schedule.kwargs,
            task_id=slot_task_id(
                settings.alias,
                schedule.name,
                at_ms,
                task.queue_name,
                settings.shards_of(task.queue_name),
            ),
            guard=Guard(
                kind=GuardKind.AWAITED_SLOT if awaited else GuardKind.SLOT,
                name=schedule.name,
                value_ms=at_ms,
            ),
        )
        if result is not None:
            logger.info(
                "Schedule fired schedule=%s slot=%s task_id=%s",
                schedule.name,
                slot.isoformat(),
                result.id,
            )
