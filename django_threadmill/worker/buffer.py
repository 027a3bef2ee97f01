"""The bounded buffer between the prefetcher and the two lanes: worker threads, event loop."""

import queue
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple

from ..broker import Reservation
from .held_chars import HeldChars


class Turn(Enum):
    """What a worker thread can take besides a task."""

    CLOSED = "closed"  # the buffer closed: every taker that meets it puts it back and ends
    RETIRE = "retire"  # the pool shrinks: the one taker that meets it ends


@dataclass(frozen=True, slots=True)
class Unsorted:
    """A reserved task whose lane is not known yet: its module was never imported in this
    process. The prefetcher imports none (one whose import never returned held it, and every
    task of the process with it): the runner that takes it does (``TaskBuffer.sort``), a worker
    thread or, for a task its payload says is ``async def``, the event loop."""

    reservation: Reservation
    on_loop: bool = False  # waits in (and is counted in) the event loop's lane


# A task as its lane takes it, and whether that lane is the event loop's.
type Placed = tuple[Reservation | Unsorted, bool]


class Runners(NamedTuple):
    """How many tasks a process can run at once, per lane."""

    threads: int  # its worker threads, or those its elastic pool may grow to
    loop: int  # its event loop's, once async tasks came (0 before)


class TaskBuffer:
    """Reserved tasks waiting for a worker thread or the event loop, at most ``capacity``.

    Built so a task costs no lock round trip and wakes nobody: worker threads take from a C
    ``SimpleQueue``, the event loop from a deque it is nudged about once per put; the prefetcher
    is woken only when a take crosses the refill mark, once per refill rather than once per
    task. ``is_async`` says which lane a task is for, importing its module if need be;
    ``known_lane`` (``is_async`` if not given) says it as tasks are put in, None when only an
    import can tell: such a task goes unsorted to the event loop if ``sorted_on_loop`` says so
    (its payload says ``async def``), else to the worker threads. It also counts tasks put in
    but not yet done, so ``--burst`` knows when nothing waits or runs.
    """

    def __init__(
        self,
        capacity: int,
        is_async: Callable[[Reservation], bool],
        known_lane: Callable[[Reservation], bool | None] | None = None,
        sorted_on_loop: Callable[[Reservation], bool] = lambda reservation: False,
    ) -> None:
        self.is_async = is_async
        self.known_lane = known_lane or is_async
        self.sorted_on_loop = sorted_on_loop
        self.on_async_work: Callable[[], None] = lambda: None  # set by the event loop lane
        self.on_first_async: Callable[[], None] = lambda: None  # read-ahead may grow then
        self.saw_async = False  # an async task came: read-ahead covers the event loop too
        self._waiting: queue.SimpleQueue[Reservation | Unsorted | Turn] = queue.SimpleQueue()
        self._async_waiting: deque[Reservation | Unsorted] = deque()  # append, popleft atomic
        self._chars = HeldChars()  # of the tasks waiting: put in (+) and taken (-)
        self._room = threading.Event()  # set when the prefetcher may refill
        self._outstanding = 0  # put in and not yet done: waiting or running
        self._outstanding_on_loop = 0  # of those, async tasks (the event loop's lane)
        # Set at each task done, once the prefetcher serves a queue with a concurrency limit:
        # it reserves such a queue's tasks only for runners that are free (limit_runners.py).
        self.runner_freed: threading.Event | None = None
        self._outstanding_lock = threading.Lock()
        self._retiring = 0  # RETIRE turns put and not yet taken (under _outstanding_lock)
        self._closed = False
        # Puts and the close take turns: a put after the close would land behind the CLOSED
        # turn, where the threads that pass it on would run it (past --max-tasks). Held once
        # per refill, never per take.
        self._put_lock = threading.Lock()
        self._put_after_close: list[Reservation] = []
        # Modules a runner imports to sort a task, each with the unsorted tasks of it other
        # runners took meanwhile, set aside for it to hand on (under the put lock).
        self._importing: dict[str, list[Unsorted]] = {}
        self._set_aside = 0  # how many tasks wait there
        self.resize(capacity)

    def resize(self, capacity: int) -> None:
        """Change how many tasks may wait (read-ahead follows the live pool); any thread."""
        self.capacity = capacity
        # Refill only once half the buffer is free, so a busy process acquires in batches
        # (one call per capacity/2 tasks) rather than one task per freed slot.
        self.refill_at = max(1, capacity // 2)
        self._full_above = capacity - self.refill_at  # the prefetcher waits while more wait
        if self.waiting() <= self._full_above:
            self._room.set()

    def waiting(self) -> int:
        """Return how many tasks wait in either lane or for a module's import (a worker
        thread's retire marker too)."""
        return self._waiting.qsize() + len(self._async_waiting) + self._set_aside

    def sync_waiting(self) -> int:
        """Return how many sync tasks wait: retire turns are no work, and once closed none
        waits. Counted as tasks, retire turns waiting behind busy threads made the pool grow
        with no task waiting, and the closed turn made a recycling process's busy threads look
        backlogged once its idle ones had ended."""
        if self._closed:
            return 0
        return max(0, self._waiting.qsize() - self._retiring)

    def waiting_chars(self) -> int:
        """Return the characters of payloads and earlier errors of the tasks waiting: the
        memory the read-ahead holds, which its count does not bound. One reader only (the
        prefetcher)."""
        return self._chars.total()

    def free_slots(self, stop: threading.Event) -> int:
        """Block until half the buffer is free (or ``stop`` is set, or it closes); return room."""
        while self.waiting() > self._full_above and not (stop.is_set() or self._closed):
            self._room.clear()
            if self.waiting() > self._full_above and not stop.is_set():
                self._room.wait()
        return 0 if self._closed else max(0, self.capacity - self.waiting())

    def put_many(self, reservations: list[Reservation]) -> None:
        """Hand reserved tasks to their lanes: async ones to the event loop, others to threads,
        and those whose lane only an import can tell unsorted to the lane that sorts them
        (``_placed``); once closed, keep them for ``close`` to return (they are released). No
        import runs here: a module-level call to a service that does not answer held the
        prefetcher, and every task of the process."""
        placed = [self._placed(reservation, first=True) for reservation in reservations]
        with self._put_lock:
            if self._closed:
                self._put_after_close += reservations
                return
            self._put_open(reservations, placed)

    def _put_open(self, reservations: list[Reservation], placed: list[Placed]) -> None:
        with self._outstanding_lock:  # counted before a taker can be done with them
            self._outstanding += len(reservations)
            self._outstanding_on_loop += sum(on_loop for _, on_loop in placed)
        self._chars.add(sum(map(chars_of, reservations)))
        self._lay_out(placed)

    def _placed(self, reservation: Reservation, *, first: bool) -> Placed:
        """Return ``reservation`` as its lane takes it, and whether that is the event loop's.
        One whose lane only an import can tell goes unsorted: to the loop if its payload says
        ``async def`` and it is put in ``first`` (the loop sorts it in its executor, so it waits
        for no thread), else to the threads; handed on after its import failed, a thread imports
        it again, and runs it to record why if it fails again."""
        on_loop = self.known_lane(reservation)
        if on_loop is not None:
            return reservation, on_loop
        on_loop = first and self.sorted_on_loop(reservation)
        return Unsorted(reservation, on_loop=on_loop), on_loop

    def _lay_out(self, placed: list[Placed]) -> None:
        """Put counted tasks in their lanes."""
        to_loop = False
        for item, on_loop in placed:
            if on_loop:
                self._async_waiting.append(item)
                to_loop = True
            else:
                self._waiting.put(item)
        if to_loop:
            if not self.saw_async:
                self.saw_async = True
                self.on_first_async()
            self.on_async_work()

    def _taken(self) -> None:
        if not self._room.is_set() and self.waiting() <= self._full_above:
            self._room.set()

    def take(self) -> Reservation | Unsorted | Turn:
        """Return the next sync task, blocking, or one to ``sort``; CLOSED once closed, RETIRE
        to end this taker, which says ``retired`` once it is out of the pool's count."""
        item = self._waiting.get()
        if item is Turn.CLOSED:
            self._waiting.put(Turn.CLOSED)
            return item
        if item is not Turn.RETIRE and not isinstance(item, Unsorted):
            self._chars.add(-chars_of(item))  # an unsorted task's characters count till sorted
        self._taken()
        return item

    def sort(self, unsorted: Unsorted) -> Reservation | None:
        """Find the lane of a task taken unsorted, importing its module in the calling thread (a
        worker thread, or the event loop's executor); return the task if it runs in the lane
        that took it, for that lane to run. Return None if it went on: to the other lane, aside
        while another runner imports its module (which hands it on), or to ``close`` once
        closed. However long an import takes, it holds one thread: the tasks of other modules
        run meanwhile."""
        reservation = unsorted.reservation
        module = reservation.lease.task_path.rpartition(".")[0]
        with self._put_lock:
            if self._closed:  # taken as the stop closed the buffer: imported no more
                self._hand_on([unsorted])
                return None
            aside = self._importing.get(module)
            if aside is not None:
                aside.append(unsorted)
                self._set_aside += 1
                return None
            self._importing[module] = []
        # The project's code: it may never return.
        runs_here = self.is_async(reservation) is unsorted.on_loop
        imported = self.known_lane(reservation) is not None
        with self._put_lock:
            aside = self._importing.pop(module)
            self._set_aside -= len(aside)
            if runs_here and not self._closed:
                self._chars.add(-chars_of(reservation))
                self._hand_on(aside, imported=imported)
                return reservation
            self._hand_on([unsorted, *aside], imported=imported)
        return None

    def _hand_on(self, taken: list[Unsorted], *, imported: bool = False) -> None:
        """Put tasks taken unsorted (counted in already) in their lanes, under the put lock;
        once closed, keep them for ``close`` to return, as ``put_many`` does. Once their module
        ``imported``, those whose lane is still unknown (another path of it) are placed as when
        first put in: an ``async def`` one went to the threads, to wait for a free one behind
        the sync tasks that held them all (docs/worker.md, Two lanes)."""
        reservations = [unsorted.reservation for unsorted in taken]
        counted_on_loop = sum(unsorted.on_loop for unsorted in taken)
        if self._closed:
            with self._outstanding_lock:
                self._outstanding -= len(taken)
                self._outstanding_on_loop -= counted_on_loop
            self._chars.add(-sum(map(chars_of, reservations)))
            self._put_after_close += reservations
            return
        placed = [self._placed(reservation, first=imported) for reservation in reservations]
        now_on_loop = sum(on_loop for _, on_loop in placed)
        with self._outstanding_lock:
            self._outstanding_on_loop += now_on_loop - counted_on_loop
        self._lay_out(placed)
        moved = any(
            on_loop != unsorted.on_loop
            for (_, on_loop), unsorted in zip(placed, taken, strict=True)
        )
        if moved and self.runner_freed is not None:  # a lane's runner is free for another task
            self.runner_freed.set()

    def take_async(self, most: int) -> list[Reservation | Unsorted]:
        """Return up to ``most`` waiting async tasks without blocking (the event loop), those
        whose lane is not known yet for it to ``sort``."""
        taken: list[Reservation | Unsorted] = []
        while len(taken) < most and not self._closed:
            try:
                taken.append(self._async_waiting.popleft())
            except IndexError:
                break
        if taken:  # an unsorted task's characters count till sorted
            self._chars.add(-sum(chars_of(item) for item in taken if isinstance(item, Reservation)))
            self._taken()
        return taken

    def retire_one(self) -> None:
        """Make the next worker thread that takes end (the pool shrinks by one)."""
        with self._outstanding_lock:  # counted first: sync_waiting may undercount, never over
            self._retiring += 1
        self._waiting.put(Turn.RETIRE)

    def retired(self) -> None:
        """Count off a RETIRE turn its taker took: the taker is out of the pool's live count.
        Not at the take: a look at the pool in between counted that thread as staying, one
        more than there were (docs/worker.md, The elastic pool)."""
        with self._outstanding_lock:
            self._retiring -= 1

    def retiring(self) -> int:
        """Return how many RETIRE turns were put and not yet counted off (``retired``)."""
        return self._retiring

    def done(self, *, on_loop: bool = False) -> None:
        """Mark one taken task as finished: a worker thread's, or the event loop's."""
        with self._outstanding_lock:
            self._outstanding -= 1
            self._outstanding_on_loop -= on_loop
        if self.runner_freed is not None:
            self.runner_freed.set()

    def outstanding(self) -> int:
        """Return how many tasks were put in and are not done: waiting or running."""
        return self._outstanding

    def free_runners(self, runners: Runners) -> Runners:
        """Return how many of ``runners`` no task put in and not done waits for or runs in,
        per lane: a task waits for a runner of its own lane (docs/schedules.md, Per-queue
        limits)."""
        with self._outstanding_lock:
            total, on_loop = self._outstanding, self._outstanding_on_loop
        return Runners(
            threads=max(0, runners.threads - (total - on_loop)),
            loop=max(0, runners.loop - on_loop),
        )

    def is_idle(self) -> bool:
        """Tell whether nothing waits and nothing runs."""
        return self._outstanding == 0

    def wake(self) -> None:
        """Wake a prefetcher waiting for room, so it can see its stop event."""
        self._room.set()

    def kept_after_close(self) -> int:
        """Count the tasks the closed buffer keeps that no ``close`` returned yet: put since it
        closed, or kept by a ``close(keep=True)``."""
        with self._put_lock:
            return len(self._put_after_close)

    def close(self, *, keep: bool = False) -> list[Reservation]:
        """Stop handing out tasks; return the ones never started, for release (again later:
        those put in since). With ``keep``, return none: the next ``close`` returns them with
        those put in since (a recycle closes the buffer in the thread whose task reached the
        limit, and leaves their release, a Redis call, to the process's stop)."""
        with self._put_lock:
            self._closed = True
            late, self._put_after_close = self._put_after_close, []  # never counted in
            waiting: list[Reservation | Unsorted] = []
            for aside in self._importing.values():
                waiting += aside
                aside.clear()
            self._set_aside = 0
        dropped_turns = 0
        while True:
            try:
                item = self._waiting.get_nowait()
            except queue.Empty:
                break
            if not isinstance(item, Turn):
                waiting.append(item)
            elif item is Turn.RETIRE:  # no thread takes it now
                dropped_turns += 1
        on_loop = sum(isinstance(item, Unsorted) and item.on_loop for item in waiting)
        while self._async_waiting:
            waiting.append(self._async_waiting.popleft())
            on_loop += 1
        unstarted = list(map(reservation_of, waiting))
        with self._outstanding_lock:
            self._outstanding -= len(unstarted)
            self._outstanding_on_loop -= on_loop
            self._retiring -= dropped_turns
        self._chars.add(-sum(map(chars_of, unstarted)))
        self._waiting.put(Turn.CLOSED)
        self._room.set()
        if not keep:
            return unstarted + late
        with self._put_lock:
            self._put_after_close[:0] = unstarted + late
        return []


def reservation_of(item: Reservation | Unsorted) -> Reservation:
    """Return the task ``item`` is, sorted or not."""
    return item.reservation if isinstance(item, Unsorted) else item


def chars_of(reservation: Reservation) -> int:
    """Return the characters ``reservation`` holds: its payload and its earlier errors."""
    return len(reservation.payload) + sum(map(len, reservation.errors))
