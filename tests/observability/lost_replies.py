"""Lose the replies of chosen script calls: the connection drops after a call was written, so
the broker cannot tell whether Redis ran it."""

from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import pytest
import redis

from django_threadmill.broker import Broker
from django_threadmill.broker.scripts import ScriptName, register_scripts


@dataclass
class Losses:
    """What happens to the next calls that name the chosen key: ``left`` of them lose their
    reply; Redis runs them first if ``ran``. ``lost`` counts those lost so far."""

    left: int = 0
    ran: bool = True
    lost: int = 0


def lose_replies(broker: Broker, monkeypatch: pytest.MonkeyPatch, script: ScriptName) -> Losses:
    """Make ``broker``'s calls of ``script`` lose their replies as the returned ``Losses`` says.

    Chosen by the script's SHA, not by a key only its calls name: acquire and reap came to name
    the outbox too, which had picked finish's calls."""
    losses = Losses()
    execute = broker.client.execute_command
    chosen = ("EVALSHA", register_scripts(broker.client)[script].sha)

    def execute_command(*args: Any, **options: Any) -> Any:
        if not (losses.left and args[:2] == chosen):
            return execute(*args, **options)
        if losses.ran:
            execute(*args, **options)  # NOSCRIPT raises here: the script is loaded, sent again
        losses.left -= 1
        losses.lost += 1
        raise redis.ConnectionError("Connection closed by server.")

    monkeypatch.setattr(broker.client, "execute_command", execute_command)
    # The ack writer's calls go over this client too, not a connection of its own.
    monkeypatch.setattr(broker, "pinned", nullcontext)
    return losses
