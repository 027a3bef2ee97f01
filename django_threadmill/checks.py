"""System checks for a ThreadmillTaskBackend: its settings always, its Redis where it matters.

``check_backend`` (what django.tasks' own check calls) judges the settings and needs no Redis, so
migrate, runserver, collectstatic and test work with Redis down. ``check_redis`` reads the
server: ``manage.py check --deploy`` and ``--tag threadmill`` run it, and so do the worker and the
reaper at start (docs/reliability.md, Redis settings we require).
"""

from collections.abc import Callable, Iterable, Iterator, Set
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from copy import copy
from dataclasses import dataclass
from enum import Enum
from typing import Any, NamedTuple, Protocol

from django.apps import apps
from django.core.checks import CheckMessage, Error, Info, Warning

from .broker import Broker
from .broker.durability import CONFIRMATION
from .broker.transitions import FINISH_CALL_CHARS
from .conf.settings import BackendSettings
from .conf.topology import Durability, masked_location
from .exceptions import BrokerRefused, BrokerUnavailable
from .schedules.checks import schedule_messages
from .wording import listed_names

APP = "django_threadmill"  # what INSTALLED_APPS must hold for the commands, admin and checks
REDIS_TAG = "threadmill"  # the tag of the checks that read Redis: check --tag threadmill
UNREACHABLE = "threadmill.E001"  # Redis cannot be used at all (down, or not serving)
REFUSED = "threadmill.E004"  # Redis refused our credentials or ACL rights: never silenced
MIN_REDIS_VERSION = (6, 2)
MIN_WAITAOF_VERSION = (7, 2)  # Redis and Valkey both added WAITAOF in 7.2
# Policies that may evict keys with a TTL only: pending tasks are safe, finished results are not.
REQUEST_OVERHEAD_BYTES = 2**20  # a call's keys and other arguments, besides its payloads or results
VOLATILE_POLICIES = {"volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Refused:
    """What a call past Redis's limits carried, what follows, and the option that allowed it."""

    carrier: str
    outcome: str
    option: str


RESULT_REFUSED = Refused(
    carrier="a finish call",
    outcome="a task returning more would end FAILED, Redis refusing its result",
    option="max_result_bytes",
)
PAYLOAD_REFUSED = Refused(
    carrier="an enqueue",
    outcome="enqueuing a task with a payload that large would fail, nothing stored",
    option="max_payload_bytes",
)


class RedisChecks(Enum):
    """Whether the registered check of the ``threadmill`` tag reads Redis in this command."""

    SKIPPED = "skipped"  # every command by default: none of them needs Redis
    ASKED = "asked"  # manage.py check --tag threadmill
    AT_START = "at start"  # the worker and the reaper, which wait for an unreachable Redis


class AskedChecks(NamedTuple):
    """Whether the registered check reads Redis, and of which alias (the worker's or reaper's
    ``--backend``; None: every one)."""

    mode: RedisChecks
    alias: str | None = None


NOT_ASKED = AskedChecks(RedisChecks.SKIPPED)
_redis_checks = ContextVar("threadmill_redis_checks", default=NOT_ASKED)


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".")[:2] if part.isdigit())


class CheckedBackend(Protocol):
    """What the checks read of a backend: its alias, settings, queues and broker."""

    alias: str
    settings: BackendSettings

    # Read-only: a backend's set[str] matches it, where an attribute would have to be a Set[str].
    @property
    def queues(self) -> Set[str]: ...

    @property
    def broker(self) -> Broker: ...


def check_backend(backend: CheckedBackend) -> list[CheckMessage]:
    """Return errors and warnings about ``backend``'s settings; nothing here reads Redis."""
    return [
        *_app_messages(backend),
        *schedule_messages(backend.settings, backend.queues),
        *_limit_messages(backend),
        *_shard_messages(backend),
    ]


