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
from ..codec.ids import make_worker_id, new_worker_tag
from .control import ASKED_ALONE, COUNTED, ENDING
from .exit_codes import ExitCode, exit_now
from .interruptible import STOP_SIGNALS
from .options import WorkerOptions
from .process import WorkerProcess

logger = logging.getLogger(__name__)

# The exit codes that tell the supervisor what to do, or how the worker's own stop ended
# (FORCED: tasks still running after the grace period), rather than that the process died.
SAID_CODES = frozenset(
    {ExitCode.OK, ExitCode.FORCED, ExitCode.RECYCLE, ExitCode.REFUSED, ExitCode.DROPPED}
)


def run_worker_process(
    options: WorkerOptions,
    control_fd: int,
    supervisor_fds: tuple[int, ...] = (),
    worker_tag: str | None = None,
) -> None:
    """Entry point of a forked worker process; ``worker_tag`` ends its worker id.

    It starts with the stop signals blocked (``_stop_signals_blocked``): WorkerProcess.run
    unblocks them once its own handlers are set.
    """
    # Close the supervisor's ends of the control sockets that fork handed down: otherwise this
    # process holds its own socket open, never reads EOF when the supervisor dies, and lives on
    # as an orphan.
    for fd in supervisor_fds:
        os.close(fd)
    # The supervisor's SIGCHLD handler (Supervisor.run) is not this process's: the default.
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    # A log line that cannot be written (a task closed sys.stderr) is dropped, as Python
    # advises in production, instead of raising into whichever thread logged it.
    logging.raiseExceptions = False
    worker = WorkerProcess(options, threadmill_backend(options.backend_alias), worker_tag)
    try:
        code = worker.run(control_fd)
    except BaseException:  # out of its stop too: a log handler a task added raised there
        # Multiprocessing would print it, then wait for the threads the stop never stopped:
        # the process hung, its lease keeper renewing what it held, for good.
        code = ExitCode.CRASHED  # a failure of its own, as a role thread's: not 1, an overrun
        with suppress(Exception):
            logger.critical(
                "Worker process failed, exiting worker_id=%s exit_code=%d",
                worker.worker_id,
                code,
                exc_info=True,
            )
    with suppress(OSError):  # the supervisor is gone: nobody reads the code but the kernel
        os.write(control_fd, ENDING + bytes([code]))
    exit_now(code)  # threads that outlived the grace period must not hold the exit


def _unread(control_fd: int) -> bytes:
    """Return what an ended process said on its control socket that was not read yet. It
    never blocks: a child a task forked may hold the socket's other end open still."""
    os.set_blocking(control_fd, False)
    try:
        return os.read(control_fd, 64)
    except OSError:  # nothing to read (BlockingIOError)
        return b""


def as_said(code: int | None, said: bytes) -> int | None:
    """Return the exit code ``code`` as the supervisor reads it: a code of the worker's own
    (``SAID_CODES``) counts only if the process said it ends with it (``ENDING``); one it
    did not say is None, a death: a task's ``os._exit(0)`` ended the process, not the worker."""
    if code in SAID_CODES and ENDING + bytes([code]) not in said:
        return None
    return code


@contextmanager
def _stop_signals_blocked() -> Iterator[None]:
    """Hold the stop signals (SIGTERM, SIGINT, SIGHUP) back while a worker process is forked.

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
    worker_id: str
    control_fd: int
    said: bytes  # what it said on its control socket so far


@dataclass(slots=True)
class Slot:
    """One of the N process slots: the process in it, the one recycling beside it, and the
    supervisor's restart bookkeeping."""

    index: int
    process: BaseProcess | None = None
    # The id the slot's last process renews under: the supervisor signs off one that died.
    worker_id: str = ""
    control_fd: int | None = None  # the supervisor's end of the process's control socket
    listening: bool = False  # the process may still say RECYCLING on its control socket
    recycling: bool = False  # it said so while ``retiring`` ran: it is replaced once that ends
    retiring: Retiring | None = None  # at most one per slot: one extra process, no more
    retired_at: float = 0.0  # when the last retiring process ended (monotonic)
    started_at: float = 0.0
    crashes: int = 0
    restart_at: float | None = None
    done: bool = False
    said: bytes = b""  # what the slot's process (its last, once collected) said so far

    @property
    def pid(self) -> int | None:
        """The pid of the process in the slot, if any."""
        return None if self.process is None else self.process.pid

    def start(self, context: ForkContext, options: WorkerOptions, held: tuple[int, ...]) -> None:
        """Fork a worker process into the slot; ``held``: every other control socket's
        supervisor end, which the process closes. OSError if the system refuses the fork."""
        # A socket, not a pipe: the supervisor says STOP on it, the process says RECYCLING.
        ours, theirs = (end.detach() for end in socket.socketpair())
        tag = new_worker_tag()
        process = context.Process(
            target=run_worker_process,
            args=(options, theirs, (ours, *held), tag),
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
        self.worker_id = make_worker_id(tag, process.pid)
        self.listening, self.recycling, self.said = True, False, b""
        self.started_at, self.restart_at = time.monotonic(), None

    def hear(self) -> bytes:
        """Read what the process said (COUNTED, ASKED_ALONE, RECYCLING, or ENDING as it
        exits), once its socket is ready; b"" if it exited. Unless this read held COUNTED or
        ASKED_ALONE only (a RECYCLING may follow), the socket is not read again until the
        process is collected (``collect``), which reads what came after: an ENDING behind a
        RECYCLING."""
        self.listening = False
        try:
            heard = os.read(self.control_fd, 64)  # type: ignore[arg-type]
        except OSError:
            return b""
        self.said += heard
        # A RECYCLING may follow either
        self.listening = bool(heard) and not heard.strip(COUNTED + ASKED_ALONE)
        return heard

    def tell(self, message: bytes) -> None:
        """Send ``message`` to every live process of the slot."""
        for control_fd in self.control_fds():
            with suppress(OSError):  # already gone: the supervisor collects it next
                os.write(control_fd, message)

    def retire(self) -> None:
        """Move the recycling process aside, to finish its tasks, leaving the slot empty."""
        assert self.process is not None
        assert self.control_fd is not None
        self.retiring = Retiring(
            process=self.process,
            worker_id=self.worker_id,
            control_fd=self.control_fd,
            said=self.said,
        )
        self.process = self.control_fd = None

    def collect(self) -> int | None:
        """Reap the slot's exited process, leaving the slot empty; return its exit code as
        the supervisor reads it (``as_said``)."""
        assert self.process is not None
        assert self.control_fd is not None
        self.process.join()
        self.said += _unread(self.control_fd)
        os.close(self.control_fd)
        code = as_said(self.process.exitcode, self.said)
        self.process, self.control_fd, self.listening = None, None, False
        return code

    def collect_retired(self) -> tuple[Retiring, int | None]:
        """Reap the slot's exited recycled process; return it and its exit code as the
        supervisor reads it (``as_said``)."""
        retiring = self.retiring
        assert retiring is not None
        retiring.process.join()
        said = retiring.said + _unread(retiring.control_fd)
        os.close(retiring.control_fd)
        self.retiring, self.retired_at = None, time.monotonic()
        return retiring, as_said(retiring.process.exitcode, said)

    @property
    def asked_alone(self) -> bool:
        """Whether the slot's last process said a SIGTERM sent to it alone asked it to stop
        (``ASKED_ALONE``): a stop the supervisor did not ask for, nor --burst's end."""
        return ASKED_ALONE in self.said

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
