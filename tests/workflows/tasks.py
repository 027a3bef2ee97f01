"""Tasks for the workflow tests, at module level so worker processes import them."""

import os
import threading

from django_threadmill.compat import task


def _count(log: str, what: str) -> None:
    """Append ``what`` to ``log`` in one write, so tests count runs outside Redis."""
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{what}\n".encode())
    finally:
        os.close(fd)


@task
def number(n: int) -> int:
    return n


@task
def add(value: int, n: int) -> int:
    """The chain's value plus ``n``."""
    return value + n


@task
def collect(values: list[int], log: str = "") -> list[int]:
    """A group's callback: return the values it was given, counted in ``log`` when named."""
    if log:
        _count(log, "collect")
    return values


@task
def counted(n: int, log: str) -> int:
    """Return ``n``, and count the run in ``log``."""
    _count(log, f"counted {n}")
    return n


# Two tasks wait here for each other, so that they finish at the same moment.
AT_ONCE = threading.Barrier(2, timeout=30)


@task
def together(n: int) -> int:
    """Return ``n`` once another ``together`` task runs too (in another thread)."""
    AT_ONCE.wait()
    return n


@task
def boom(value: int) -> None:
    raise ValueError(f"boom after {value}")
