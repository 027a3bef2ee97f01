"""Reads for the backend, the admin and the checks: records, queue names, server info.

The clients decode every reply (``decode_responses``, connection.py): the casts say so to
redis-py's types, which allow bytes.
"""

import hashlib
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, cast

import redis

from ..codec.progress import PROGRESS_FIELDS
from ..conf.settings import QUEUE_NAME_PATTERN
from ..conf.topology import Durability
from ..exceptions import BrokerRefused, BrokerUnavailable, PayloadError
from .connection import wrong_type
from .core import BrokerCore, named_primary
from .durability import probe_command
from .raw_replies import is_utf8
from .scripts import ScriptCall, ScriptName
from .types import stored_int

# A script that reads and writes nothing: what the checks send to learn whether this user may run
# scripts at all.
PROBE_SCRIPT = "return 1"
PROBE_SHA = hashlib.sha1(PROBE_SCRIPT.encode(), usedforsecurity=False).hexdigest()


def damaged_record(task_id: str, key: str, kind: str) -> PayloadError:
    """Return the error for a task whose record key holds a ``kind`` (a list, a string...).

    Not ``BrokerUnavailable``: no retry fixes it (docs/lifecycle.md, Damaged records).
    """
    return PayloadError(
        f"Task {task_id!r} cannot be read: its key {key!r} holds a {kind}, not a hash, so "
        "something other than django-threadmill wrote it. Look at it (redis-cli TYPE, DUMP), "
        "then delete it or restore the record (docs/lifecycle.md, Damaged records)."
    )


def undecodable_record(task_id: str, key: str) -> PayloadError:
    """Return the error for a task whose record holds bytes that are not UTF-8: django-threadmill
    writes text only, so no retry fixes it (docs/lifecycle.md, Damaged records)."""
    return PayloadError(
        f"Task {task_id!r} cannot be read: its record {key!r} holds bytes that are not UTF-8, "
        "so something other than django-threadmill wrote them. Look at it (redis-cli HGETALL), "
        "then delete it or restore the record (docs/lifecycle.md, Damaged records)."
    )


def unreadable_payload(task_id: str, key: str | None, problem: PayloadError) -> PayloadError:
    """Return the error for a task whose record holds a payload that names no task to run
    (``problem`` says what is wrong with it)."""
    return PayloadError(
        f"Task {task_id!r} cannot be read. {problem} Look at its record (redis-cli HGETALL "
        f"{key!r}), then delete it or restore the payload (docs/lifecycle.md, Damaged records)."
    )


def damaged_fields(task_id: str, key: str | None, held: str) -> PayloadError:
    """Return the error for a task whose record ``held`` what no script writes (``held``
    says what: ``record_problem``): no retry fixes it (docs/lifecycle.md, Damaged records)."""
    return PayloadError(
        f"Task {task_id!r} cannot be read: its record {key!r} holds {held}, so something other "
        f"than django-threadmill wrote it. Look at it (redis-cli HGETALL {key!r}), then delete "
        "it or restore the record (docs/lifecycle.md, Damaged records)."
    )


# What ``progress_fields`` reads: ``state`` tells a record that is there from one that is gone.
PROGRESS_READ = ("state", *PROGRESS_FIELDS)


def _named_progress(values: Sequence[str | None] | None) -> dict[str, str | None] | None:
    """Return the progress fields read (``values``, in ``PROGRESS_FIELDS`` order) by name, or
    None for a record that is gone (``progress_fields``)."""
    return None if values is None else dict(zip(PROGRESS_FIELDS, values, strict=True))


def _record_replies(keys: Sequence[str | None], replies: Iterable[Any]) -> list[Any]:
    """Return a pipeline's ``replies``, one per key of ``keys`` that is not None, each in its
    key's place, and None in the others' (``records``)."""
    sent = iter(replies)
    return [None if key is None else next(sent) for key in keys]


def _of_another_type(reply: Any) -> bool:
    """Tell whether a record's ``reply`` says its key is not a hash; raise any other error it
    holds (``records_read``)."""
    if isinstance(reply, redis.ResponseError):
        if not wrong_type(reply):
            raise reply
        return True
    return False