def _app_messages(backend: CheckedBackend) -> list[CheckMessage]:
    """Say that the app is missing: its own checks are not registered then, but this one is
    reached through django.tasks, which checks every backend."""
    if apps.is_installed(APP):
        return []
    return [
        Error(
            f"TASKS[{backend.alias!r}] uses ThreadmillTaskBackend, but {APP!r} is not in "
            "INSTALLED_APPS: there is no threadmill_worker or threadmill_reap command, no admin "
            "section, and no check of its Redis.",
            hint=f"Add {APP!r} to INSTALLED_APPS.",
            id="threadmill.E007",
        )
    ]


def _limit_messages(backend: CheckedBackend) -> list[CheckMessage]:
    """Refuse ``queue_limits`` of a queue not in QUEUES: a typo would leave the real one open."""
    queues = backend.queues
    return [
        Error(
            f"TASKS[{backend.alias!r}]: OPTIONS['queue_limits'] names queue {queue!r}, which is "
            f"not in QUEUES ({listed_names(sorted(queues))}), so its limits apply to no task.",
            hint=f"Fix the queue name, or add the queue to TASKS[{backend.alias!r}]['QUEUES'].",
            id="threadmill.E008",
        )
        for queue in backend.settings.queue_limits
        if queues and queue not in queues
    ]


def _shard_messages(backend: CheckedBackend) -> list[CheckMessage]:
    """Warn about ``queue_shards`` that cannot help: an unknown queue, or no cluster."""
    sharded = [q for q, shards in backend.settings.queue_shards.items() if shards > 1]
    messages: list[CheckMessage] = [
        Warning(
            f"TASKS[{backend.alias!r}]: OPTIONS['queue_shards'] names queue {queue!r}, which is "
            "not in QUEUES, so no task can be enqueued to it.",
            hint="Fix the queue name, or add the queue to QUEUES.",
            id="threadmill.W004",
        )
        for queue in sharded
        if backend.queues and queue not in backend.queues
    ]
    if sharded and not backend.settings.cluster:
        messages.append(
            Warning(
                f"TASKS[{backend.alias!r}]: OPTIONS['queue_shards'] splits {sharded[0]!r} on a "
                "single Redis, where every shard shares one CPU: it adds script calls and "
                "spreads nothing.",
                hint="Shard a queue on a Redis Cluster ('cluster': True), or drop 'queue_shards'.",
                id="threadmill.W005",
            )
        )
    return messages


@contextmanager
def redis_checks(mode: RedisChecks, alias: str | None = None) -> Iterator[None]:
    """Let the registered ``threadmill`` check read Redis (or not) for the block: the Redis of
    ``alias`` alone when one is given, else of every alias."""
    reset = _redis_checks.set(AskedChecks(mode, alias))
    try:
        yield
    finally:
        _redis_checks.reset(reset)


def redis_may_be_down(alias: str) -> AbstractContextManager[None]:
    """Run the Redis checks of ``alias`` in a command that serves it and waits for Redis
    itself, except "not usable".

    The worker and the reaper retry with backoff and log why, so one started before Redis,
    or during an outage, starts working once Redis is up instead of exiting. Refused
    credentials (``REFUSED``) still stop them at start: no wait fixes a password. Another
    alias's Redis is not read: its refusal, or its silence, must not stop or hold a command
    that never uses it (docs/worker.md, Exit codes).
    """
    return redis_checks(RedisChecks.AT_START, alias)


def asked_redis_messages(backends: Callable[[], Iterable[CheckedBackend]]) -> list[CheckMessage]:
    """Return ``check_redis`` of each backend where the command asked for it (of its alias
    alone, where it named one), else nothing."""
    mode, alias = _redis_checks.get()
    if mode is RedisChecks.SKIPPED:
        return []
    waited = mode is RedisChecks.AT_START
    return [
        message
        for backend in backends()
        if alias in (None, backend.alias)
        for message in check_redis(backend, waited=waited)
    ]


