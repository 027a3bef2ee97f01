"""The base every part of the Broker builds on: clients, scripts, and how a call is sent.

The Broker is split by section (enqueue, reads, worker transitions, lifecycle), one module each,
all subclasses of ``BrokerCore``; ``broker.py`` joins them into the one ``Broker`` callers use.
"""

import asyncio
from collections.abc import Sequence
from contextlib import AbstractContextManager
from functools import cached_property
from typing import Any
from weakref import WeakKeyDictionary

from redis.commands.core import AsyncScript, Script

from ..conf import BackendSettings, Durability
from .calls import send
from .connection import make_async_client, make_client, translated_errors
from .keys import KeySpace, QueueKeys, queue_of
from .scripts import ScriptCall, ScriptName, register_scripts, script_source
from .topology import AsyncClient, SyncClient
from .wake import IdleWaits


class BrokerCore:
    """Redis access for one backend alias. Thread-safe: redis-py pools its connections."""

    def __init__(self, settings: BackendSettings) -> None:
        self.settings = settings
        self.keyspace = KeySpace(settings.key_prefix, settings.alias)
        self._known_queues: set[str] = set()
        self._idle = IdleWaits(lambda: self.client, self.translated_errors)
        self._async_clients: WeakKeyDictionary[
            asyncio.AbstractEventLoop, tuple[AsyncClient, dict[ScriptName, AsyncScript]]
        ] = WeakKeyDictionary()

    @cached_property
    def client(self) -> SyncClient:
        with self.translated_errors():  # a Redis Cluster client reads the slot map when built
            return make_client(self.settings)

    @cached_property
    def _scripts(self) -> dict[ScriptName, Script]:
        return register_scripts(self.client)

    def _async_client(self) -> tuple[AsyncClient, dict[ScriptName, AsyncScript]]:
        """Return the asyncio client and scripts of the running loop (pools are per loop)."""
        loop = asyncio.get_running_loop()
        if loop not in self._async_clients:
            client = make_async_client(self.settings)
            # Only enqueue runs on the asyncio client, and it must not be flagged allow-oom.
            scripts = {name: client.register_script(script_source(name)) for name in ScriptName}
            self._async_clients[loop] = (client, scripts)
        return self._async_clients[loop]

    def translated_errors(self) -> AbstractContextManager[None]:
        """Turn redis-py errors inside the block into ``BrokerUnavailable`` with the fix."""
        return translated_errors(self.settings.location, self.settings.pool_timeout_s)

    def _run(self, call: ScriptCall, *, durable: bool = False) -> Any:
        """Send one script call; a ``durable`` one is confirmed per OPTIONS['durability']."""
        if durable and self.settings.durability is not Durability.LOCAL:
            return self._send([call], durable=True)[0]
        with self.translated_errors():
            return self._scripts[call.name](keys=call.keys, args=call.args)

    def _send(self, calls: Sequence[ScriptCall], *, durable: bool) -> list[Any]:
        """Send ``calls`` as one pipeline (split by node on a Redis Cluster); raise any error."""
        with self.translated_errors():
            return send(self.client, self._scripts, self.settings, calls, confirm=durable)

    def _run_per_queue(self, calls: Sequence[ScriptCall], *, durable: bool) -> list[Any]:
        """Send one script call per queue: directly for one, as one pipeline for several."""
        if len(calls) == 1:
            return [self._run(calls[0], durable=durable)]
        return self._send(calls, durable=durable)

    def queue_keys(self, queue: str) -> QueueKeys:
        return self.keyspace.queue(queue)

    def record_key(self, task_id: str) -> str | None:
        queue = queue_of(task_id)
        return None if queue is None else self.queue_keys(queue).record(task_id)
