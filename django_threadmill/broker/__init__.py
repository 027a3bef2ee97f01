"""The only code that talks to Redis: keys, Lua scripts and the Broker that calls them."""

from .broker import Broker
from .lifecycle import DEFAULT_PURGE_BATCH_SIZE, MAX_BATCH_SIZE, checked_batch_size
from .transitions import reap_mark
from .types import (
    Ack,
    Acquired,
    Enqueued,
    ExpiredAttempt,
    Finish,
    Guard,
    GuardKind,
    Lease,
    NewTask,
    Outcome,
    ProgressReport,
    Reaped,
    Rejected,
    Reservation,
    Start,
)

__all__ = [
    "DEFAULT_PURGE_BATCH_SIZE",
    "MAX_BATCH_SIZE",
    "Ack",
    "Acquired",
    "Broker",
    "Enqueued",
    "ExpiredAttempt",
    "Finish",
    "Guard",
    "GuardKind",
    "Lease",
    "NewTask",
    "Outcome",
    "ProgressReport",
    "Reaped",
    "Rejected",
    "Reservation",
    "Start",
    "checked_batch_size",
    "reap_mark",
]
