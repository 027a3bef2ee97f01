"""Send script calls as one pipeline, each node's share confirmed per the durability mode.

Scripts go out as raw EVALSHA (redis-py's cluster pipeline refuses Script objects); a call that
meets NOSCRIPT wrote nothing, so its script is loaded and only that call is sent again. On a
Redis Cluster the pipeline splits the calls by node itself: each call stays in its queue's slot.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import redis
import redis.asyncio
from redis.commands.core import AsyncScript, Script
from redis.exceptions import NoScriptError

from ..conf import BackendSettings
from .durability import check_confirmed, confirm_command, unconfirmed
from .scripts import ScriptCall, ScriptName
from .topology import AsyncClient, SyncClient

type Command = tuple[str | int | float, ...]
CLUSTERS = (redis.RedisCluster, redis.asyncio.RedisCluster)


@dataclass(frozen=True, slots=True)
class Batch:
    """The commands of one pipeline and where the script replies sit among them."""

    commands: list[tuple[Command, dict[str, Any]]]
    first_call: int  # position of the first script call; plain commands come before
    calls: int
    confirmed_on: dict[str, str]  # per node the confirmation went to: a key it must still own

    def script_replies(self, replies: list[Any]) -> list[Any]:
        return replies[self.first_call : self.first_call + self.calls]

    def confirmations(self, replies: list[Any]) -> list[Any]:
        return replies[self.first_call + self.calls :]


def _build(
    client: SyncClient | AsyncClient,
    shas: dict[ScriptName, str],
    calls: Sequence[ScriptCall],
    before: Sequence[Command],
    confirm: Command | None,
) -> Batch:
    commands: list[tuple[Command, dict[str, Any]]] = [(command, {}) for command in before]
    for call in calls:
        evalsha = ("EVALSHA", shas[call.name], len(call.keys), *call.keys, *call.args)
        commands.append((evalsha, {}))
    confirmed_on: dict[str, str] = {}
    if confirm is not None and not isinstance(client, CLUSTERS):
        commands.append((confirm, {}))
    elif confirm is not None:
        # WAIT covers the writes of its own connection: one per node, in that node's share.
        confirmed_on = {client.get_node_from_key(call.keys[0]).name: call.keys[0] for call in calls}
        for key in confirmed_on.values():
            commands.append((confirm, {"target_nodes": client.get_node_from_key(key)}))
    return Batch(commands, len(before), len(calls), confirmed_on)


def _check_not_moved(
    client: SyncClient | AsyncClient, batch: Batch, settings: BackendSettings
) -> None:
    """Refuse a confirmation from a node that lost the slot during the call.

    redis-py follows MOVED by sending the call to the new owner and updating its slot map, but
    the WAIT went to the old node, whose answer says nothing about this write.
    """
    for node, key in batch.confirmed_on.items():
        if isinstance(client, CLUSTERS) and client.get_node_from_key(key).name != node:
            raise unconfirmed(settings, f"its slot moved from {node} during the call")


def _settle(batch: Batch, replies: list[Any], settings: BackendSettings) -> list[Any]:
    """Raise the first error other than NOSCRIPT; check each confirmation; return replies."""
    for reply in replies[: batch.first_call]:
        if isinstance(reply, Exception):
            raise reply
    scripts = batch.script_replies(replies)
    for reply in scripts:
        if isinstance(reply, Exception) and not isinstance(reply, NoScriptError):
            raise reply
    for reply in batch.confirmations(replies):
        check_confirmed(settings, reply)
    return scripts


def _unloaded(replies: list[Any]) -> list[int]:
    return [i for i, reply in enumerate(replies) if isinstance(reply, NoScriptError)]


def send(
    client: SyncClient,
    scripts: dict[ScriptName, Script],
    settings: BackendSettings,
    calls: Sequence[ScriptCall],
    *,
    before: Sequence[Command] = (),
    confirm: bool = False,
) -> list[Any]:
    """Send ``before`` and then ``calls`` in one pipeline; return the calls' replies."""
    shas = {name: script.sha for name, script in scripts.items()}
    command = confirm_command(settings) if confirm else None
    replies: list[Any] = []
    for attempt in range(2):  # NOSCRIPT: load once and resend what did not run
        batch = _build(client, shas, calls, before, command)
        with client.pipeline(transaction=False) as pipe:
            for args, options in batch.commands:
                pipe.execute_command(*args, **options)
            sent = _settle(batch, pipe.execute(raise_on_error=False), settings)
        _check_not_moved(client, batch, settings)
        replies = _merge(replies, sent)
        missing = _unloaded(sent)
        if not missing or attempt == 1:
            break
        for name in {calls[i].name for i in missing}:
            client.script_load(scripts[name].script)
        calls, before = [calls[i] for i in missing], ()
    return _checked(replies)


async def asend(
    client: AsyncClient,
    scripts: dict[ScriptName, AsyncScript],
    settings: BackendSettings,
    calls: Sequence[ScriptCall],
    *,
    before: Sequence[Command] = (),
    confirm: bool = False,
) -> list[Any]:
    """Asyncio twin of ``send``."""
    shas = {name: script.sha for name, script in scripts.items()}
    command = confirm_command(settings) if confirm else None
    if isinstance(client, redis.asyncio.RedisCluster):
        await client.initialize()  # the node of each key is known only once connected
    replies: list[Any] = []
    for attempt in range(2):
        batch = _build(client, shas, calls, before, command)
        async with client.pipeline(transaction=False) as pipe:
            for args, options in batch.commands:
                pipe.execute_command(*args, **options)
            sent = _settle(batch, await pipe.execute(raise_on_error=False), settings)
        _check_not_moved(client, batch, settings)
        replies = _merge(replies, sent)
        missing = _unloaded(sent)
        if not missing or attempt == 1:
            break
        for name in {calls[i].name for i in missing}:
            await client.script_load(scripts[name].script)
        calls, before = [calls[i] for i in missing], ()
    return _checked(replies)


def _merge(earlier: list[Any], resent: list[Any]) -> list[Any]:
    """Put the replies of resent calls in the places of the NOSCRIPT errors they answer."""
    if not earlier:
        return resent
    answers = iter(resent)
    return [next(answers) if isinstance(r, NoScriptError) else r for r in earlier]


def _checked(replies: list[Any]) -> list[Any]:
    for reply in replies:
        if isinstance(reply, Exception):
            raise reply
    return replies
