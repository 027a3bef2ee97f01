"""What a forked child must not take over from its parent (gunicorn --preload, a fork pool,
the worker's supervisor forking its processes): an object holding a lock a parent thread may
have held at the fork, or state that is the parent's, starts afresh there."""

import os
import threading
from types import TracebackType
from typing import Protocol
from weakref import WeakSet


class Renewable(Protocol):
    def after_fork(self) -> None:
        """Start afresh in a forked child."""


_renewed: WeakSet[Renewable] = WeakSet()


def renew_after_fork(instance: Renewable) -> None:
    """Have ``instance.after_fork()`` called in each child this process forks while it lives."""
    _renewed.add(instance)


def _after_fork_in_child() -> None:
    for instance in list(_renewed):
        instance.after_fork()


class ForkSafeLock:
    """A lock taken afresh in each child this process forks: a thread of the parent that held
    it at the fork does not come along, and the child would wait for it forever."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        renew_after_fork(self)

    def after_fork(self) -> None:
        self._lock = threading.Lock()

    def __enter__(self) -> bool:
        return self._lock.__enter__()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._lock.__exit__(kind, error, traceback)


os.register_at_fork(after_in_child=_after_fork_in_child)
