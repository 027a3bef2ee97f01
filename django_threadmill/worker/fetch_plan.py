"""How one refill splits the buffer's free slots between the queues a worker serves.

Every queue asked in a refill is asked in the same round trip (one pipeline), so serving many
queues costs no more round trips than serving one (asking the queues one after
another cost an extra round trip per empty queue, while the worker threads ran dry).
"""

import math
import time
from bisect import bisect_left
from collections.abc import Callable, Collection

PROBE_EVERY_S = 0.05  # an empty queue beside a busy one is asked for a task this often, at most
# The most queues one refill peeks at besides those it asks for tasks: queues found empty, in
# turn, at each probe, and queues not answered yet that it has no slot for.
PEEKS_PER_REFILL = 100


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

    Peeks are bounded, so that a worker of thousands of queues asks Redis in proportion to its
    work: a refill peeks at up to ``PEEKS_PER_REFILL`` queues not answered yet that it has no
    slot for (left to later refills, they were learnt a few at a time), and a probe at up to as
    many queues found empty, the next ones at the next probe (probing every one cost a busy
    worker beside 999 of them 73 script calls a task) (docs/worker.md, Many queues).
    """

    def __init__(
        self, queues: tuple[str, ...], clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.queues = queues
        self.clock = clock
        self._next_probe = 0.0  # when empty queues may be probed again (clock seconds)
        self._first = 0
        self._position = {queue: index for index, queue in enumerate(queues)}
        self._probe_from = 0  # the position the next probe's first queue found empty is at
        self._unanswered = set(queues)  # not answered since the worker began, or forgotten
        self._empty: set[str] = set()
        # The queues not found empty, in the queues' order, and their positions; None once one
        # is found empty or busy again, till the next refill lists them anew.
        self._not_empty: tuple[list[str], list[int]] | None = None
        self._due: dict[str, float] = {}  # queues found empty -> when their delayed task is due
        self.unasked: list[str] = []  # queues the last refill left out that may hold tasks

    def counts(self, free: int, is_held: Callable[[str], bool]) -> dict[str, int]:
        """Return how many tasks to ask each queue for (0: a peek), those not found empty
        first, in turn order; at most ``free`` in all.

        A refill goes through the queues not found empty only (``_in_turn``), and through the
        others once a probe is due: going through every queue, each looked up in ``is_held``,
        cost a busy worker beside 1,000 queues found empty half a millisecond a refill.
        """
        first = self._first
        self._first = (first + 1) % len(self.queues)
        if self._due:  # the clock is read only when a queue found empty holds a delayed task
            now = self.clock()
            self._busy_again([queue for queue, due in self._due.items() if due <= now])
        busy = [queue for queue in self._in_turn(first) if not is_held(queue)]
        probed = self._probed(first, is_held) if busy else []
        if not busy:  # every open queue was found empty: they all share the slots
            busy = [queue for queue in self._turn(first) if not is_held(queue)]
        slots = max(0, min(len(probed), free - len(busy)))  # probes that reserve, the rest peek
        share, remainder = divmod(free - slots, len(busy)) if busy else (0, 0)
        counts = {queue: share + (index < remainder) for index, queue in enumerate(busy)}
        asked = {queue: count for queue, count in counts.items() if count}
        if self._unanswered:  # at the start, or after a look that forgot the empty ones
            unanswered = [q for q in busy if not counts[q] and q in self._unanswered]
            asked.update((queue, 0) for queue in unanswered[:PEEKS_PER_REFILL])
        asked.update((queue, int(index < slots)) for index, queue in enumerate(probed))
        # Fewer slots than queues not known to be empty: some are left for the next refill.
        self.unasked = [q for q in busy if q not in asked and q not in self._empty]
        return asked

    def found(self, queue: str, had_tasks: bool, next_due_ms: int | None = None) -> None:
        """Remember whether ``queue`` had tasks, for the next refill's split, and when its next
        delayed task is due (``next_due_ms`` from now), if it had none ready."""
        self._unanswered.discard(queue)
        if had_tasks:
            self._busy_again([queue])
            return
        if queue not in self._empty:
            self._empty.add(queue)
            self._not_empty = None
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
        """Treat every queue as busy again: some queue may have got tasks. Those found empty
        are peeked at by the next refill, as at the start, not asked a few at a time."""
        self._unanswered.update(self._empty)
        self._empty.clear()
        self._not_empty = None
        self._due.clear()

    def _turn(self, first: int) -> tuple[str, ...]:
        """Return the queues in turn order, from the one at position ``first``."""
        return self.queues[first:] + self.queues[:first]

    def _in_turn(self, first: int) -> list[str]:
        """Return the queues not found empty in turn order, from position ``first`` on.

        They are listed in the queues' order once, till one is found empty or busy again, and
        each refill starts that list at ``first``: a refill beside many queues found empty
        costs what it costs beside none.
        """
        if self._not_empty is None:
            listed = [queue for queue in self.queues if queue not in self._empty]
            self._not_empty = (listed, [self._position[queue] for queue in listed])
        listed, positions = self._not_empty
        cut = bisect_left(positions, first)
        return listed[cut:] + listed[:cut] if cut else listed

    def _probed(self, first: int, is_held: Callable[[str], bool]) -> list[str]:
        """Return the queues found empty to probe in this refill: none until PROBE_EVERY_S has
        passed since the last probe, then those not held back, in turn order from position
        ``first``, or, past PEEKS_PER_REFILL of them, as many going on in the queues' order
        from where the last probe stopped, so that each is probed within a bounded number of
        probes."""
        if not self._empty:  # the clock is read only when there is an empty queue to probe
            return []
        now = self.clock()
        if now < self._next_probe:
            return []
        found_empty = self._empty
        turn = self._turn(first)
        empty = [queue for queue in turn if queue in found_empty and not is_held(queue)]
        if not empty:
            return []
        self._next_probe = now + PROBE_EVERY_S
        if len(empty) <= PEEKS_PER_REFILL:
            return empty
        count = len(self.queues)
        by_position = sorted(empty, key=lambda q: (self._position[q] - self._probe_from) % count)
        probed = by_position[:PEEKS_PER_REFILL]
        self._probe_from = (self._position[probed[-1]] + 1) % count
        return probed

    def _busy_again(self, queues: Collection[str]) -> None:
        """Ask ``queues`` with a share of the slots from the next refill on."""
        if not self._empty.isdisjoint(queues):
            self._empty.difference_update(queues)
            self._not_empty = None
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
