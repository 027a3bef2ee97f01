"""How one refill splits the buffer's free slots between the queues a worker serves.

Every queue asked in a refill is asked in the same round trip (one pipeline), so serving many
queues costs no more round trips than serving one (asking the queues one after
another cost an extra round trip per empty queue, while the worker threads ran dry).
"""

import math
import time
from collections.abc import Callable, Collection

PROBE_EVERY_S = 0.05  # an empty queue beside a busy one is asked for a task this often, at most


class FetchPlan:
    """Split free slots fairly between queues, with a one-task probe for queues found empty.

    Queues that had tasks last time share the slots evenly; the queue first in turn, which
    rotates every refill, gets the remainder. A queue found empty is asked for one task (a
    probe) by a refill at most every ``PROBE_EVERY_S``, so a task enqueued there is reserved
    soon even while a busy queue fills the buffer, and one that has tasks again gets its share
    from the refill after. A probe per refill cost a busy worker of three queues two acquire
    calls per refill (about two Redis commands per task at four threads). A probe the busy
    queues leave no slot for is a peek (a count of 0): it reserves nothing but tells whether
    tasks wait there; not asked at all, such a queue starved beside a busy one under
    ``--prefetch 1``. Used by the prefetcher thread only.

    A queue found empty with a delayed task (a retry, a ``run_after``) is asked again when that
    task is due, and its due time counts in the prefetcher's wait: the refills that another
    queue's wake tokens bring ask that queue alone, and a worker woken by them more often than
    it waits for one forgot the delayed task for as long as they came (docs/worker.md, Several
    queues).
    """

    def __init__(
        self, queues: tuple[str, ...], clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.queues = queues
        self.clock = clock
        self._next_probe = 0.0  # when empty queues may be probed again (clock seconds)
        self._first = 0
        self._empty: set[str] = set()
        self._due: dict[str, float] = {}  # queues found empty -> when their delayed task is due
        self.unasked: list[str] = []  # queues the last refill left out that may hold tasks

    def counts(self, free: int, is_held: Callable[[str], bool]) -> dict[str, int]:
        """Return how many tasks to ask each queue for, in turn order (0: a peek at a queue
        found empty); at most ``free`` in all."""
        turn = self.queues[self._first :] + self.queues[: self._first]
        self._first = (self._first + 1) % len(self.queues)
        open_queues = [queue for queue in turn if not is_held(queue)]
        if self._due:  # the clock is read only when a queue found empty holds a delayed task
            now = self.clock()
            self._busy_again([queue for queue, due in self._due.items() if due <= now])
        busy = [queue for queue in open_queues if queue not in self._empty] or open_queues
        probed = [queue for queue in open_queues if queue not in busy]
        if probed:  # the clock is read only when there is an empty queue to probe
            now = self.clock()
            if now < self._next_probe:
                probed = []
            else:
                self._next_probe = now + PROBE_EVERY_S
        slots = max(0, min(len(probed), free - len(busy)))  # probes that reserve, the rest peek
        share, remainder = divmod(free - slots, len(busy)) if busy else (0, 0)
        counts = {queue: share + (index < remainder) for index, queue in enumerate(busy)}
        counts.update((queue, int(index < slots)) for index, queue in enumerate(probed))
        asked = {
            queue: counts[queue]
            for queue in open_queues
            if counts.get(queue, 0) > 0 or queue in probed
        }
        # Fewer slots than queues not known to be empty: some are left for the next refill.
        self.unasked = [q for q in open_queues if q not in asked and q not in self._empty]
        return asked

    def found(self, queue: str, had_tasks: bool, next_due_ms: int | None = None) -> None:
        """Remember whether ``queue`` had tasks, for the next refill's split, and when its next
        delayed task is due (``next_due_ms`` from now), if it had none ready."""
        if had_tasks:
            self._busy_again([queue])
            return
        self._empty.add(queue)
        if next_due_ms is None:
            self._due.pop(queue, None)
        else:
            self._due[queue] = self.clock() + next_due_ms / 1000

    def left_out(self, queues: Callable[[str], bool]) -> None:
        """Stop counting the ``queues`` the prefetcher left out of this refill on purpose (a
        limited queue's tasks wait for a runner) among those to ask again at once: asking
        them before each wait for a runner asked Redis in a loop."""
        self.unasked = [queue for queue in self.unasked if not queues(queue)]

    def next_due_ms(self) -> int | None:
        """Return in how many ms the soonest delayed task of a queue found empty is due (0:
        due now), or None when none holds one."""
        if not self._due:
            return None
        return max(0, math.ceil((min(self._due.values()) - self.clock()) * 1000))

    def forget_empty(self) -> None:
        """Treat every queue as busy again: some queue may have got tasks."""
        self._empty.clear()
        self._due.clear()

    def _busy_again(self, queues: Collection[str]) -> None:
        """Ask ``queues`` with a share of the slots from the next refill on."""
        self._empty.difference_update(queues)
        for queue in queues:
            self._due.pop(queue, None)

    def woken(self, queues: frozenset[str]) -> None:
        """Ask ``queues``, whose wake tokens came, before the others, which stay known empty
        (no queue named: every queue is asked again).

        With more queues than free slots, forgetting them all had refills ask the queues a
        few at a time, in turn, one round trip each, until one held the task (docs/worker.md,
        Several queues). The probe of the empty queues waits PROBE_EVERY_S as well: their
        own tokens wake the worker for them.
        """
        if not queues:
            self.forget_empty()
            return
        self._busy_again(queues)
        self._next_probe = self.clock() + PROBE_EVERY_S
