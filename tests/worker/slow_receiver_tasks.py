"""Tasks whose ``task_finished`` receiver works long, and one that notes that it ran.

The receiver is connected by the tasks that need it, as they run (in the worker process the test
starts): connected at import, it stayed connected in the test's process, where every later test
met it.
"""

import time
from pathlib import Path
from typing import Any

from django_threadmill.compat import TaskResult, task, task_finished


def notify_for_long(sender: type, task_result: TaskResult, **kwargs: Any) -> None:
    """Stand for a receiver that tells a slow service about the task (a webhook, an email):
    write the status it heard to the task's marker, then work a minute.

    The marker is written whole under another name and renamed, so the test that waits for it
    to exist never reads it half written."""
    marker = Path(task_result.args[0])
    written = marker.with_suffix(".writing")
    written.write_text(task_result.status)
    written.rename(marker)
    time.sleep(60)  # the receiver's own work, not test synchronisation


def _notified_for_long(marker: str) -> None:
    """Connect ``notify_for_long`` for the task that runs now, whose marker is ``marker``."""
    task_finished.connect(
        lambda sender, task_result, **kwargs: (
            notify_for_long(sender, task_result) if task_result.args == [marker] else None
        ),
        weak=False,
        dispatch_uid=f"notify-for-long-{marker}",
    )


@task
def returns(marker: str) -> str:
    """Return at once; the receiver then works a while."""
    _notified_for_long(marker)
    return marker


@task
def raises(marker: str) -> None:
    """Raise at once; the receiver then works a while."""
    _notified_for_long(marker)
    raise ValueError(marker)


@task
async def areturns(marker: str) -> str:
    """The ``async def`` twin of ``returns``."""
    _notified_for_long(marker)
    return marker


@task
async def amarks(marker: str) -> None:
    """Write ``marker``: the task ran."""
    Path(marker).write_text("ran")
