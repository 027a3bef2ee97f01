"""What a command says when Redis failed a change it asked for (a pause, a resume, a forget).

The broker's error says what happened and whether the call may have been applied; the command
that asked knows what the change was, so it adds how to see whether it was made.
"""

from django.core.management.base import CommandError

from ..exceptions import BrokerUnavailable, MaybeApplied


def failed_change(error: BrokerUnavailable, see: str) -> CommandError:
    """Return the CommandError for a change that failed with ``error``; when it may have been
    applied (``MaybeApplied``), it ends with ``see``: how to see whether it was, e.g. "run
    'manage.py threadmill_queue pause emails' again once Redis answers: ..."."""
    if isinstance(error, MaybeApplied):
        return CommandError(f"{error} To see whether it was applied, {see}")
    return CommandError(str(error))
