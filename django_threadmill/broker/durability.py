"""Confirm writes per OPTIONS['durability']: WAIT or WAITAOF after the call that wrote.

Redis confirms only the writes made on the connection that asks, so the confirmation is sent in
the same pipeline as the script calls it covers (one round trip), and on a Redis Cluster once
per node those calls went to.
"""

from typing import Any

import redis

from ..conf.settings import BackendSettings
from ..conf.topology import Durability, masked_location
from ..exceptions import ConfirmationRefused, MaybeApplied
from .connection import unknown_command

# Per mode: the command that confirms a write, and the modes that go without it, the way out
# of a confirmation the server refuses for good, short of fixing the server.
CONFIRMATION = {
    Durability.REPLICATED: ("WAIT", "'local'"),
    Durability.FSYNC: ("WAITAOF", "'replicated' or 'local'"),
}
# Per mode, what a write falls short of when its confirmation times out, and what to check.
_NOT_REACHED = {
    Durability.REPLICATED: (
        "copied to a replica",
        "that a replica is connected (INFO replication)",
    ),
    # appendfsync no leaves the AOF to the kernel: WAITAOF never counts it, however long it waits.
    Durability.FSYNC: (
        "fsynced to the primary's AOF",
        "that its appendfsync is everysec or always ('no' never confirms one) and that its disk "
        "keeps up",
    ),
}


def confirm_command(settings: BackendSettings) -> tuple[str | int, ...] | None:
    """Return the command that waits for the durability mode, or None for "local"."""
    timeout_ms = settings.durability_timeout_ms
    match settings.durability:
        case Durability.REPLICATED:
            return ("WAIT", 1, timeout_ms)
        case Durability.FSYNC:
            return ("WAITAOF", 1, 0, timeout_ms)
    return None


def probe_command(settings: BackendSettings) -> tuple[str | int, ...] | None:
    """Return the mode's confirmation asking for nothing, which Redis answers at once (``WAIT
    0 0``, ``WAITAOF 0 0 0``), or None for "local": the checks send it to learn whether Redis
    refuses it."""
    command = confirm_command(settings)
    return None if command is None else (command[0], *[0] * (len(command) - 1))


def confirms_reservations(settings: BackendSettings) -> bool:
    """Tell whether acquire waits for a replica too: under "replicated" alone.

    A reservation no replica got is READY on a promoted replica, where another worker runs the
    task again; and a primary the sentinels demote late (10 s after a SENTINEL FAILOVER) went
    on handing reservations out (docs/scaling.md, Tasks run twice by a failover). Under
    "fsync" a promoted replica is no safer, and WAITAOF would hold each refill for a disk write.
    """
    return settings.durability is Durability.REPLICATED


def check_confirmed(settings: BackendSettings, reply: Any) -> None:
    """Raise ``MaybeApplied`` when a WAIT or WAITAOF reply falls short of the mode."""
    if isinstance(reply, Exception):
        # E.g. the node became a replica in a failover: the write went elsewhere, unconfirmed.
        # Redis's words for a command it does not know end in a space after the last argument.
        why = f"the confirmation failed: {str(reply).rstrip(' .')}{_fix(settings, reply)}"
        if _refused_for_good(reply):  # a worker stops, as for any refusal of its rights
            raise unconfirmed(settings, why, ConfirmationRefused) from reply
        raise unconfirmed(settings, why) from reply
    reached = int(reply[0]) if settings.durability is Durability.FSYNC else int(reply)
    if reached < 1:
        what, check = _NOT_REACHED[settings.durability]
        raise unconfirmed(
            settings,
            f"it was not {what} within {settings.durability_timeout_s:g}s. Check {check} "
            "or raise OPTIONS['durability_timeout']",
        )


def _refused_for_good(error: Exception) -> bool:
    """Tell whether Redis refused the confirmation itself, as it will every one: the ACL user
    may not run it, or the server has no such command (renamed away, or too old)."""
    return isinstance(error, redis.exceptions.NoPermissionError) or bool(unknown_command(error))


def _fix(settings: BackendSettings, error: Exception) -> str:
    """Return what to do about a confirmation Redis refused for good, else ""."""
    # Either way every call would store its tasks and fail: a retry would enqueue them twice.
    command, others = CONFIRMATION[settings.durability]
    other_mode = f"set OPTIONS['durability'] to {others}"
    message = str(error).lower()
    # WAIT is in @connection and @slow alone: an ACL of other categories leaves it out.
    if isinstance(error, redis.exceptions.NoPermissionError):
        return f". Grant it to the ACL user ('+{command.lower()}'), or {other_mode}"
    if unknown_command(error) and "waitaof" in message:
        return (
            ". This Redis has no WAITAOF (Redis and Valkey have it from 7.2): upgrade it, or "
            f"{other_mode}; on a 7.2+ server it was renamed away (rename-command): restore it"
        )
    if "appendonly is disabled" in message:  # turned off at runtime: CONFIG SET appendonly no
        return (
            ". Set appendonly yes on the server (CONFIG SET appendonly yes, and in redis.conf "
            f"so that it stays on after a restart), or {other_mode}"
        )
    return ""


def unconfirmed(
    settings: BackendSettings, why: str, kind: type[MaybeApplied] = MaybeApplied
) -> MaybeApplied:
    """Return the error for a write Redis may hold but did not confirm per the mode.

    It says nothing of a retry: the ack writer retries its batch (fenced), unless Redis refused
    the confirmation itself (``ConfirmationRefused``, a ``BrokerRefused``: the worker stops),
    and an enqueue's error says what to check first (docs/enqueue.md, What each error means).
    """
    return kind(
        f"Redis at {masked_location(settings.location)} may have applied the write, but "
        f"durability={settings.durability.value!r} is not met: {why}. A failover now could "
        "lose it."
    )