def check_redis(backend: CheckedBackend, *, waited: bool = False) -> list[CheckMessage]:
    """Return errors and warnings about the Redis behind ``backend``: reachable, recent,
    safe for tasks. ``waited``: an unreachable Redis is waited for, so it is no error."""
    where = f"TASKS[{backend.alias!r}] at {masked_location(backend.settings.location)}"
    try:
        infos = backend.broker.servers_info()
        if misrouted := each_server(where, backend.settings, infos, _cluster_messages):
            return misrouted  # reading our keys would fail MOVED, or pass by luck of the slot
        # Reads keys of ours: an ACL user kept off our prefix fails here.
        left = backend.broker.left_behind(backend.broker.queues(backend.queues))
        scripts_refused = backend.broker.script_refusals()
    except BrokerRefused as exc:
        # Commands that wait for Redis must not wait for this: no retry fixes a password.
        return [
            Error(
                f"{where}: cannot be used, and no wait fixes it: {exc}",
                hint="Fix what the message names: LOCATION (scheme, host, port, user, "
                "password, database number, TLS query), OPTIONS['cluster'] or "
                "OPTIONS['sentinel'], or the ACL rules of that user.",
                id=REFUSED,
            )
        ]
    except BrokerUnavailable as exc:
        if waited:
            return []
        return [
            Error(
                f"{where}: Redis is not usable: {exc}",
                hint=_unreachable_hint(backend.settings),
                id=UNREACHABLE,
            )
        ]
    return [
        *_scripting_messages(where, scripts_refused),
        *each_server(where, backend.settings, infos, _server_messages),
        *_layout_messages(where, backend.settings, left),
    ]


def _unreachable_hint(settings: BackendSettings) -> str:
    """Return what to do about a Redis that could not be reached. Under Sentinel, LOCATION's
    host and port are never used: the sentinels name the primary."""
    if settings.sentinel is None:
        return "Start Redis, or fix LOCATION (host, port, user, password)."
    return (
        "Start the sentinels and the primary they name (or wait for them to promote a replica), "
        "or fix OPTIONS['sentinel']['sentinels']; LOCATION's host and port are not used under "
        "Sentinel."
    )


type ServerCheck = Callable[[str, BackendSettings, dict[str, Any]], list[CheckMessage]]


def each_server(
    where: str, settings: BackendSettings, infos: dict[str, dict[str, Any]], check: ServerCheck
) -> list[CheckMessage]:
    """Return what ``check`` says of the INFO of each server (``Broker.servers_info``), each
    message once. On a Redis Cluster every primary is checked, having settings of its own, and
    a message names after ``where`` the primaries it holds on: "(Redis Cluster primaries
    10.0.0.2:6379 and 10.0.0.3:6379)", or "(every Redis Cluster primary)". Under Sentinel it
    names the primary the sentinels named: "(the primary the sentinels named, 10.0.0.2:6379)",
    as LOCATION's host is not used."""
    nodes_of: dict[tuple[Any, ...], tuple[CheckMessage, list[str]]] = {}
    for node, info in infos.items():
        for message in check(where, settings, info):
            same = (type(message), message.msg, message.hint, message.id)
            nodes_of.setdefault(same, (message, []))[1].append(node)
    if len(infos) > 1:
        return [
            _on_nodes(message, where, _cluster_nodes(nodes, every=len(nodes) == len(infos)))
            for message, nodes in nodes_of.values()
        ]
    if settings.sentinel is None or not (primary := next(iter(infos))):
        return [message for message, _ in nodes_of.values()]
    on = f"the primary the sentinels named, {primary}"
    return [_on_nodes(message, where, on) for message, _ in nodes_of.values()]


def _cluster_nodes(nodes: list[str], *, every: bool) -> str:
    """Return how a message names the Redis Cluster primaries ``nodes`` it holds on."""
    if every:
        return "every Redis Cluster primary"
    return f"Redis Cluster primar{'ies' if len(nodes) > 1 else 'y'} {listed_names(nodes)}"


