"""The only code that talks to Redis: keys, Lua scripts and the Broker that calls them."""

from .broker import Broker
from .types import (
    Acquired,
    ExpiredAttempt,
    Finish,
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
    "ExpiredAttempt",
    "Finish",
    "Lease",
    "NewTask",
    "Outcome",
    "Reaped",
    "Reservation",
    "Start",
]
