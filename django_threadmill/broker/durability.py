"""Confirm writes per OPTIONS['durability']: WAIT or WAITAOF after the call that wrote.

Redis confirms only the writes made on the connection that asks, so the confirmation is sent in
the same pipeline as the script calls it covers (one round trip), and on a Redis Cluster once
per node those calls went to.
"""

from typing import Any

from ..conf import BackendSettings, Durability
from ..exceptions import BrokerUnavailable
from .connection import redacted


def confirm_command(settings: BackendSettings) -> tuple[str | int, ...] | None:
    """Return the command that waits for the durability mode, or None for "local"."""
    timeout_ms = settings.durability_timeout_ms
    match settings.durability:
        case Durability.REPLICATED:
            return ("WAIT", 1, timeout_ms)
        case Durability.FSYNC:
            return ("WAITAOF", 1, 0, timeout_ms)
    return None


def check_confirmed(settings: BackendSettings, reply: Any) -> None:
    """Raise ``BrokerUnavailable`` when a WAIT or WAITAOF reply falls short of the mode."""
    if isinstance(reply, Exception):
        raise reply
    reached = int(reply[0]) if settings.durability is Durability.FSYNC else int(reply)
    if reached >= 1:
        return
    what = (
        "fsynced to the primary's AOF"
        if settings.durability is Durability.FSYNC
        else "copied to a replica"
    )
    raise BrokerUnavailable(
        f"Redis at {redacted(settings.location)} applied the write, but it was not {what} "
        f"within {settings.durability_timeout_s:g}s (durability={settings.durability.value!r}): "
        "a failover now could lose it. Check that a replica is connected (INFO replication) "
        "or raise OPTIONS['durability_timeout']."
    )