def _on_nodes(message: CheckMessage, where: str, on: str) -> CheckMessage:
    """Return ``message``, which starts with ``where``, naming the servers ``on`` after it."""
    named = copy(message)
    named.msg = f"{where} ({on}){message.msg.removeprefix(where)}"
    return named


def _server_messages(
    where: str, settings: BackendSettings, info: dict[str, Any]
) -> list[CheckMessage]:
    """Return what the checks say of one server's INFO (``Broker.server_info``)."""
    return [
        *_version_messages(where, info),
        *role_messages(where, settings, info),
        *_durability_messages(where, info),
        *durability_mode_messages(where, settings, info),
        *_size_messages(where, settings, info),
        *_unverified_messages(where, settings, info),
    ]


def _scripting_messages(where: str, refused: dict[str, str]) -> list[CheckMessage]:
    """Refuse a Redis that refuses a command our scripts go by (renamed away, an ACL with
    ``-@scripting``) as one that refuses the credentials: no wait fixes it, and the worker and
    the reaper stop at start with exit code 4 (docs/worker.md, Exit codes)."""
    if not refused:
        return []
    named = "; ".join(f"{command} ({words})" for command, words in refused.items())
    return [
        Error(
            f"{where}: every enqueue and every worker call runs a Lua script, and this Redis "
            f"refuses a command that sends one, {named}: tasks could not be enqueued or run, "
            "and no wait fixes it.",
            hint="Let EVALSHA, EVAL and SCRIPT through: do not rename them away "
            "(rename-command), and grant them to the ACL user ('+evalsha +eval +script|load', "
            "or '+@scripting').",
            id=REFUSED,
        )
    ]


def _unverified_messages(
    where: str, settings: BackendSettings, info: dict[str, Any]
) -> list[CheckMessage]:
    """Say what ``threadmill.W001``, ``W006`` and ``E006`` could not read where Redis refused
    CONFIG GET (a managed Redis, an ACL with ``-@dangerous``), rather than pass it over as fine."""
    if not (refused := info.get("config_refused")):
        return []
    unread = ["proto-max-bulk-len and client-query-buffer-limit (threadmill.W006)"]
    if str(info.get("aof_enabled", "0")) == "0":
        unread.insert(0, "whether RDB snapshots are on, with the AOF off (threadmill.W001)")
    if settings.durability is Durability.FSYNC:
        unread.append("whether appendfsync is 'no', which WAITAOF never confirms (threadmill.E006)")
    return [
        Info(
            f"{where}: Redis refused CONFIG GET ({refused}), so these were not checked: "
            f"{'; '.join(unread)}.",
            hint="Check them in your provider's settings: persistence on, both limits above "
            "OPTIONS['max_payload_bytes'] and OPTIONS['max_result_bytes'] (Redis's defaults, 512 "
            "MB and 1 GB, are). Or let this user run CONFIG GET (not renamed away; ACL "
            "'+config|get') for the checks to read them.",
            id="threadmill.I001",
        )
    ]


def _layout_messages(
    where: str, settings: BackendSettings, left: dict[str, dict[int, int]]
) -> list[CheckMessage]:
    """Warn of tasks ``left`` under a shard count ``queue_shards`` no longer gives their queue
    (``Broker.left_behind``): workers, the reaper and ``get_result`` never look there."""
    return [
        Warning(
            f"{where}: queue {queue!r} holds {held} waiting, delayed or running task(s) stored "
            f"under {_shard_count(stored)}, but OPTIONS['queue_shards'] gives it "
            f"{_shard_count(settings.shards_of(queue))}: no worker or reaper with these "
            "settings runs or reaps them, and get_result does not find them.",
            hint=f"Keep a worker and threadmill_reap running with OPTIONS['queue_shards'] "
            f"{_shard_setting(queue, stored)} until this warning is gone (docs/scaling.md, "
            "Changing the shard count).",
            id="threadmill.W008",
        )
        for queue, by_count in left.items()
        for stored, held in by_count.items()
    ]


