"""What a forked child must not take over from its parent (gunicorn --preload, a fork pool,
the worker's supervisor forking its processes): an object holding a lock a parent thread may
have held at the fork, or state that is the parent's, starts afresh there."""

import os
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


os.register_at_fork(after_in_child=_after_fork_in_child)
