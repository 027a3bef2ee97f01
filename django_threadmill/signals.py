"""Send django.tasks' signals so that a failing receiver can never kill the sender's thread."""

import logging
from typing import Any

from .compat import TaskResult

logger = logging.getLogger(__name__)


def send_guarded(signal: Any, sender: type, result: TaskResult) -> None:
    """Send a django.tasks signal; a failing receiver is logged, never raised."""
    for receiver, response in signal.send_robust(sender, task_result=result):
        if isinstance(response, BaseException):
            logger.error(
                "Signal receiver failed receiver=%r task_id=%s",
                receiver,
                result.id,
                exc_info=response,
            )