def _raised[T](read: T | PayloadError) -> T:
    """Return ``read``, or raise it when it is the error of a record that cannot be read."""
    if isinstance(read, PayloadError):
        raise read
    return read


def known_queues(seen: Iterable[bytes], configured: Iterable[str]) -> list[str]:
    """Return the queue names of ``seen`` (the set of queues, read as bytes) and the
    ``configured`` ones, sorted; a member that is no queue name is left out (``queues``)."""
    names = (name.decode() for name in seen if is_utf8(name))
    known = {name for name in names if QUEUE_NAME_PATTERN.fullmatch(name)}
    return sorted(known | set(configured))


class Reads(BrokerCore):
    """The read-only section of the Broker (the admin's own queries are in ``inspect/``)."""

    def last_fired_ms(self, queue: str, schedule: str) -> int | None:
        """Return the last slot ``schedule`` fired into ``queue`` (ms), or None if it never did.

        On a sharded queue the marker sits in the shard the schedule's tasks are routed to. A
        marker of another type (written by hand) reads as None, as the enqueue script reads it:
        that script sets it aside and replaces it at the next slot (docs/lifecycle.md, Keys of
        another type), so the listing need not fail on it meanwhile.
        """
        keys = self.queue_keys(self.part_in(queue, schedule))
        with self.translated_errors(read=True):
            try:
                # Read as bytes: a marker written by hand that is not UTF-8 reads as none, as
                # the enqueue script's tonumber reads it, instead of failing the read.
                marker = self.raw_command("GET", keys.fired(schedule))
                return stored_int(marker.decode() if marker and is_utf8(marker) else None)
            except redis.ResponseError as exc:
                if wrong_type(exc):
                    return None
                raise

    def server_time_ms(self) -> int:
        """Return Redis ``TIME`` in ms: the one clock time is decided on, whatever the host's
        own (docs/design.md, One clock)."""
        with self.translated_errors(read=True):
            seconds, micros = self.client.time()
        return int(seconds) * 1000 + int(micros) // 1000

    def server_time(self) -> datetime:
        """Return Redis ``TIME`` as an aware UTC datetime (to the ms)."""
        return datetime.fromtimestamp(self.server_time_ms() / 1000, UTC)

    def queues(self, configured: Iterable[str] = ()) -> list[str]:
        """Return every queue name this alias has seen, and the ``configured`` ones, sorted.

        Pass the alias's ``QUEUES``: Redis's set of queues is written at enqueue and at a
        worker's start, so one that came back empty (a restart from an older snapshot, a
        ``DEL``) may not name a queue that still holds tasks, leases or damaged records.
        Read as bytes: a name that is no queue name (not UTF-8, empty, a "/": only a
        hand-written SADD makes one, and no key of ours names it) is left out, where it failed
        the admin's queues page and sent the reaper to keys of no queue.
        """
        with self.translated_errors(read=True):
            seen = self.raw_command("SMEMBERS", self.keyspace.queues)
        return known_queues(seen, configured)

    def server_info(self, *, with_config: bool = True, node: Any = None) -> dict[str, Any]:
        """Return Redis INFO's default sections (server, memory, persistence, replication and
        cluster among them) in one call; ``with_config``, also whether RDB is on and the largest
        argument and request Redis takes (``proto_max_bulk_len``, ``client_query_buffer_limit``,
        in bytes), three CONFIG calls a health probe goes without. Under durability='replicated'
        or 'fsync', also ``confirmation_refused``, what ``confirmation_refusal`` says; under
        'fsync' with ``with_config``, ``appendfsync`` ("no": WAITAOF never counts the primary's
        AOF, however long it waits).

        Each of those read by CONFIG is None when CONFIG is not allowed (managed Redis):
        unknown, and ``config_refused`` says why (None when it is allowed).

        ``node``: the Redis Cluster node to ask (``servers_info``); without it, redis-py's
        default node, which is one primary of several.
        """
        on = {} if node is None else {"target_nodes": node}
        with self.translated_errors(read=True):
            info: dict[str, Any] = self.client.info(**on)
            if (probe := probe_command(self.settings)) is not None:
                info["confirmation_refused"] = self.confirmation_refusal(probe, **on)
            if not with_config:
                return info
            names = ["save", "proto-max-bulk-len", "client-query-buffer-limit"]
            if self.settings.durability is Durability.FSYNC:
                names.append("appendfsync")
            try:
                config = {name: self.client.config_get(name, **on).get(name) for name in names}
                info["config_refused"] = None
            except redis.ResponseError as exc:  # renamed away, or an ACL without it
                config, info["config_refused"] = {}, str(exc).strip()
            info["save_configured"] = bool(config["save"]) if "save" in config else None
            info["proto_max_bulk_len"] = stored_int(config.get("proto-max-bulk-len"))
            info["client_query_buffer_limit"] = stored_int(config.get("client-query-buffer-limit"))
            info["appendfsync"] = config.get("appendfsync")
        return info

    def servers_info(self, *, with_config: bool = True) -> dict[str, dict[str, Any]]:
        """Return ``server_info`` of each server that holds queues: of one Redis, keyed "";
        of a Redis Cluster, of each primary that answers, keyed by its name ("host:port"); of
        a Sentinel-managed primary, keyed by the address the sentinels named (``named_primary``).

        Each primary has settings of its own (maxmemory-policy, persistence, the size limits,
        replicas): read on redis-py's default node alone, the checks passed a cluster whose
        other primaries evicted tasks. A primary that does not answer is left out (the calls
        for its queues say so); none answering raises the first one's error.
        """
        client = self.client
        if not isinstance(client, redis.RedisCluster):
            info = self.server_info(with_config=with_config)
            return {named_primary(client) or "": info}
        primaries: Callable[[], list[Any]] = client.get_primaries  # untyped in redis-py
        read: dict[str, dict[str, Any]] = {}
        down: list[BrokerUnavailable] = []
        for node in sorted(primaries(), key=lambda node: node.name):
            try:
                read[node.name] = self.server_info(with_config=with_config, node=node)
            except BrokerRefused:
                raise  # credentials or rights: no wait fixes them, unlike a primary down
            except BrokerUnavailable as exc:
                down.append(exc)
        if not read:
            raise down[0]
        return read

    def confirmation_refusal(self, probe: tuple[str | int, ...], **on: Any) -> str | None:
        """Send ``probe``, a WAIT or WAITAOF that waits for nothing; return why Redis refused it
        (renamed away, an ACL without it, a server older than 7.2 for WAITAOF), None when it
        answered.

        Durability='replicated' or 'fsync' sends one after every write: refused, each enqueue
        stores its task and fails, and no worker can write an outcome.
        """
        # Not raw_command: a Redis Cluster client sums WAIT's replies, taking no options.
        execute: Callable[..., Any] = self.client.execute_command  # untyped in redis-py
        try:
            execute(*probe, **on)
        except redis.ResponseError as exc:
            return str(exc).strip()
        return None

    def script_refusals(self) -> dict[str, str]:
        """Send each command our scripts go by with ``PROBE_SCRIPT``: EVALSHA, EVAL (calls that
        must run first, and on a Redis Cluster those that met NOSCRIPT) and SCRIPT LOAD (on one
        Redis, after a NOSCRIPT); return, per command Redis refused (renamed away, an ACL
        without it), its words.

        Every enqueue and every worker call runs a script: refused, none can. The probes name
        no key: an ACL user that may only read our keys may still run scripts that read them.
        """
        probes: dict[str, tuple[str | int, ...]] = {
            "EVALSHA": (PROBE_SHA, 0),
            "EVAL": (PROBE_SCRIPT, 0),
        }
        if not self.settings.cluster:
            probes["SCRIPT LOAD"] = (PROBE_SCRIPT,)
        refused: dict[str, str] = {}
        with self.translated_errors(read=True):
            for command, args in probes.items():
                try:
                    self.raw_command(*command.split(), *args)
                except redis.exceptions.NoScriptError:
                    pass  # EVALSHA went through: the probe is not loaded, which is no refusal
                except redis.ResponseError as exc:
                    refused[command] = str(exc).strip()
        return refused

    def ping(self) -> None:
        """Ask Redis for a reply; raise ``BrokerUnavailable`` if none comes."""
        with self.translated_errors(read=True):
            self.client.ping()

    def _read_record[T](
        self, task_id: str, read: Callable[[str], T], part: str | None = None
    ) -> T | None:
        """Return ``read(key)`` of the record key of ``task_id``, None if the id is not ours.

        ``part``: the queue part that holds it, when known (an outbox entry's, of any shard
        count); else the one the settings' count gives.

        Raise ``PayloadError`` (``damaged_record``) when its key is not a hash, and
        (``undecodable_record``) when it holds bytes that are not UTF-8.
        """
        key = self.record_key(task_id, part)
        if key is None:
            return None
        with self.translated_errors(read=True):
            try:
                return read(key)
            except UnicodeDecodeError as exc:
                raise undecodable_record(task_id, key) from exc
            except redis.ResponseError as exc:
                if not wrong_type(exc):
                    raise
                raise damaged_record(task_id, key, str(self.client.type(key))) from exc

    async def _aread_record[T](self, task_id: str, read: Callable[[str], Awaitable[T]]) -> T | None:
        """Async twin of ``_read_record`` (in the part the settings' shard count gives), for
        ``read``s on the asyncio client."""
        key = self.record_key(task_id)
        if key is None:
            return None
        async with self.atranslated_errors(read=True):
            try:
                return await read(key)
            except UnicodeDecodeError as exc:
                raise undecodable_record(task_id, key) from exc
            except redis.ResponseError as exc:
                if not wrong_type(exc):
                    raise
                kind = await self._async_client()[0].type(key)
                raise damaged_record(task_id, key, str(kind)) from exc

    def record(self, task_id: str, part: str | None = None) -> dict[str, str] | None:
        """Return the stored fields of ``task_id`` (in ``part``, when given: ``_read_record``),
        or None if there is no such task.

        Raise ``PayloadError`` (``damaged_record``) when its key is not a hash.
        """
        return self._read_record(
            task_id, lambda key: cast(dict[str, str], self.client.hgetall(key)) or None, part
        )

    def step_marker(self, task_id: str, part: str | None = None) -> str | None:
        """Return the ``workflow`` field alone of the record of ``task_id`` (in ``part``, as
        ``record``), or None when it has none, its key holds no hash, or the field is not
        UTF-8: the drainer reads it from a step's record that cannot be read whole, to fail its
        workflow (docs/workflows.md, A step set aside)."""
        key = self.record_key(task_id, part)
        if key is None:
            return None
        with self.translated_errors(read=True):
            try:
                marker = self.raw_command("HGET", key, "workflow")
            except redis.ResponseError as exc:
                if wrong_type(exc):
                    return None
                raise
        return marker.decode() if marker is not None and is_utf8(marker) else None

    def progress_fields(self, task_id: str) -> dict[str, str | None] | None:
        """Return the progress fields of ``task_id`` (None where absent), or None if there is
        no such task (unknown, expired or purged): one HMGET, and an EXISTS only when the
        record has no ``state``, as a record that is gone has none.

        Raise ``PayloadError`` (``damaged_record``) when its key is not a hash.
        """

        def read(key: str) -> list[str | None] | None:
            state, *values = cast(list[str | None], self.client.hmget(key, PROGRESS_READ))
            return None if state is None and not self.client.exists(key) else values

        return _named_progress(self._read_record(task_id, read))

    async def aprogress_fields(self, task_id: str) -> dict[str, str | None] | None:
        """Async twin of ``progress_fields``, on the asyncio client."""
        client = self._async_client()[0]

        async def read(key: str) -> list[str | None] | None:
            state, *values = cast(list[str | None], await client.hmget(key, PROGRESS_READ))
            return None if state is None and not await client.exists(key) else values

        return _named_progress(await self._aread_record(task_id, read))

    def records(self, task_ids: Sequence[str]) -> list[dict[str, str] | None]:
        """``record`` of each of ``task_ids``, in one round trip: the first that cannot be
        read raises its ``PayloadError``."""
        return [_raised(read) for read in self.records_read(task_ids)]

    def records_read(self, task_ids: Sequence[str]) -> list[dict[str, str] | PayloadError | None]:
        """``record`` of each of ``task_ids``, in one round trip, or in its place the
        ``PayloadError`` ``record`` raises for it: a workflow's other steps still read
        (docs/workflows.md, The API)."""
        keys = [self.record_key(task_id) for task_id in task_ids]
        with self.translated_errors(read=True):
            with self.client.pipeline(transaction=False) as pipe:
                for key in filter(None, keys):
                    pipe.hgetall(key)
                try:
                    replies = _record_replies(keys, pipe.execute(raise_on_error=False))
                except UnicodeDecodeError:  # one record is not UTF-8: one read each names it
                    return [self._record_read(task_id) for task_id in task_ids]
            return [
                damaged_record(task_id, key, str(self.client.type(key)))
                if key is not None and _of_another_type(reply)
                else cast(dict[str, str], reply) or None
                for task_id, key, reply in zip(task_ids, keys, replies, strict=True)
            ]

    def _record_read(self, task_id: str) -> dict[str, str] | PayloadError | None:
        """``record`` of ``task_id``, or the ``PayloadError`` it raises (``records_read``)."""
        try:
            return self.record(task_id)
        except PayloadError as exc:
            return exc

    async def arecords_read(
        self, task_ids: Sequence[str]
    ) -> list[dict[str, str] | PayloadError | None]:
        """Async twin of ``records_read``, on the asyncio client."""
        keys = [self.record_key(task_id) for task_id in task_ids]
        client = self._async_client()[0]
        async with self.atranslated_errors(read=True):
            async with client.pipeline(transaction=False) as pipe:
                for key in filter(None, keys):
                    pipe.hgetall(key)
                try:
                    replies = _record_replies(keys, await pipe.execute(raise_on_error=False))
                except UnicodeDecodeError:  # as in records_read
                    return [await self._arecord_read(task_id) for task_id in task_ids]
            return [
                damaged_record(task_id, key, str(await client.type(key)))
                if key is not None and _of_another_type(reply)
                else cast(dict[str, str], reply) or None
                for task_id, key, reply in zip(task_ids, keys, replies, strict=True)
            ]

    async def _arecord_read(self, task_id: str) -> dict[str, str] | PayloadError | None:
        """Async twin of ``_record_read``."""
        try:
            return await self.arecord(task_id)
        except PayloadError as exc:
            return exc

    def cut_fields(
        self,
        task_ids: Sequence[str],
        fields: Sequence[str],
        cut: str,
        cut_bytes: int,
        found_in: Mapping[str, str] | None = None,
    ) -> list[list[bytes | None] | None]:
        """Return ``fields`` of the record of each of ``task_ids`` as bytes, the field ``cut``
        cut to its first ``cut_bytes`` (None where its key is not a hash, all None where it is
        gone), each read in its part in ``found_in`` if given there (one of another shard
        count): one row_fields.lua call per queue part, pipelined (split by node on a Redis
        Cluster)."""
        by_part: dict[str, list[tuple[int, str]]] = defaultdict(list)  # (position, id)
        for n, task_id in enumerate(task_ids):
            part = (found_in or {}).get(task_id) or self.part_of(task_id) or ""
            by_part[part].append((n, task_id))
        # Each call names the records it reads, not their prefix (row_fields.lua).
        calls = [
            ScriptCall(
                ScriptName.ROW_FIELDS,
                tuple(self.queue_keys(part).record(task_id) for _, task_id in members),
                (cut_bytes, fields.index(cut) + 1, len(fields), *fields),
                raw=True,
            )
            for part, members in by_part.items()
        ]
        found: list[list[bytes | None] | None] = [None] * len(task_ids)
        width = 1 + len(fields)  # per id: its key's type, then its fields
        replies = self._run_per_queue(calls, durable=False) if calls else []
        for members, reply in zip(by_part.values(), replies, strict=True):
            for at, (n, _) in enumerate(members):
                kind, *values = reply[at * width : (at + 1) * width]
                found[n] = values if kind in (b"hash", b"none") else None
        return found

    async def arecord(self, task_id: str) -> dict[str, str] | None:
        """Async twin of ``record``, on the asyncio client."""
        client = self._async_client()[0]

        async def read(key: str) -> dict[str, str] | None:
            return cast(dict[str, str], await client.hgetall(key)) or None

        return await self._aread_record(task_id, read)
