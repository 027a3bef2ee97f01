"""Reads for the backend, the admin and the checks: records, queue names, server info.

The clients decode every reply (``decode_responses``, connection.py): the casts say so to
redis-py's types, which allow bytes.
"""

from typing import Any, cast

import redis

from .core import BrokerCore
from .types import stored_int


class Reads(BrokerCore):
    """The read-only section of the Broker (the admin's own queries are in ``inspect/``)."""

    def last_fired_ms(self, queue: str, schedule: str) -> int | None:
        """Return the last slot ``schedule`` fired into ``queue`` (ms), or None if it never did.

        On a sharded queue the marker sits in the shard the schedule's tasks are routed to.
        """
        keys = self.queue_keys(self.part_in(queue, schedule))
        with self.translated_errors():
            return stored_int(cast(str | None, self.client.get(keys.fired(schedule))))

    def queues(self) -> list[str]:
        """Return every queue name this alias has seen, sorted."""
        with self.translated_errors():
            return sorted(cast(set[str], self.client.smembers(self.keyspace.queues)))

    def server_info(self) -> dict[str, Any]:
        """Return Redis INFO (server, memory, persistence, replication) and whether RDB is on.

        ``save_configured`` is None when CONFIG is not allowed (managed Redis), i.e. unknown.
        """
        with self.translated_errors():
            info: dict[str, Any] = {}
            for section in ("server", "memory", "persistence", "replication"):
                info.update(self.client.info(section))
            try:
                info["save_configured"] = bool(self.client.config_get("save").get("save"))
            except redis.ResponseError:
                info["save_configured"] = None
        return info

    def record(self, task_id: str) -> dict[str, str] | None:
        """Return the stored fields of ``task_id``, or None if there is no such task."""
        key = self.record_key(task_id)
        if key is None:
            return None
        with self.translated_errors():
            return cast(dict[str, str], self.client.hgetall(key)) or None

    async def arecord(self, task_id: str) -> dict[str, str] | None:
        """Async twin of ``record``."""
        key = self.record_key(task_id)
        if key is None:
            return None
        with self.translated_errors():
            return cast(dict[str, str], await self._async_client()[0].hgetall(key)) or None