def _shard_count(shards: int) -> str:
    return "no shards" if shards == 1 else f"{shards} shards"


def _shard_setting(queue: str, shards: int) -> str:
    return f"without {queue!r}" if shards == 1 else f"{{{queue!r}: {shards}}}"


def _size_messages(
    where: str, settings: BackendSettings, info: dict[str, Any]
) -> list[CheckMessage]:
    """Warn when Redis refuses a payload, a result or a finish call the limits here allow: an
    enqueue fails, and a task whose result Redis refuses ends FAILED (unknown without
    CONFIG: nothing; docs/reliability.md, Redis settings we require)."""
    bulk, buffer = info.get("proto_max_bulk_len"), info.get("client_query_buffer_limit")
    finish_call = max(settings.max_result_bytes, FINISH_CALL_CHARS) + REQUEST_OVERHEAD_BYTES
    # A payload is one argument of an enqueue: Redis reads each large one into a buffer of
    # its own, so client-query-buffer-limit bounds the largest, not their sum.
    limits = (
        ("proto-max-bulk-len", bulk, settings.max_result_bytes, RESULT_REFUSED),
        ("client-query-buffer-limit", buffer, finish_call, RESULT_REFUSED),
        ("proto-max-bulk-len", bulk, settings.max_payload_bytes, PAYLOAD_REFUSED),
        (
            "client-query-buffer-limit",
            buffer,
            settings.max_payload_bytes + REQUEST_OVERHEAD_BYTES,
            PAYLOAD_REFUSED,
        ),
    )
    return [
        Warning(
            f"{where}: Redis takes nothing over {name} {limit} bytes, and {refused.carrier} may "
            f"carry {carried}: {refused.outcome}.",
            hint=f"Raise {name} in redis.conf, or lower OPTIONS[{refused.option!r}] below it.",
            id="threadmill.W006",
        )
        for name, limit, carried, refused in limits
        if limit is not None and limit < carried
    ]


def _version_messages(where: str, info: dict[str, Any]) -> list[CheckMessage]:
    version = str(info.get("redis_version", "0"))
    if _version(version) >= MIN_REDIS_VERSION:
        return []
    return [
        Error(
            f"{where}: Redis {version} is too old; django-threadmill needs Redis 6.2 or newer.",
            hint="Upgrade Redis to 6.2+ (or Valkey 7.2+).",
            id="threadmill.E002",
        )
    ]


def role_messages(
    where: str, settings: BackendSettings, info: dict[str, Any]
) -> list[CheckMessage]:
    """A read-only replica refuses every write: every enqueue, acquire and ack would fail."""
    if info.get("role") != "slave" or not info.get("slave_read_only", 1):
        return []
    primary = f"{info.get('master_host', '?')}:{info.get('master_port', '?')}"
    hint = (
        "Point LOCATION at the primary, or use OPTIONS['sentinel'] to follow the primary "
        "through failovers."
    )
    if settings.sentinel is not None:  # the sentinels named it: LOCATION's host is not used
        hint = (
            "The sentinels name this replica as the primary: wait for the failover to finish; "
            "if it lasts, it was made a replica behind their back: make it a primary again "
            f"(REPLICAOF NO ONE) or run SENTINEL FAILOVER {settings.sentinel.service_name}."
        )
    return [
        Error(
            f"{where}: Redis is a read-only replica of {primary}, which refuses every enqueue "
            "and every worker's writes.",
            hint=hint,
            id="threadmill.E013",
        )
    ]


def _cluster_messages(
    where: str, settings: BackendSettings, info: dict[str, Any]
) -> list[CheckMessage]:
    """A node of a Redis Cluster serves only its own slots: without OPTIONS['cluster'], the
    queues whose slots live elsewhere fail every call with MOVED, the others seem to work."""
    if settings.cluster or str(info.get("cluster_enabled", "0")) != "1":
        return []
    return [
        Error(
            f"{where}: Redis is a node of a Redis Cluster, but OPTIONS['cluster'] is not set: "
            "every call for a key of another node's slots fails (MOVED).",
            hint="Set OPTIONS['cluster'] = True for this backend.",
            id="threadmill.E015",
        )
    ]


