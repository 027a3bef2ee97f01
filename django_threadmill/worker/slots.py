"""The supervisor's process slots: the worker process in each, forked with a control socket, and
a recycled one finishing its running tasks beside it."""

import logging
import os
import signal
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from multiprocessing.context import ForkContext
from multiprocessing.process import BaseProcess

from ..aliases import threadmill_backend
from .exit_codes import exit_now
from .interruptible import STOP_SIGNALS
from .options import WorkerOptions
from .process import WorkerProcess

logger = logging.getLogger(__name__)


def run_worker_process(
    options: WorkerOptions, control_fd: int, supervisor_fds: tuple[int, ...] = ()
) -> None:
    """Entry point of a forked worker process.

    It starts with SIGTERM and SIGINT blocked (``_stop_signals_blocked``): WorkerProcess.run
    unblocks them once its own handlers are set.
    """
    # Close the supervisor's ends of the control sockets that fork handed down: otherwise this
    # process holds its own socket open, never reads EOF when the supervisor dies, and lives on
    # as an orphan.
    for fd in supervisor_fds:
        os.close(fd)
    code = WorkerProcess(options, threadmill_backend(options.backend_alias)).run(control_fd)
    exit_now(code)  # threads that outlived the grace period must not hold the exit


@contextmanager
def _stop_signals_blocked() -> Iterator[None]:
    """Hold SIGTERM and SIGINT back while a worker process is forked.

    The child starts with them blocked and unblocks them once its own handlers are set
    (WorkerProcess.run), so one sent to it in between waits for them. Until then it has the
    supervisor's handler, handed down by the fork, which stops nothing there: such a SIGTERM
    was lost and the process ran on. The supervisor gets its own once the fork is done.
    """
    held = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


@dataclass(frozen=True, slots=True)
class Retiring:
    """A recycled process finishing its running tasks beside its slot's replacement."""

    process: BaseProcess
    control_fd: int


@dataclass(slots=True)
class Slot:
    """One of the N process slots: the process in it, the one recycling beside it, and the
    supervisor's restart bookkeeping."""

    index: int
    process: BaseProcess | None = None
    control_fd: int | None = None  # the supervisor's end of the process's control socket
    listening: bool = False  # the process may still say RECYCLING on its control socket
    recycling: bool = False  # it said so while ``retiring`` ran: it is replaced once that ends
    retiring: Retiring | None = None  # at most one per slot: one extra process, no more
    retired_at: float = 0.0  # when the last retiring process ended (monotonic)
    started_at: float = 0.0
    crashes: int = 0
    restart_at: float | None = None
    done: bool = False

    @property
    def pid(self) -> int | None:
        """The pid of the process in the slot, if any."""
        return None if self.process is None else self.process.pid

    def start(self, context: ForkContext, options: WorkerOptions, held: tuple[int, ...]) -> None:
        """Fork a worker process into the slot; ``held``: every other control socket's
        supervisor end, which the process closes. OSError if the system refuses the fork."""
        # A socket, not a pipe: the supervisor says STOP on it, the process says RECYCLING.
        ours, theirs = (end.detach() for end in socket.socketpair())
        process = context.Process(
            target=run_worker_process,
            args=(options, theirs, (ours, *held)),
            name=f"threadmill-process-{self.index}",
        )
        try:
            with _stop_signals_blocked():
                process.start()
        except BaseException:  # a fork refused (EAGAIN, ENOMEM): the supervisor tries again
            os.close(ours)
            raise
        finally:
            os.close(theirs)
        self.process, self.control_fd = process, ours
        self.listening, self.recycling = True, False
        self.started_at, self.restart_at = time.monotonic(), None

    def hear(self) -> bytes:
        """Read what the process said (RECYCLING), once its socket is ready; b"" if it exited.
        Either is the last it says: the socket is not read again."""
        self.listening = False
        try:
            return os.read(self.control_fd, 64)  # type: ignore[arg-type]
        except OSError:
            return b""

    def tell(self, message: bytes) -> None:
        """Send ``message`` to every live process of the slot."""
        for control_fd in self.control_fds():
            with suppress(OSError):  # already gone: the supervisor collects it next
                os.write(control_fd, message)

    def retire(self) -> None:
        """Move the recycling process aside, to finish its tasks, leaving the slot empty."""
        assert self.process is not None
        assert self.control_fd is not None
        self.retiring = Retiring(process=self.process, control_fd=self.control_fd)
        self.process = self.control_fd = None

    def collect(self) -> int | None:
        """Reap the slot's exited process, leaving the slot empty; return its exit code."""
        assert self.process is not None
        self.process.join()
        os.close(self.control_fd)  # type: ignore[arg-type]
        code = self.process.exitcode
        self.process, self.control_fd, self.listening = None, None, False
        return code

    def collect_retired(self) -> tuple[BaseProcess, int | None]:
        """Reap the slot's exited recycled process; return it and its exit code."""
        retiring = self.retiring
        assert retiring is not None
        retiring.process.join()
        os.close(retiring.control_fd)
        self.retiring, self.retired_at = None, time.monotonic()
        return retiring.process, retiring.process.exitcode

    def ended(self) -> bool:
        """Whether the slot is done and no recycled process of it still runs."""
        return self.done and self.retiring is None

    def control_fds(self) -> list[int]:
        """The supervisor's ends of the control sockets of the slot's processes."""
        retiring = [] if self.retiring is None else [self.retiring.control_fd]
        return retiring if self.control_fd is None else [self.control_fd, *retiring]

    def processes(self) -> list[BaseProcess]:
        """The slot's live processes: the one in it, and the one recycling beside it."""
        retiring = [] if self.retiring is None else [self.retiring.process]
        return retiring if self.process is None else [self.process, *retiring]
