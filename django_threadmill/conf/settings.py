"""Read a ``TASKS`` entry into typed settings, once, at the settings edge.

``LOCATION`` is the Redis URL (as in ``CACHES``); ``OPTIONS`` holds tuning. Durations accept a
``timedelta`` or a number of seconds, from 1 ms (``lease_ttl``: 1 s) to a bound each. An unknown
option, a wrong type or a value out of bounds raises with the fix.
"""

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from typing import Any

from ..exceptions import ImproperlyConfiguredThreadmill
from ..wording import shown
from .bounds import (
    MAX_BYTES,
    ONE_DAY,
    POOL_RULES,
    SHORTEST_LEASE,
    TEN_YEARS,
    option,
    read_count,
    read_seconds,
)
from .durations import seconds_of, whole_ms
from .limits import QueueLimit, read_queue_limits
from .schedules import Schedule, read_schedules
from .sentinel_url import sentinel_url, sentinel_url_refusal
from .shards import check_sharded_limits, read_queue_shards
from .topology import (
    CLOSE_MATCH,
    Durability,
    SentinelSettings,
    check_cluster_location,
    check_connection_options,
    check_topology,
    masked_connection_options,
    masked_location,
    read_cluster,
    read_connection_options,
    read_durability,
    read_location,
    read_sentinel,
    with_sentinel_tls,
)

DEFAULT_LOCATION = "redis://127.0.0.1:6379/0"
ENTRY_KEYS = ("BACKEND", "LOCATION", "QUEUES", "OPTIONS")  # what a TASKS entry may hold
# Matched whole (fullmatch): a "$" would let a name ending in a line break by.
# Not "." or "..": the admin puts a queue's name in its URLs' paths, where browsers read those
# as "here" and "up" (a queue ".." could not be paused from a browser).
QUEUE_NAME_PATTERN = re.compile(r"(?!\.\.?\Z)[A-Za-z0-9_.-]{1,64}")
KEY_PREFIX_MAX_CHARS = 64  # characters of OPTIONS['key_prefix'], which starts every key
KEY_PREFIX_PATTERN = re.compile(rf"[A-Za-z0-9_.:-]{{1,{KEY_PREFIX_MAX_CHARS}}}")
# A task payload above this many bytes is refused at enqueue (Redis itself allows 512 MB).
DEFAULT_MAX_PAYLOAD_BYTES = 1024 * 1024
# A larger result is refused: Redis takes no string past 512 MB (proto-max-bulk-len), and a
# result is read back whole by every get_result.
DEFAULT_MAX_RESULT_BYTES = 64 * 1024 * 1024
# Connections per pool (one sync pool per process, one asyncio pool per event loop). Coalesced
# enqueues need few; a call that finds all in use waits up to pool_timeout.
DEFAULT_MAX_CONNECTIONS = 50
MIN_TOKEN_CHARS = 16  # a metrics token shorter than this is too easy to guess
# redis-py's names of a client's waits: to connect, for each reply, for a free pooled connection.
REDIS_WAITS = ("socket_timeout", "socket_connect_timeout", "timeout")
NO_LIMIT = QueueLimit()


@dataclass(frozen=True, slots=True, kw_only=True)
class BackendSettings:
    """Everything a backend, broker or worker needs to know about one ``TASKS`` alias."""

    alias: str
    location: str = DEFAULT_LOCATION
    key_prefix: str = "tm"
    lease_ttl_s: float = 60.0
    result_ttl_s: float | None = 86400.0
    max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES
    socket_timeout_s: float | None = 10.0
    socket_connect_timeout_s: float | None = 5.0
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    pool_timeout_s: float = 10.0  # how long a call waits for a free pooled connection
    enqueue_on_commit: bool = False  # write enqueues when the default DB's transaction commits
    connection_options: dict[str, Any] = field(default_factory=dict)
    # Bearer token that may read this alias's metrics without a staff login; kept
    # out of repr, which names the shared broker and may end up in logs.
    metrics_token: str | None = field(default=None, repr=False)
    queue_limits: dict[str, QueueLimit] = field(default_factory=dict)
    queue_shards: dict[str, int] = field(default_factory=dict)  # queue -> shards (shards.py)
    schedules: dict[str, Schedule] = field(default_factory=dict)
    cluster: bool = False
    sentinel: SentinelSettings | None = None
    durability: Durability = Durability.LOCAL
    durability_timeout_s: float = 2.0  # how long WAIT/WAITAOF may take before the call fails

    def __repr__(self) -> str:
        """Show the fields but the metrics token, and LOCATION and connection_options without
        their passwords."""
        shown = {item.name: getattr(self, item.name) for item in fields(self) if item.repr}
        shown["location"] = masked_location(self.location)
        shown["connection_options"] = masked_connection_options(self.connection_options)
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in shown.items())})"

    @property
    def lease_ttl_ms(self) -> int:
        return whole_ms(self.lease_ttl_s)

    @property
    def renewal_s(self) -> float:
        """How often a worker renews its leases: a third of ``lease_ttl`` (docs/worker.md,
        Leases)."""
        return self.lease_ttl_s / 3

    def limit_of(self, queue: str) -> QueueLimit:
        """Return the limits of ``queue``: none unless ``OPTIONS["queue_limits"]`` names it."""
        return self.queue_limits.get(queue, NO_LIMIT)

    def shards_of(self, queue: str) -> int:
        """Return how many shards ``queue`` is split over: 1 unless ``queue_shards`` names it."""
        return self.queue_shards.get(queue, 1)

    @property
    def durability_timeout_ms(self) -> int:
        return whole_ms(self.durability_timeout_s)

    @property
    def result_ttl_ms(self) -> int | None:
        return None if self.result_ttl_s is None else whole_ms(self.result_ttl_s)