def _durability_messages(where: str, info: dict[str, Any]) -> list[CheckMessage]:
    messages: list[CheckMessage] = []
    policy = str(info.get("maxmemory_policy", "noeviction"))
    if policy in VOLATILE_POLICIES:
        messages.append(
            Warning(
                f"{where}: maxmemory-policy is {policy!r}, so Redis may evict what expires: "
                "finished results before result_ttl, and unique tasks' claims (an equal "
                "enqueue then stores a second task).",
                hint="Set 'maxmemory-policy noeviction' in redis.conf.",
                id="threadmill.W002",
            )
        )
    elif policy != "noeviction":
        messages.append(
            Error(
                f"{where}: maxmemory-policy is {policy!r}, so Redis may evict queued tasks.",
                hint="Set 'maxmemory-policy noeviction' in redis.conf (CONFIG SET works too).",
                id="threadmill.E003",
            )
        )
    if str(info.get("aof_enabled", "0")) == "0" and info.get("save_configured") is False:
        messages.append(
            Warning(
                f"{where}: persistence is off (no AOF, no RDB snapshots): a Redis restart "
                "loses every queued task and result.",
                hint="Enable 'appendonly yes' (with appendfsync everysec or always) in redis.conf.",
                id="threadmill.W001",
            )
        )
    return messages


def durability_mode_messages(
    where: str, settings: BackendSettings, info: dict[str, Any]
) -> list[CheckMessage]:
    """Check that the server can confirm writes the way OPTIONS['durability'] asks."""
    version = str(info.get("redis_version", "0"))
    if settings.durability is Durability.FSYNC and _version(version) < MIN_WAITAOF_VERSION:
        return [
            Error(
                f"{where}: durability='fsync' needs WAITAOF, which Redis {version} lacks.",
                hint="Upgrade to Redis or Valkey 7.2+, or use durability='replicated'.",
                id="threadmill.E005",
            )
        ]
    if refused := info.get("confirmation_refused"):
        command, others = CONFIRMATION[settings.durability]
        return [
            Error(
                f"{where}: durability='{settings.durability}' sends {command} after every "
                f"write, and this Redis refuses it ({refused}): every enqueue would store its "
                "task and fail, and no worker could write an outcome.",
                hint=f"Let {command} through: do not rename it away (rename-command), and grant "
                f"it to the ACL user ('+{command.lower()}'); or use durability={others}.",
                id="threadmill.E005",
            )
        ]
    if settings.durability is Durability.FSYNC and str(info.get("aof_enabled", "0")) == "0":
        return [
            Error(
                f"{where}: durability='fsync' needs the AOF, and appendonly is off: every "
                "enqueue would fail.",
                hint="Set 'appendonly yes' in redis.conf (CONFIG SET works too).",
                id="threadmill.E006",
            )
        ]
    if settings.durability is Durability.FSYNC and info.get("appendfsync") == "no":
        return [
            Error(
                f"{where}: durability='fsync' needs the AOF fsynced, and appendfsync is 'no', "
                "which leaves it to the kernel: WAITAOF never confirms a write, so every "
                "enqueue would wait OPTIONS['durability_timeout'] and fail.",
                hint="Set 'appendfsync everysec' (or always) in redis.conf (CONFIG SET works "
                "too), or use durability='replicated' or 'local'.",
                id="threadmill.E006",
            )
        ]
    if settings.durability is Durability.REPLICATED and not int(info.get("connected_slaves", 0)):
        return [
            Warning(
                f"{where}: durability='replicated' but no replica is connected: enqueues and "
                "acks fail until one is.",
                hint="Connect a replica (REPLICAOF), or use durability='local'.",
                id="threadmill.W003",
            )
        ]
    return []
