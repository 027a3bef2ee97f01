"""Tasks and plain callables for the security tests, at module level so workers import them."""

from pathlib import Path

from django_threadmill.compat import task


@task
def touch(marker: str) -> str:
    """A real task: create ``marker``, proving the worker runs tasks."""
    Path(marker).write_text("ran")
    return marker


def plain_function(marker: str) -> None:
    """Not a task: a worker must never call it, whatever a payload says."""
    Path(marker).write_text("ran")


class NotATask:
    """A class: calling it would run __init__; a worker must never do that."""

    def __init__(self, marker: str) -> None:
        Path(marker).write_text("ran")
