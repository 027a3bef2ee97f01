"""The only code that talks to Redis: keys, Lua scripts and the Broker that calls them."""

from .broker import Broker
from .types import (
    Acquired,
    Enqueued,
    ExpiredAttempt,
    Finish,
    Guard,
    GuardKind,
    Lease,
    NewTask,
    Outcome,
    Reaped,
    Reservation,
    Start,
)

__all__ = [
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
    "Reaped",
    "Reservation",
    "Start",
]
