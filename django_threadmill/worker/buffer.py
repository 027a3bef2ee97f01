"""The bounded buffer between the prefetcher and the two lanes: worker threads, event loop."""

import queue
import threading
from collections import deque
from collections.abc import Callable
from enum import Enum
from typing import NamedTuple

from ..broker import Reservation
from .held_chars import HeldChars


class Turn(Enum):
    """What a worker thread can take besides a task."""

    CLOSED = "closed"  # the buffer closed: every taker that meets it puts it back and ends
    RETIRE = "retire"  # the pool shrinks: the one taker that meets it ends


class Runners(NamedTuple):
    """How many tasks a process can run at once, per lane."""

    threads: int  # its worker threads, or those its elastic pool may grow to
    loop: int  # its event loop's, once async tasks came (0 before)


class TaskBuffer:
    """Reserved tasks waiting for a worker thread or the event loop, at most ``capacity``.

    Built so a task costs no lock round trip and wakes nobody: worker threads take from a C
    ``SimpleQueue``, the event loop from a deque it is nudged about once per put; the prefetcher
    is woken only when a take crosses the refill mark, once per refill rather than once per
    task. ``is_async`` says which lane a task is for. It also counts tasks put in but not yet
    done, so ``--burst`` knows when nothing waits or runs.
    """

    def __init__(self, capacity: int, is_async: Callable[[Reservation], bool]) -> None:
        self.is_async = is_async
        self.on_async_work: Callable[[], None] = lambda: None  # set by the event loop lane
        self.on_first_async: Callable[[], None] = lambda: None  # read-ahead may grow then
        self.saw_async = False  # an async task came: read-ahead covers the event loop too
        self._waiting: queue.SimpleQueue[Reservation | Turn] = queue.SimpleQueue()
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
        """Return how many tasks wait in either lane (a worker thread's retire marker too)."""
        return self._waiting.qsize() + len(self._async_waiting)

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
        """Hand reserved tasks to their lanes: async ones to the event loop, others to threads;
        once closed, keep them for ``close`` to return (they are released).

        The lanes are looked up before the put lock is taken: a task path's first lookup
        imports its module, the project's code, which may never return (a module-level call
        to a service that does not answer), and the stop's ``close`` takes that lock."""
        lanes = [self.is_async(reservation) for reservation in reservations]
        with self._put_lock:
            if self._closed:
                self._put_after_close += reservations
                return
            self._put_open(reservations, lanes)

    def _put_open(self, reservations: list[Reservation], lanes: list[bool]) -> None:
        with self._outstanding_lock:  # counted before a taker can be done with them
            self._outstanding += len(reservations)
            self._outstanding_on_loop += sum(lanes)
        to_loop = False
        self._chars.add(sum(map(chars_of, reservations)))
        for reservation, on_loop in zip(reservations, lanes, strict=True):
            if on_loop:
                self._async_waiting.append(reservation)
                to_loop = True
            else:
                self._waiting.put(reservation)
        if to_loop:
            if not self.saw_async:
                self.saw_async = True
                self.on_first_async()
            self.on_async_work()

    def _taken(self) -> None:
        if not self._room.is_set() and self.waiting() <= self._full_above:
            self._room.set()

    def take(self) -> Reservation | Turn:
        """Return the next sync task, blocking; CLOSED once closed, RETIRE to end this taker."""
        item = self._waiting.get()
        if item is Turn.CLOSED:
            self._waiting.put(Turn.CLOSED)
            return item
        if item is Turn.RETIRE:
            with self._outstanding_lock:
                self._retiring -= 1
        else:
            self._chars.add(-chars_of(item))
        self._taken()
        return item

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
        unstarted: list[Reservation] = []
        while True:
            try:
                item = self._waiting.get_nowait()
            except queue.Empty:
                break
            if isinstance(item, Reservation):
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
