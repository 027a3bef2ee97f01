"""Runners for queues with a limit: a process reserves their tasks only for runners it has free.

A task of a queue with a concurrency limit or a rate, reserved to wait in the buffer behind busy
runners, holds what an idle process could have run it with (docs/schedules.md, Per-queue
limits). The prefetcher asks such a queue for no more tasks than the lanes its tasks take
(threads, event loop) have runners free, learning those lanes from the tasks it reserved.
"""

import threading
from collections.abc import Callable, Collection

from ..broker import Reservation
from .buffer import Runners, TaskBuffer
from .leases import HeldLeases

LANES = ("threads", "loop")  # a task's lane, by whether it is async (Runners' fields)


class RunnersForLimits:
    """What the prefetcher asks queues with a limit for, and when it waits for a runner.

    Used by the prefetcher thread only; it does nothing for a process that serves no such queue.
    """

    def __init__(
        self,
        limited: frozenset[str],
        runners: Callable[[], Runners],
        buffer: TaskBuffer,
        held: HeldLeases,
        *,
        is_held: Callable[[str], bool],
        left_out: Callable[[Callable[[str], bool]], None],
    ) -> None:
        self.limited = limited  # the queues with a concurrency limit or a rate
        self.runners = runners  # how many tasks this process can run at once, per lane
        self.buffer = buffer
        self.held = held
        self.is_held = is_held  # a queue a limit or a failure holds back for now
        self.left_out = left_out  # the fetch plan's: queues not to ask again at once
        if limited:
            buffer.runner_freed = threading.Event()
        self._lanes_of: dict[str, set[str]] = {}  # queue -> the lanes its tasks took
        # queue -> its tasks put in whose lane only an import can tell, till sorted or ended
        self._unsorted_of: dict[str, list[Reservation]] = {}
        self._no_runner_for: set[str] = set()  # limited queues whose runners were all busy
        self.awaiting: set[str] = set()  # limited queues whose tasks wait for a runner

    def asks(self, planned: dict[str, int], free: int) -> dict[str, int]:
        """Return the refill's ``planned`` asks (of ``free`` slots) as runners allow them."""
        return self._within_free_runners(self._runner_for_the_awaiting(planned, free))

    def answered(self, queue: str, found_work: bool) -> None:
        """Note that ``queue``, whose runners were all busy, holds tasks: they wait for one."""
        if queue in self._no_runner_for and found_work:
            self.awaiting.add(queue)

    def _within_free_runners(self, counts: dict[str, int]) -> dict[str, int]:
        """Ask a queue with a limit for no more tasks than this process has runners free in the
        lanes its tasks took (threads, event loop): a task reserved to wait in the buffer behind
        busy runners held what an idle process could have run it with, a concurrency slot (a
        queue of ``concurrency: 2`` served by two processes of one thread ran one task at a
        time; counting the event loop's runners for its sync tasks, so it did again once an
        async task of any queue came) or a rate's token (the fleet started fewer than the
        rate). A queue none of whose tasks this process took yet is asked for one, which shows
        its lane. A count cut to 0 peeks: whether tasks wait there (docs/schedules.md,
        Per-queue limits). Only a queue whose runners are all busy waits for one to be done
        (waited_for_a_runner): runners another queue was asked for in this refill may come
        back unused (a queue at its concurrency limit reserves none), and a queue told to
        wait for them waited for the long task holding that limit's slot, though every
        runner it needed was idle."""
        self.awaiting = set()
        self._no_runner_for.clear()
        if not self.limited.intersection(counts):
            return counts
        assert self.buffer.runner_freed is not None  # set for a process with limited queues
        self.buffer.runner_freed.clear()  # before the count: a task done after it sets it
        free = self.buffer.free_runners(self.runners())._asdict()
        idle = dict(free)  # before this refill's asks take any: only busy runners are waited for
        for queue in counts.keys() & self.limited:
            lanes = self._lanes(queue)
            room = sum(free[lane] for lane in lanes or LANES)
            if not any(idle[lane] for lane in lanes or LANES):
                self._no_runner_for.add(queue)
            counts[queue] = min(counts[queue], room if lanes else min(room, 1))
            _take_runners(free, lanes or LANES, counts[queue])
        return counts

    def _runner_for_the_awaiting(self, counts: dict[str, int], free: int) -> dict[str, int]:
        """While tasks of a queue with a limit wait for a runner (the last refill found every
        runner of their lanes busy), ask that queue in every refill and leave out the queues
        without a limit whose tasks take runners of those lanes, so that the buffer drains and
        the next runner freed goes to it. Read ahead as usual, a busy queue beside it kept every
        runner taken, and the limited queue's tasks waited until it ran dry (docs/schedules.md,
        Per-queue limits). Queues left out are not asked again at once (``FetchPlan.left_out``)."""
        awaiting = [queue for queue in self.awaiting if not self.is_held(queue)]
        if not awaiting:
            return counts
        lanes = set().union(*(self._lanes(queue) or LANES for queue in awaiting))

        def takes_the_lanes(queue: str) -> bool:
            return queue not in self.limited and bool(lanes & self._lanes(queue))

        self.left_out(lambda queue: queue in awaiting or takes_the_lanes(queue))
        asked = {queue: count for queue, count in counts.items() if not takes_the_lanes(queue)}
        return asked | dict.fromkeys(awaiting, free)

    def learn(self, queue: str, reservations: list[Reservation]) -> None:
        """Note the lanes the tasks of ``queue`` were put in, in a process serving a queue with a
        limit: such a queue's next reservations are only for free runners of its lanes
        (_within_free_runners), and while it waits for one, the queues whose tasks take those
        lanes are not read ahead (_runner_for_the_awaiting). A task whose lane only an import
        can tell is kept till a worker thread sorted it, or it ended: this thread imports
        nothing (TaskBuffer.put_many)."""
        if self.limited:
            unsorted = self._unsorted_of.get(queue, [])
            self._unsorted_of[queue] = self._learned(queue, [*unsorted, *reservations])

    def _learned(self, queue: str, reservations: list[Reservation]) -> list[Reservation]:
        """Add the lanes of ``reservations`` known now to those the tasks of ``queue`` took;
        return the others this process still holds.

        A task whose module fails to import never shows its lane (worker/lanes.py keeps no
        failed import), so one is forgotten once it ended here: kept till sorted, each such
        task (its payload too) stayed for the life of the process, 2,000 of them after 2,000
        tasks of a module a deploy left out. What is kept is bounded by the leases held.
        """
        lanes = self._lanes_of.setdefault(queue, set())
        unsorted = []
        for reservation in reservations:
            on_loop = self.buffer.known_lane(reservation)
            if on_loop is not None:
                lanes.add(LANES[on_loop])
            elif self.held.holds(reservation.lease):
                unsorted.append(reservation)
        return unsorted

    def _lanes(self, queue: str) -> set[str]:
        """Return the lanes the tasks of ``queue`` took (none yet: empty). One whose lane is
        not known yet counts in the lane where it waits to be sorted (the loop's for a task
        enqueued as ``async def``): left out, the next refill reserved another task of its
        queue behind the runner that runs it."""
        unsorted = self._unsorted_of.get(queue)
        if unsorted:
            self._unsorted_of[queue] = unsorted = self._learned(queue, unsorted)
        sorting = {LANES[self.buffer.sorted_on_loop(reservation)] for reservation in unsorted or ()}
        return self._lanes_of.get(queue, set()) | sorting

    def waited_for_a_runner(self, wait_s: float) -> bool:
        """If tasks of a queue with a limit wait for a runner of this process to be free, wait
        until a task of it is done (or the stop), and say so. Here, not in Redis: the finish's
        wake token could come before the runner counts as free."""
        if not self.awaiting:
            return False
        assert self.buffer.runner_freed is not None  # set for a process with limited queues
        self.buffer.runner_freed.wait(wait_s)
        return True


def _take_runners(free: dict[str, int], lanes: Collection[str], count: int) -> None:
    """Count ``count`` tasks out of the ``free`` runners of ``lanes``, threads first."""
    for lane in LANES:
        used = min(count, free[lane]) if lane in lanes else 0
        free[lane] -= used
        count -= used
