"""Who did what in the admin: one log line for each action that changes data.

Pause and resume are logged by the broker (broker/pausing.py), from the admin and the command
alike; requeue, cancel and purge are logged here, in the same style, so each names the user.
"""

import logging

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

from ..broker.raw_replies import controls_escaped

logger = logging.getLogger(__name__)


def admin_user(user: AbstractBaseUser | AnonymousUser) -> str:
    """Name ``user`` as the admin's records do, e.g. "ada in the admin": a pause's author, a
    cancel's error and the log lines."""
    return f"{user.get_username() or 'staff'} in the admin"


def record(
    user: AbstractBaseUser | AnonymousUser, action: str, backend: str, **details: str | int
) -> None:
    """Log at INFO that ``user`` applied ``action`` in ``backend``; ``details`` say what it
    applied to and what it did, as key=value in their order.

    Control characters are escaped: a task id posted by hand, or a username (a custom user
    model, a remote-user login), with a line break would split the line or forge another one.
    """
    fields = "".join(f" {name}=%s" for name in details)
    logger.info(
        "Admin %s backend=%s" + fields + " by=%s",
        action,
        controls_escaped(backend),
        *(controls_escaped(str(value)) for value in details.values()),
        controls_escaped(admin_user(user)),
    )
