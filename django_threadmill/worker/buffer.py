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
    task of the process with it): the worker thread that takes it does (``TaskBuffer.sort``)."""

    reservation: Reservation


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
    import can tell: such a task goes to the worker threads unsorted. It also counts tasks put
    in but not yet done, so ``--burst`` knows when nothing waits or runs.
    """

    def __init__(
        self,
        capacity: int,
        is_async: Callable[[Reservation], bool],
        known_lane: Callable[[Reservation], bool | None] | None = None,
    ) -> None:
        self.is_async = is_async
        self.known_lane = known_lane or is_async
        self.on_async_work: Callable[[], None] = lambda: None  # set by the event loop lane
        self.on_first_async: Callable[[], None] = lambda: None  # read-ahead may grow then
        self.saw_async = False  # an async task came: read-ahead covers the event loop too
        self._waiting: queue.SimpleQueue[Reservation | Unsorted | Turn] = queue.SimpleQueue()
        self._async_waiting: deque[Reservation] = deque()  # append and popleft are atomic
        self._chars = HeldChars()  # of the tasks waiting: put in (+) and taken (-)
        self._room = threading.Event()  # set when the prefetcher may refill
        self._outstanding = 0  # put in and not yet done: waiting or running
        self._outstanding_on_loop = 0  # of those, async tasks (the event loop's lane)
        # Set at each task done, once the prefetcher serves a queue with a concurrency limit:
        # it reserves such a queue's tasks only for runners that are free (prefetcher.py).
        self.runner_freed: threading.Event | None = None
        self._outstanding_lock = threading.Lock()
        self._retiring = 0  # RETIRE turns put and not yet taken (under _outstanding_lock)
        self._closed = False
        # Puts and the close take turns: a put after the close would land behind the CLOSED
        # turn, where the threads that pass it on would run it (past --max-tasks). Held once
        # per refill, never per take.
        self._put_lock = threading.Lock()
        self._put_after_close: list[Reservation] = []
        # Modules a worker thread imports to sort a task, each with the unsorted tasks of it
        # other threads took meanwhile, set aside for it to hand on (under the put lock).
        self._importing: dict[str, list[Reservation]] = {}
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
        as do those whose lane only an import can tell (unsorted); once closed, keep them for
        ``close`` to return (they are released). No import runs here: a module-level call to a
        service that does not answer held the prefetcher, and every task of the process."""
        lanes = [self.known_lane(reservation) for reservation in reservations]
        with self._put_lock:
            if self._closed:
                self._put_after_close += reservations
                return
            self._put_open(reservations, lanes)

    def _put_open(self, reservations: list[Reservation], lanes: list[bool | None]) -> None:
        with self._outstanding_lock:  # counted before a taker can be done with them
            self._outstanding += len(reservations)
            self._outstanding_on_loop += lanes.count(True)
        self._chars.add(sum(map(chars_of, reservations)))
        self._lay_out(reservations, lanes)

    def _lay_out(self, reservations: list[Reservation], lanes: list[bool | None]) -> None:
        """Put counted tasks in their lanes (None: with the threads, unsorted)."""
        to_loop = False
        for reservation, on_loop in zip(reservations, lanes, strict=True):
            if on_loop:
                self._async_waiting.append(reservation)
                to_loop = True
            else:
                self._waiting.put(reservation if on_loop is False else Unsorted(reservation))
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
        to end this taker."""
        item = self._waiting.get()
        if item is Turn.CLOSED:
            self._waiting.put(Turn.CLOSED)
            return item
        if item is Turn.RETIRE:
            with self._outstanding_lock:
                self._retiring -= 1
        elif not isinstance(item, Unsorted):  # an unsorted task's characters count till sorted
            self._chars.add(-chars_of(item))
        self._taken()
        return item

    def sort(self, unsorted: Unsorted) -> Reservation | None:
        """Find the lane of a task taken unsorted, importing its module in the calling worker
        thread; return the task if it runs on threads, for that thread to run. Return None if
        it went on: to the event loop, aside while another thread imports its module (which
        hands it on), or to ``close`` once closed. However long an import takes, it holds one
        thread: the tasks of other modules run meanwhile."""
        reservation = unsorted.reservation
        module = reservation.lease.task_path.rpartition(".")[0]
        with self._put_lock:
            if self._closed:  # taken as the stop closed the buffer: imported no more
                self._hand_on([reservation])
                return None
            aside = self._importing.get(module)
            if aside is not None:
                aside.append(reservation)
                self._set_aside += 1
                return None
            self._importing[module] = []
        runs_here = not self.is_async(reservation)  # the project's code: it may never return
        with self._put_lock:
            aside = self._importing.pop(module)
            self._set_aside -= len(aside)
            if runs_here and not self._closed:
                self._chars.add(-chars_of(reservation))
                self._hand_on(aside)
                return reservation
            self._hand_on([reservation, *aside])
        return None

    def _hand_on(self, reservations: list[Reservation]) -> None:
        """Put tasks taken unsorted (counted in already) in their lanes, under the put lock;
        once closed, keep them for ``close`` to return, as ``put_many`` does."""
        if self._closed:
            with self._outstanding_lock:
                self._outstanding -= len(reservations)
            self._chars.add(-sum(map(chars_of, reservations)))
            self._put_after_close += reservations
            return
        lanes = [self.known_lane(reservation) for reservation in reservations]
        with self._outstanding_lock:
            self._outstanding_on_loop += lanes.count(True)
        self._lay_out(reservations, lanes)
        if True in lanes and self.runner_freed is not None:  # counted on threads till now
            self.runner_freed.set()

    def take_async(self, most: int) -> list[Reservation]:
        """Return up to ``most`` waiting async tasks without blocking (the event loop)."""
        taken: list[Reservation] = []
        while len(taken) < most and not self._closed:
            try:
                taken.append(self._async_waiting.popleft())
            except IndexError:
                break
        if taken:
            self._chars.add(-sum(map(chars_of, taken)))
            self._taken()
        return taken

    def retire_one(self) -> None:
        """Make the next worker thread that takes end (the pool shrinks by one)."""
        with self._outstanding_lock:  # counted first: sync_waiting may undercount, never over
            self._retiring += 1
        self._waiting.put(Turn.RETIRE)

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
        """Count the tasks put since the buffer closed that no ``close`` returned yet."""
        with self._put_lock:
            return len(self._put_after_close)

    def close(self) -> list[Reservation]:
        """Stop handing out tasks; return the ones never started, for release (again later:
        those put in since)."""
        with self._put_lock:
            self._closed = True
            late, self._put_after_close = self._put_after_close, []  # never counted in
            unstarted = [reservation for aside in self._importing.values() for reservation in aside]
            for aside in self._importing.values():
                aside.clear()
            self._set_aside = 0
        while True:
            try:
                item = self._waiting.get_nowait()
            except queue.Empty:
                break
            if isinstance(item, Unsorted):
                unstarted.append(item.reservation)
            elif isinstance(item, Reservation):
                unstarted.append(item)
        sync_count = len(unstarted)
        while self._async_waiting:
            unstarted.append(self._async_waiting.popleft())
        with self._outstanding_lock:
            self._outstanding -= len(unstarted)
            self._outstanding_on_loop -= len(unstarted) - sync_count
        self._chars.add(-sum(map(chars_of, unstarted)))
        self._waiting.put(Turn.CLOSED)
        self._room.set()
        return unstarted + late


def chars_of(reservation: Reservation) -> int:
    """Return the characters ``reservation`` holds: its payload and its earlier errors."""
    return len(reservation.payload) + sum(map(len, reservation.errors))
