"""Task ids: a random UUID and the queue it was enqueued to, ``<32 hex digits>@<queue>``;
worker ids, ``<host>:<pid>:<4 hex digits>``; and the mark of a workflow step on its record,
``<workflow id>:<step>``.

The queue in the id lets a lookup go straight to the right keys (and Redis Cluster slot).
"""

import os
import re
import socket
from secrets import token_hex

from ..wording import a_type, shown
from .text import digits_int

TASK_ID_SEPARATOR = "@"  # outside the queue-name alphabet (conf/settings.py)
# The most characters of an id an error shows: a task id has at most 97 (32 hex digits, "@"
# and a queue name of 64), so every id we made shows whole.
SHOWN_ID_CHARS = 100
WORKER_ID_PATTERN = re.compile(r"^(?P<host>[^:]+):(?P<pid>\d+):[^:]*$")

# A random UUID's version (4) and variant (RFC 4122) bits, as uuid.uuid4() sets them.
_UUID4_BITS = (0x4000 << 64) | (0x8000 << 48)
_UUID4_MASK = ~((0xF000 << 64) | (0xC000 << 48)) & ((1 << 128) - 1)


def new_task_hex() -> str:
    """Return a random UUID (version 4) as 32 hex digits, like ``uuid4().hex``.

    Built from the integer: ``uuid.UUID``'s constructor was a tenth of an enqueue.
    """
    return f"{int.from_bytes(os.urandom(16)) & _UUID4_MASK | _UUID4_BITS:032x}"


def make_task_id(uuid_hex: str, queue_name: str) -> str:
    """Return a task id that carries its queue, so a lookup goes straight to the right slot."""
    return f"{uuid_hex}{TASK_ID_SEPARATOR}{queue_name}"


def queue_of(task_id: str) -> str | None:
    """Return the queue a task id names, or None if the id is not one of ours."""
    _, separator, queue_name = task_id.rpartition(TASK_ID_SEPARATOR)
    return queue_name if separator and queue_name else None


def looked_up_id(value: object, kind: str, source: str) -> str | None:
    """Return ``value`` as an id to look up, or None when it names nothing stored; raise
    ``TypeError`` naming the ``kind`` of id ("task id") and its ``source`` if it is no str.

    Every id is ASCII (hex digits, "@" and a queue's name), so any other str names nothing,
    and Redis, which could not be sent a lone surrogate, is not asked.
    """
    if not isinstance(value, str):
        raise TypeError(f"A {kind} is a str ({source}), not {a_type(value)}: {shown_id(value)}.")
    return value if value.isascii() else None


def shown_id(value: object) -> str:
    """Return the repr of ``value``, an id given to a lookup, as an error shows it: its start
    and length past ``SHOWN_ID_CHARS``. One of 10,000 characters, which names nothing, was
    echoed whole in the message and in every log line that carried it."""
    if not isinstance(value, str):
        return shown(value)  # a list of a million ids is cut short too
    if len(value) <= SHOWN_ID_CHARS:
        return repr(value)
    return f"{value[:SHOWN_ID_CHARS]!r}... ({len(value):,} characters)"


def named_short(text: str) -> str:
    """Return ``text``, an id or a name given in error, as a sentence names it: whole, as typed,
    up to ``SHOWN_ID_CHARS`` (every id and name we make fits), past that as ``shown_id`` shows
    it. One of 10,000 characters, given to a command or posted to the admin, filled its
    message."""
    return text if len(text) <= SHOWN_ID_CHARS else shown_id(text)


def new_worker_tag() -> str:
    """Return the random tag that ends a worker id: a pid the system reuses gets a new id."""
    return token_hex(2)


def make_worker_id(tag: str | None = None, pid: int | None = None) -> str:
    """Return an id for a worker process: its host, its pid (this process's unless given), and
    ``tag`` (a new one unless given). A supervisor picks a process's tag before the fork, so it
    knows the id the process renews under and can sign off one that died."""
    pid = os.getpid() if pid is None else pid
    return f"{socket.gethostname()}:{pid}:{new_worker_tag() if tag is None else tag}"


def worker_host_and_pid(worker_id: str) -> tuple[str, str]:
    """Return (host, pid) read from a worker id, or (worker id, "") if it does not say."""
    match = WORKER_ID_PATTERN.match(worker_id)
    if not match:
        return worker_id, ""
    return match["host"], match["pid"]


def step_marker(workflow_id: str, index: int) -> str:
    """The ``workflow`` field of a step's record: which workflow, which step."""
    return f"{workflow_id}:{index}"


def read_step_marker(marker: str | None) -> tuple[str, int] | None:
    """Return the workflow id and step index a record's ``workflow`` field names, or None.

    The index must be ASCII digits: ``int()`` refuses "²", which ``isdigit`` takes, and one
    such field written by hand killed the worker thread and every reap pass that read it.
    """
    workflow_id, _, index = (marker or "").partition(":")
    step = digits_int(index)
    return (workflow_id, step) if workflow_id and step is not None else None
