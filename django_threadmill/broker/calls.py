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
from ..exceptions import BrokerUnavailable
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


class Sending:
    """One batch on its way: a first round, and a second for the calls that met NOSCRIPT.

    A failed confirmation is raised only after the second round, so the reloaded calls run.
    """

    def __init__(
        self,
        client: SyncClient | AsyncClient,
        shas: dict[ScriptName, str],
        settings: BackendSettings,
        calls: Sequence[ScriptCall],
        before: Sequence[Command],
        confirm: bool,
    ) -> None:
        self.client = client
        self.shas = shas
        self.settings = settings
        self.calls = list(calls)
        self.before = before
        self.confirm = confirm_command(settings) if confirm else None
        self.replies: list[Any] = [NoScriptError()] * len(self.calls)  # unsent reads as unloaded
        self.rounds = 0
        self.sent: list[int] = []  # indexes of the calls in the current round
        self.batch: Batch | None = None
        self.unconfirmed: BrokerUnavailable | None = None

    def next_batch(self) -> Batch | None:
        """Return the pipeline to send next, or None when every call has an answer."""
        self.sent = [i for i, reply in enumerate(self.replies) if _unloaded(reply)]
        if self.rounds == 2 or not self.sent:
            return None
        calls = [self.calls[i] for i in self.sent]
        self.batch = _build(self.client, self.shas, calls, self.before, self.confirm)
        self.before = ()
        self.rounds += 1
        return self.batch

    def take(self, replies: list[Any]) -> set[ScriptName]:
        """Record a round's replies; return the scripts to load before the next round."""
        assert self.batch is not None
        for reply in replies[: self.batch.first_call]:
            if isinstance(reply, Exception):
                raise reply
        for i, reply in zip(self.sent, self.batch.script_replies(replies), strict=True):
            self.replies[i] = reply
        for reply in self.batch.confirmations(replies):
            try:
                check_confirmed(self.settings, reply)
            except BrokerUnavailable as exc:
                self.unconfirmed = self.unconfirmed or exc
        self._check_not_moved(self.batch)
        return {self.calls[i].name for i in self.sent if _unloaded(self.replies[i])}

    def result(self) -> list[Any]:
        """Return the calls' replies, or raise the first error or failed confirmation."""
        for reply in self.replies:
            if isinstance(reply, Exception):
                raise reply
        if self.unconfirmed is not None:
            raise self.unconfirmed
        return self.replies

    def _check_not_moved(self, batch: Batch) -> None:
        """Refuse a confirmation from a node that lost the slot during the call.

        redis-py follows MOVED by sending the call to the new owner and updating its slot
        map, but the WAIT went to the old node, whose answer says nothing about this write.
        """
        client = self.client
        for node, key in batch.confirmed_on.items():
            if isinstance(client, CLUSTERS) and client.get_node_from_key(key).name != node:
                raise unconfirmed(self.settings, f"its slot moved from {node} during the call")


def _unloaded(reply: Any) -> bool:
    return isinstance(reply, NoScriptError)


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
    sending = Sending(client, shas, settings, calls, before, confirm)
    while (batch := sending.next_batch()) is not None:
        with client.pipeline(transaction=False) as pipe:
            for args, options in batch.commands:
                pipe.execute_command(*args, **options)
            replies = pipe.execute(raise_on_error=False)
        for name in sending.take(replies):
            client.script_load(scripts[name].script)
    return sending.result()


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
    if isinstance(client, redis.asyncio.RedisCluster):
        await client.initialize()  # the node of each key is known only once connected
    shas = {name: script.sha for name, script in scripts.items()}
    sending = Sending(client, shas, settings, calls, before, confirm)
    while (batch := sending.next_batch()) is not None:
        async with client.pipeline(transaction=False) as pipe:
            for args, options in batch.commands:
                pipe.execute_command(*args, **options)
            replies = await pipe.execute(raise_on_error=False)
        for name in sending.take(replies):
            await client.script_load(scripts[name].script)
    return sending.result()