def _pool_option(name: str, attribute: str) -> Callable[[object], tuple[str, object]]:
    """Read ``OPTIONS[name]`` into ``attribute`` by its rule, the one an override of it in
    ``connection_options`` is judged by too (``bounds.POOL_RULES``)."""
    return lambda value: (attribute, POOL_RULES[name](option(name), value))


def _flag(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise ImproperlyConfiguredThreadmill(f"OPTIONS[{name!r}] is {value!r}. Use True or False.")
    return value


# Each OPTIONS key's reader: the value -> the BackendSettings field and what it holds.
OPTION_READERS: dict[str, Callable[[object], tuple[str, object]]] = {
    "key_prefix": lambda v: _key_prefix(v),
    "lease_ttl": lambda v: (
        "lease_ttl_s",
        read_seconds(option("lease_ttl"), v, ONE_DAY, at_least=SHORTEST_LEASE),
    ),
    "result_ttl": lambda v: (
        "result_ttl_s",
        read_seconds(option("result_ttl"), v, TEN_YEARS, allow_none=True),
    ),
    "max_payload_bytes": lambda v: (
        "max_payload_bytes",
        read_count(option("max_payload_bytes"), v, MAX_BYTES),
    ),
    "max_result_bytes": lambda v: (
        "max_result_bytes",
        read_count(option("max_result_bytes"), v, MAX_BYTES),
    ),
    "socket_timeout": _pool_option("socket_timeout", "socket_timeout_s"),
    "socket_connect_timeout": _pool_option("socket_connect_timeout", "socket_connect_timeout_s"),
    "max_connections": _pool_option("max_connections", "max_connections"),
    "pool_timeout": _pool_option("pool_timeout", "pool_timeout_s"),
    "enqueue_on_commit": lambda v: ("enqueue_on_commit", _flag("enqueue_on_commit", v)),
    "connection_options": read_connection_options,
    "metrics_token": lambda v: ("metrics_token", _token(v)),
    "queue_limits": lambda v: ("queue_limits", read_queue_limits(v)),
    "queue_shards": lambda v: ("queue_shards", read_queue_shards(v)),
    "schedules": lambda v: ("schedules", read_schedules(v)),
    "cluster": read_cluster,
    "sentinel": read_sentinel,
    "durability": read_durability,
    "durability_timeout": lambda v: (
        "durability_timeout_s",
        read_seconds(option("durability_timeout"), v, ONE_DAY),
    ),
}


def _read_options(options: dict[str, Any]) -> dict[str, Any]:
    read: dict[str, Any] = {}
    for name, value in options.items():
        if name not in OPTION_READERS:
            close = difflib.get_close_matches(str(name).lower(), OPTION_READERS, 1, CLOSE_MATCH)
            guess = f"Did you mean {close[0]!r}? " if close else ""
            known = ", ".join(sorted(OPTION_READERS))
            raise ImproperlyConfiguredThreadmill(
                f"Unknown OPTIONS key {name!r} for ThreadmillTaskBackend. {guess}Known keys: "
                f"{known}."
            )
        attribute, converted = OPTION_READERS[name](value)
        read[attribute] = converted
    check_topology(read)
    check_sharded_limits(read)
    return read


def _key_prefix(value: object) -> tuple[str, str]:
    if not isinstance(value, str) or not KEY_PREFIX_PATTERN.fullmatch(value):
        raise ImproperlyConfiguredThreadmill(
            f"OPTIONS['key_prefix'] is {value!r}. Use 1-{KEY_PREFIX_MAX_CHARS} letters, digits "
            "or '_.:-' (no braces: the prefix sits outside the Redis Cluster hash tag)."
        )
    return "key_prefix", value


def _token(value: object) -> str:
    if not isinstance(value, str) or len(value) < MIN_TOKEN_CHARS:
        raise ImproperlyConfiguredThreadmill(
            f"OPTIONS['metrics_token'] must be a string of at least {MIN_TOKEN_CHARS} "
            "characters (e.g. secrets.token_urlsafe()); leave it out to allow staff users only."
        )
    # A scraper trims the token it sends, and servers read header bytes as Latin-1: any other
    # token could never match. The message leaves the secret out, as repr does.
    if value != value.strip() or not (value.isascii() and value.isprintable()):
        raise ImproperlyConfiguredThreadmill(
            "OPTIONS['metrics_token'] has whitespace at an end or a character that is not "
            "printable ASCII: no Authorization header carries it as written, so every scrape "
            "would be refused. Use printable ASCII with nothing to strip (e.g. "
            "secrets.token_urlsafe()); strip a token read from a file."
        )
    return value


def read_settings(alias: str, params: dict[str, Any]) -> BackendSettings:
    """Build ``BackendSettings`` from one ``TASKS`` entry, raising on anything unusable."""
    _check_entry_keys(alias, params)
    given = params.get("LOCATION", DEFAULT_LOCATION)
    if isinstance(given, str) and sentinel_url(given):
        where = f"TASKS[{alias!r}]['LOCATION']"
        raise ImproperlyConfiguredThreadmill(sentinel_url_refusal(where, given))
    location = read_location(alias, given)
    options = params.get("OPTIONS", {})
    if not isinstance(options, dict):
        raise ImproperlyConfiguredThreadmill(
            f"TASKS[{alias!r}]['OPTIONS'] is {options!r}. Use a dict."
        )
    settings = BackendSettings(alias=alias, location=location, **_read_options(options))
    if settings.cluster:
        check_cluster_location(alias, location)
    check_connection_options(alias, location, settings.connection_options, cluster=settings.cluster)
    _check_durability_timeout(settings)
    if settings.sentinel is None:
        return settings
    sentinel = with_sentinel_tls(settings.sentinel, location, settings.connection_options)
    return replace(settings, sentinel=sentinel)


def _check_entry_keys(alias: str, params: dict[str, Any]) -> None:
    """Refuse a key of the ``TASKS`` entry the backend does not read: a misspelt ``LOCATION``
    sent tasks to the Redis on 127.0.0.1, and an option written beside ``OPTIONS`` (as
    ``KEY_PREFIX`` is in ``CACHES``) was dropped unsaid."""
    for key in params:
        if key in ENTRY_KEYS:
            continue
        name = str(key).lower()
        close = difflib.get_close_matches(str(key).upper(), ENTRY_KEYS, n=1, cutoff=CLOSE_MATCH)
        if name in OPTION_READERS:
            fix = f"Put it in OPTIONS, as {name!r}."
        elif close:
            fix = f"Did you mean {close[0]!r}?"
        else:
            fix = f"Use {', '.join(ENTRY_KEYS)}; tuning goes in OPTIONS."
        raise ImproperlyConfiguredThreadmill(
            f"TASKS[{alias!r}] has {key!r}, which ThreadmillTaskBackend does not read. {fix}"
        )


def _check_durability_timeout(settings: BackendSettings) -> None:
    """Refuse a WAIT/WAITAOF timeout the socket would cut short: the reply comes after it, and a
    read that times out reads as Redis being unreachable."""
    if settings.durability is Durability.LOCAL:  # no WAIT is sent
        return
    name, socket_timeout_s = socket_timeout_of(settings)
    if socket_timeout_s is not None and settings.durability_timeout_s >= socket_timeout_s:
        raise ImproperlyConfiguredThreadmill(
            f"OPTIONS['durability_timeout'] is {settings.durability_timeout_s:g}, not under "
            f"{name} ({socket_timeout_s:g}): a write whose confirmation waits that long would "
            f"look like Redis being unreachable. Lower OPTIONS['durability_timeout'] or raise "
            f"{name}."
        )


def socket_timeout_of(settings: BackendSettings) -> tuple[str, float | None]:
    """Return where the clients' socket timeout comes from and its seconds (None: none).

    ``connection_options`` override ``socket_timeout``, as the broker merges them.
    """
    if "socket_timeout" in settings.connection_options:
        given = settings.connection_options["socket_timeout"]
        return "OPTIONS['connection_options']['socket_timeout']", seconds_of(given)
    return "OPTIONS['socket_timeout']", settings.socket_timeout_s


def waiting_at_most(settings: BackendSettings, timeout_s: float) -> BackendSettings:
    """Return ``settings`` whose clients give up connecting, waiting for a reply and waiting
    for a free pooled connection after ``timeout_s`` each.

    For a call that must not wait as long as the backend's own timeouts (10 s reads by
    default); those ``connection_options`` set override the options, so they go there too.
    """
    return replace(
        settings,
        socket_timeout_s=timeout_s,
        socket_connect_timeout_s=timeout_s,
        pool_timeout_s=timeout_s,
        connection_options={
            **settings.connection_options,
            **dict.fromkeys(REDIS_WAITS, timeout_s),
        },
    )


def check_queue_name(name: object) -> str:
    """Return ``name`` if it is a usable queue name, else raise with the rule, ``name`` cut
    short (one of 10,000 characters, given to a command or enqueue, filled the message)."""
    if not isinstance(name, str) or not QUEUE_NAME_PATTERN.fullmatch(name):
        raise ImproperlyConfiguredThreadmill(
            f"Queue name {shown(name)} is not valid for ThreadmillTaskBackend. Use 1-64 "
            "letters, digits, '_', '.' or '-', other than '.' or '..' (URLs read those as paths)."
        )
    return name
