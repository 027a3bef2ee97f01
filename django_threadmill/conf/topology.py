"""Read the LOCATION and OPTIONS that say how to reach Redis and how durable a write is.

``LOCATION`` names the server, ``connection_options`` reach redis-py's connections, ``cluster``
and ``sentinel`` choose redis-py's own clients (docs/scaling.md); ``durability`` says what an
acknowledged enqueue or ack batch must have reached first.
"""

import difflib
import inspect
import re
import ssl
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import cache, lru_cache
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import redis
import redis.asyncio
import redis.asyncio.connection
import redis.cluster
import redis.connection
from redis.connection import parse_url

from ..codec.text import digits_int
from ..exceptions import ImproperlyConfiguredThreadmill
from ..wording import shown as shown_value
from .bounds import ONE_DAY, POOL_RULES, ValueReader, option, read_seconds

SENTINEL_AUTH_KEYS = frozenset({"username", "password"})
SENTINEL_KEYS = ("service_name", "sentinels", "username", "password", "ssl")
# The keyword arguments of a TLS connection (LOCATION's query, connection_options) that the
# connections to the sentinels take too: their certificates are checked as the primary's.
TLS_ARGUMENT_PREFIX = "ssl_"
REDIS_URL_SCHEMES = ("redis://", "rediss://", "unix://")
URL_EXAMPLES = (
    "'redis://localhost:6379/0', 'rediss://user:password@host:6380/0' or 'unix:///run/redis.sock'"
)
# What no host name holds, whitespace and control characters aside: the characters RFC 3986
# leaves out of every part of a URI. Anything else is left to the resolver: IDNA names,
# underscores (container names), an IPv6 literal in brackets (urllib checks it).
NOT_IN_A_HOST = frozenset('<>"{}|\\^`')
DROPPED_BY_URLLIB = "\t\r\n"  # from anywhere in a URL, as WHATWG's URL standard says
PORTS = range(1, 65536)  # TCP ports; urlsplit reads 0, which redis-py takes as "no port"
# Query arguments of a Redis URL that hold a secret: password, ssl_password.
SECRET_QUERY_ARGUMENT = re.compile(r"([^&=]*password=)[^&]*", re.IGNORECASE)
QUERY_VALUE = re.compile(r"([^&=]*=)[^&]*")
# What comes before a host's "@" in a LOCATION written without "//" (``user:password@host``).
NO_SCHEME_USERINFO = re.compile(r"^[^/?#]*@")
# Query arguments of LOCATION that redis-py applies over the keyword arguments the backend passes
# (from_url lets the URL win), and the setting each belongs in: there it is read, bounded and
# known to the worker, whose idle wait must fit in the socket timeout (README, Settings).
QUERY_OVERRIDES = {
    "socket_timeout": option("socket_timeout"),
    "socket_connect_timeout": option("socket_connect_timeout"),
    "max_connections": option("max_connections"),
    "timeout": option("pool_timeout"),
    "health_check_interval": option("connection_options", "health_check_interval"),
}
# Connection classes per LOCATION scheme, sync and asyncio: the keyword arguments they take.
CONNECTION_CLASSES = {
    "redis": (redis.connection.Connection, redis.asyncio.connection.Connection),
    "rediss": (redis.connection.SSLConnection, redis.asyncio.connection.SSLConnection),
    "unix": (
        redis.connection.UnixDomainSocketConnection,
        redis.asyncio.connection.UnixDomainSocketConnection,
    ),
}
KEYWORD_KINDS = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
# Query arguments a connection needs as a number, which redis-py before 8.0 passes on from the
# URL as text: every sync call then failed with a bare TypeError (docs/reliability.md, Bad input:
# the catalogue).
NUMBERS_IN_QUERY = ("socket_read_size",)
# How alike a key must be to a valid one to be offered as the fix (difflib's ratio, 0-1): below,
# 'socket_keepalive' would suggest 'socket_read_size'.
CLOSE_MATCH = 0.8
PROTOCOL = "protocol"
PROTOCOLS = (2, 3)  # the RESP versions redis-py speaks, as it reads them (int())
CERT_REQS_OPTION = "ssl_cert_reqs"
# The TLS certificate requirements redis-py names, as written in a query or connection_options.
CERT_REQS = ("none", "optional", "required")
# A pool's argument, a class: a query gives it as text, which the pool called for each connection.
CONNECTION_CLASS = "connection_class"
POOL_TIMEOUT = "timeout"  # BlockingConnectionPool's; the broker drops it where a client has none
# What the backend sets itself and relies on: it reads every reply as text, decoded strictly from
# UTF-8. decode_responses=False made each result read as a damaged record, to delete; another
# encoding failed the first enqueue with redis-py's NoScriptError.
SET_BY_BACKEND = frozenset({"decode_responses", "encoding", "encoding_errors"})


def _taken(takes: Callable[[object], bool], fix: str) -> ValueReader:
    """Return a reader of a value redis-py checks only as it connects: the value if ``takes``
    says redis-py takes it, or None (its default); else it raises naming where the value came
    from and ``fix``. redis-py refused a bad one at each connect, after the checks passed."""

    def read(where: str, value: object) -> object:
        if value is None or takes(value):
            return value
        raise ImproperlyConfiguredThreadmill(
            f"{where} is {shown_value(value)}. {fix}, or leave it out for redis-py's default."
        )

    return read


def _protocol_of(value: object) -> int | None:
    """Return ``value`` as the whole number redis-py reads it as, None if it reads none."""
    if isinstance(value, str):
        return digits_int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _verify_mode(value: object) -> bool:
    """Tell whether ``value`` is an ``ssl.CERT_*`` value (a bool is not one, though it equals
    0 or 1)."""
    return isinstance(value, int) and not isinstance(value, bool) and value in tuple(ssl.VerifyMode)


# The connection_options values judged here, by the rule of the option each overrides (the broker
# merges them over OPTIONS), or as seconds redis-py reads: a bad one failed at the first call
# with redis-py's bare TypeError or ValueError, or read as no timeout.
CONNECTION_VALUES: dict[str, ValueReader] = {
    "socket_timeout": POOL_RULES["socket_timeout"],
    "socket_connect_timeout": POOL_RULES["socket_connect_timeout"],
    POOL_TIMEOUT: POOL_RULES["pool_timeout"],
    "max_connections": POOL_RULES["max_connections"],
    # redis-py's PING before a connection idle this long; 0 turns it off (our default is 30 s).
    "health_check_interval": lambda where, v: read_seconds(where, v, ONE_DAY, allow_zero=True),
    # A RESP version redis-py does not speak failed each connect with a ConnectionError, read
    # as Redis being unreachable, waited for without end.
    PROTOCOL: _taken(lambda v: _protocol_of(v) in PROTOCOLS, "Use 2 (RESP2) or 3 (RESP3)"),
    # A TLS certificate requirement it does not know failed each with a bare RedisError.
    CERT_REQS_OPTION: _taken(
        lambda v: v in CERT_REQS or _verify_mode(v),
        "Use 'required', 'optional' or 'none' (or an ssl.CERT_* value in connection_options)",
    ),
}
# The query arguments whose values are judged here, as in connection_options: redis-py refused a
# bad one only at each connect.
QUERY_VALUES: dict[str, ValueReader] = {
    name: CONNECTION_VALUES[name] for name in (PROTOCOL, CERT_REQS_OPTION)
}


class Durability(StrEnum):
    """What a write must reach before the call that made it returns."""

    LOCAL = "local"  # the primary's memory (and its AOF policy), as on one Redis
    REPLICATED = "replicated"  # also at least one replica: WAIT 1
    FSYNC = "fsync"  # also the primary's AOF on disk: WAITAOF 1 0 (Redis/Valkey 7.2+)


@dataclass(frozen=True, slots=True)
class SentinelSettings:
    """Where the sentinels are and which service they watch."""

    service_name: str
    sentinels: tuple[tuple[str, int], ...]
    # username/password of the sentinels; kept out of repr, which may end up in logs.
    auth: dict[str, str] = field(default_factory=dict, repr=False)
    ssl: bool | None = None  # TLS to the sentinels, as given; None: as LOCATION's scheme says
    # The TLS arguments of the connections to the sentinels (``with_sentinel_tls``), None for
    # plain text; out of repr, as ssl_password may be one.
    tls: dict[str, Any] | None = field(default=None, repr=False)


def read_cluster(value: object) -> tuple[str, bool]:
    if not isinstance(value, bool):
        raise ImproperlyConfiguredThreadmill(
            f"OPTIONS['cluster'] is {value!r}. Use True for a Redis Cluster (LOCATION names "
            "any node) or False for one Redis."
        )
    return "cluster", value


def read_durability(value: object) -> tuple[str, Durability]:
    if isinstance(value, str):  # Durability(value) refuses anything else with ValueError too
        try:
            return "durability", Durability(value)
        except ValueError:
            pass
    choices = ", ".join(repr(mode.value) for mode in Durability)
    raise ImproperlyConfiguredThreadmill(
        f"OPTIONS['durability'] is {value!r}. Use one of {choices}."
    )


def read_sentinel(value: object) -> tuple[str, SentinelSettings]:
    example = (
        "e.g. {'service_name': 'mymaster', 'sentinels': [('10.0.0.1', 26379)], 'password': '...'}"
    )
    if not isinstance(value, dict):
        raise ImproperlyConfiguredThreadmill(
            f"OPTIONS['sentinel'] is {value!r}. Use a dict, {example}."
        )
    unknown = set(value) - set(SENTINEL_KEYS)
    if unknown:
        raise ImproperlyConfiguredThreadmill(
            f"OPTIONS['sentinel'] has unknown keys {sorted(unknown)}. Use "
            f"{', '.join(SENTINEL_KEYS)}, {example}."
        )
    service_name = value.get("service_name")
    if not isinstance(service_name, str) or not service_name:
        raise ImproperlyConfiguredThreadmill(
            f"OPTIONS['sentinel']['service_name'] is {service_name!r}. Use the name the "
            f"sentinels monitor, {example}."
        )
    return "sentinel", SentinelSettings(
        service_name=service_name,
        sentinels=_sentinel_addresses(value.get("sentinels"), example),
        auth=_sentinel_auth(value, example),
        ssl=_sentinel_ssl(value.get("ssl")),
    )


def _sentinel_ssl(value: object) -> bool | None:
    if value is not None and not isinstance(value, bool):
        raise ImproperlyConfiguredThreadmill(
            f"OPTIONS['sentinel']['ssl'] is {value!r}. Use True when the sentinels take TLS, "
            "False when they take plain text, or leave it out to do as LOCATION's scheme says "
            "(rediss://: TLS)."
        )
    return value


def with_sentinel_tls(
    sentinel: SentinelSettings, location: str, connection_options: dict[str, Any]
) -> SentinelSettings:
    """Return ``sentinel`` with the TLS arguments of the connections to the sentinels: the
    ``ssl_*`` arguments of LOCATION's query and ``connection_options``, as the primary's, when
    ``ssl`` is True, or left out under a rediss:// LOCATION. redis-py's Sentinel reaches the
    sentinels in plain text unless told: a rediss:// LOCATION sent the sentinels' password in
    clear, and sentinels that take only TLS could not be reached."""
    wanted = sentinel.ssl if sentinel.ssl is not None else location.startswith("rediss://")
    if not wanted:
        return replace(sentinel, tls=None)
    return replace(sentinel, tls=tls_arguments(location, connection_options))


def tls_arguments(location: str, connection_options: dict[str, Any]) -> dict[str, Any]:
    """Return the ``ssl_*`` arguments of ``connection_options`` and LOCATION's query, which
    wins, as redis-py's ``from_url`` lets it: the TLS set-up of the primary's connections."""
    given = {**connection_options, **parse_url(location)}
    return {key: value for key, value in given.items() if key.startswith(TLS_ARGUMENT_PREFIX)}


def _sentinel_auth(value: dict[Any, Any], example: str) -> dict[str, str]:
    """Return the sentinels' username and password; None means none, as when left out."""
    auth = {key: value[key] for key in sorted(SENTINEL_AUTH_KEYS & set(value))}
    for key, given in auth.items():
        if given is not None and not isinstance(given, str):
            raise ImproperlyConfiguredThreadmill(
                f"OPTIONS['sentinel'][{key!r}] is {type(given).__name__}. Use a string, or "
                f"None when the sentinels need no AUTH, {example}."
            )
    return {key: given for key, given in auth.items() if given is not None}


def _sentinel_addresses(value: object, example: str) -> tuple[tuple[str, int], ...]:
    addresses: list[tuple[str, int]] = []
    for address in value if isinstance(value, list | tuple) else ():
        match address:
            case (str() as host, int() as port) if not isinstance(port, bool):
                if port not in PORTS:
                    raise _bad_port(f"OPTIONS['sentinel']['sentinels'] has {address!r}", example)
                addresses.append((host, port))
            case _:
                break
    else:
        if addresses:
            return tuple(addresses)
    raise ImproperlyConfiguredThreadmill(
        f"OPTIONS['sentinel']['sentinels'] is {value!r}. Use a list of (host, port) pairs, "
        f"{example}."
    )


def check_topology(options: dict[str, Any]) -> None:
    """Refuse settings that ask for a Redis Cluster and a Sentinel at once."""
    if options.get("cluster") and options.get("sentinel") is not None:
        raise ImproperlyConfiguredThreadmill(
            "OPTIONS sets both 'cluster' and 'sentinel'. A Redis Cluster fails over by itself: "
            "keep 'cluster': True and drop 'sentinel', or the other way round."
        )


def read_location(alias: str, location: object) -> str:
    """Return ``location`` if redis-py can connect with it as meant, else raise with the fix.

    redis-py raises a bare ValueError for a port past 65535 or a query value it cannot read,
    takes port 0 for "no port", ignores a database path that is not a number (db 0 then), and
    lets a query argument override the backend's own timeouts and pool size: each is refused
    here instead. Query keys are checked against the client in ``check_connection_options``.
    """
    where = _where(alias)
    if not isinstance(location, str) or not location.startswith(REDIS_URL_SCHEMES):
        raise ImproperlyConfiguredThreadmill(
            f"{where} is {_masked_value(location)}. Use a Redis URL such as {URL_EXAMPLES}."
        )
    _check_brackets(where, location)
    if _userinfo_cut_short(location):  # first: the other errors would show the password
        cut = location.partition("=")[0].rindex("@")
        raise ImproperlyConfiguredThreadmill(
            f"{where} is '{urlsplit(location).scheme}://***{location[cut:]}', whose user or "
            "password holds '#', '/' or '?', which end the address in a URL. Percent-encode "
            "them, e.g. urllib.parse.quote(password, safe='') gives 'p%23ss' for 'p#ss'."
        )
    _check_as_written(where, location)
    shown = f"{where} is {masked_location(location)!r}"
    _check_host(shown, location)
    try:
        port = urlsplit(location).port
        port_usable = port is None or port in PORTS
    except ValueError:  # not a number, or past 65535
        port_usable = False
    if not port_usable:
        raise _bad_port(shown, "e.g. 'redis://localhost:6379/0'")
    for db in _databases(location):
        if digits_int(db) is None:
            raise ImproperlyConfiguredThreadmill(
                f"{shown}, whose database {db!r} is not a whole number. Use a database number "
                "from 0 up, e.g. 'redis://localhost:6379/0' or 'unix:///run/redis.sock?db=0'."
            )
    _check_query_values(shown, parse_qs(urlsplit(location).query))  # blanks dropped, as redis-py
    try:
        parsed = parse_url(location)
    except ValueError as exc:  # "Invalid value for 'socket_keepalive' in connection URL."
        raise ImproperlyConfiguredThreadmill(
            f"{shown}: {exc} Fix that query argument or drop it."
        ) from exc
    _check_numbers_read(shown, parsed)
    return location


def _check_query_values(shown: str, query: dict[str, list[str]]) -> None:
    """Refuse a query argument redis-py would apply over the backend's own setting, a
    connection class, or a value of ``QUERY_VALUES`` it cannot take, as written (redis-py
    before 8.0 passes it on as text)."""
    for argument, values in query.items():
        if argument in QUERY_OVERRIDES:
            raise ImproperlyConfiguredThreadmill(
                f"{shown}, whose query sets {argument!r}, which redis-py would apply over the "
                f"backend's own setting. Set {QUERY_OVERRIDES[argument]} instead and drop it "
                "from LOCATION."
            )
        if argument == CONNECTION_CLASS:
            raise ImproperlyConfiguredThreadmill(
                f"{shown}, whose query sets {argument!r}, which a URL gives as text, not a "
                "class. Drop it: the scheme chooses the connection, rediss:// for TLS and "
                "unix:// for a socket."
            )
        if argument in QUERY_VALUES:  # redis-py reads the first
            QUERY_VALUES[argument](f"{shown}, whose query argument {argument!r}", values[0])


def _check_numbers_read(shown: str, parsed: dict[str, Any]) -> None:
    """Refuse a query argument in ``NUMBERS_IN_QUERY`` that this redis-py left as text."""
    for argument in NUMBERS_IN_QUERY:
        if isinstance(parsed.get(argument), str):
            raise ImproperlyConfiguredThreadmill(
                f"{shown}, whose query sets {argument!r}, which redis-py {redis.__version__} "
                "passes on as text, failing every call (redis-py 8.0+ reads it as a number). "
                f"Set {option('connection_options', argument)} to a number instead and drop "
                "it from LOCATION, or upgrade redis-py."
            )


def check_cluster_location(alias: str, location: str) -> None:
    """Refuse a LOCATION a Redis Cluster client cannot use: a Unix socket, or a database but 0.

    redis-py refuses either when it builds the client, at the first call, which read as a
    cluster mid-failover whose call may have been applied.
    """
    shown = f"{_where(alias)} is {masked_location(location)!r}"
    if urlsplit(location).scheme == "unix":
        raise ImproperlyConfiguredThreadmill(
            f"{shown}, a Unix socket, but OPTIONS['cluster'] is True: redis-py reaches the "
            "nodes of a Redis Cluster over TCP only. Name a node, e.g. 'redis://node1:7000'."
        )
    for db in _databases(location)[:1]:  # the one redis-py reads; read_location checked it
        if int(db) != 0:
            raise ImproperlyConfiguredThreadmill(
                f"{shown}, whose database is {db}, but OPTIONS['cluster'] is True: a Redis "
                "Cluster has database 0 only. Use 0, e.g. 'redis://node1:7000/0', and give "
                "each project sharing the cluster its own OPTIONS['key_prefix']."
            )


def _where(alias: str) -> str:
    return f"TASKS[{alias!r}]['LOCATION']"


def _check_brackets(where: str, location: str) -> None:
    """Refuse a '[' or ']' that encloses no IPv6 host, a password's most often: urllib raised
    a bare ValueError for it ("Invalid IPv6 URL"), whose words may quote the password, so
    neither they nor LOCATION are shown."""
    try:
        urlsplit(location)
    except ValueError:
        raise ImproperlyConfiguredThreadmill(
            f"{where} holds a '[' or ']' that does not enclose an IPv6 host. Write an IPv6 "
            "host in brackets, e.g. 'redis://[::1]:6379/0', and percent-encode them in a user "
            "or password: urllib.parse.quote(password, safe='') gives 'p%5Bss' for 'p[ss'."
        ) from None


def _userinfo_cut_short(location: str) -> bool:
    """Tell whether a '#', '/' or '?' in the user or password ended the address: an '@' comes
    after it, before any query value (which may hold one), and the host is what came before."""
    address = urlsplit(location).netloc
    return bool(address) and "@" not in address and "@" in location.partition("=")[0]


def _check_as_written(where: str, location: str) -> None:
    """Refuse a tab or line break before the end of ``location``: urllib drops them wherever
    they are, so 'redis://bad\\thost/0' reached 'badhost' (one at the end, as a value read from
    a file ends, is dropped harmlessly). It is shown as urllib reads it: masked as written, its
    password would not be found to mask."""
    if not any(char in DROPPED_BY_URLLIB for char in location.rstrip(DROPPED_BY_URLLIB)):
        return
    read = location.translate(str.maketrans("", "", DROPPED_BY_URLLIB))
    raise ImproperlyConfiguredThreadmill(
        f"{where} holds a tab or line break, which a URL cannot hold: it reads as "
        f"{masked_location(read)!r}, with it dropped. Remove it from LOCATION (and "
        "percent-encode one a password holds: urllib.parse.quote(password, safe=''))."
    )


def _check_host(shown: str, location: str) -> None:
    """Refuse a host of redis:// or rediss:// that holds a character no host name holds
    (whitespace, a control character, one of ``NOT_IN_A_HOST``), as redis-py reads it,
    percent-decoded: it could never be reached, so it read as Redis unreachable, and a worker
    and ``threadmill_health --redis-down-ok`` waited for it for ever. A unix:// URL names its
    socket by its path."""
    parts = urlsplit(location)
    if parts.scheme == "unix" or not parts.hostname:
        return
    host = unquote(parts.hostname)
    bad = next((char for char in host if _not_in_a_host(char)), None)
    if bad is not None:
        raise ImproperlyConfiguredThreadmill(
            f"{shown}, whose host {host!r} holds {bad!r}, which no host name holds (a space, a "
            'control character, or one of <>"{}|\\^`), so Redis could never be reached. Write '
            "the server's name or address, e.g. 'redis://redis.internal:6379/0' or "
            "'redis://[::1]:6379/0'."
        )


def _not_in_a_host(char: str) -> bool:
    return char.isspace() or unicodedata.category(char) == "Cc" or char in NOT_IN_A_HOST


def _databases(location: str) -> list[str]:
    """Return the database numbers ``location`` gives, as written: in its query, the one
    redis-py uses, then in its path."""
    parts = urlsplit(location)
    found = parse_qs(parts.query).get("db", [])[:1]  # redis-py reads the first
    path = unquote(parts.path).replace("/", "")  # as redis-py reads it; a unix path is the socket
    return [*found, path] if path and parts.scheme != "unix" else found


def _bad_port(shown: str, example: str) -> ImproperlyConfiguredThreadmill:
    return ImproperlyConfiguredThreadmill(
        f"{shown}, whose port is not a number from 1 to 65535. Use a port in that range, {example}."
    )


@lru_cache(maxsize=64)  # one LOCATION per backend, masked once: every Redis call names it
def masked_location(location: str) -> str:
    """Return ``location`` with its passwords shown as ``***``: a repr or error may be logged.

    A user without a password (``redis://secret@host``) is masked too: it is most often a
    password written where the user goes, and would be logged in clear.
    """
    parts = urlsplit(location)
    if parts.username or parts.password:  # as text: urlunsplit drops the "//" of unix:///path
        userinfo, _, address = parts.netloc.rpartition("@")
        user = userinfo.partition(":")[0] if parts.password else ""
        location = location.replace(parts.netloc, f"{user}:***@{address}", 1)
    base, mark, query = location.partition("?")
    return base + mark + SECRET_QUERY_ARGUMENT.sub(r"\1***", query)


def _masked_value(location: object) -> str:
    """Return the repr of a LOCATION refused for its scheme with its passwords masked: a URL
    of another scheme (``valkey://``), one without a scheme (``user:password@host``),
    and each URL of a list or tuple (copied from ``CACHES``, which takes several)."""
    if isinstance(location, list | tuple):
        masked = [_masked_text(item) if isinstance(item, str) else item for item in location]
        return repr(masked if isinstance(location, list) else tuple(masked))
    return repr(_masked_text(location) if isinstance(location, str) else location)


def _masked_text(location: str) -> str:
    """Return ``location`` as ``masked_location`` shows it, a user and password written
    without a scheme (``user:password@host``, which urllib reads as a path) as ``***`` too."""
    return NO_SCHEME_USERINFO.sub("***@", masked_location(location))


def masked_connection_options(options: dict[str, Any]) -> dict[str, Any]:
    """Return ``options`` with each password's value (``password``, ``ssl_password``) shown as
    ``***``, as ``masked_location`` shows LOCATION's."""
    return {
        key: "***" if "password" in str(key).lower() else value for key, value in options.items()
    }


def read_connection_options(value: object) -> tuple[str, dict[str, Any]]:
    """Return ``connection_options`` with its timeouts and pool size judged as the options they
    override are, a timedelta given as seconds (redis-py takes numbers); the keys are checked
    against the client once LOCATION is known (``check_connection_options``)."""
    if not isinstance(value, dict):
        raise ImproperlyConfiguredThreadmill(
            f"OPTIONS['connection_options'] is {value!r}. Use a dict of keyword arguments "
            "for redis.BlockingConnectionPool.from_url()."
        )
    options = dict(value)
    for key, given in value.items():
        if key in CONNECTION_VALUES:
            options[key] = CONNECTION_VALUES[key](option("connection_options", key), given)
    return "connection_options", options


def check_connection_options(
    alias: str, location: str, options: dict[str, Any], *, cluster: bool
) -> None:
    """Refuse a ``connection_options`` key or LOCATION query argument redis-py's client for
    this LOCATION does not take.

    redis-py would raise a bare TypeError for it at the first call (a sync Redis Cluster
    would drop it unsaid), so the key is named here, with the closest valid one.
    """
    query = parse_qs(urlsplit(location).query)
    if not options and not query:  # as in most projects: no need to read redis-py's signatures
        return
    scheme = urlsplit(location).scheme
    valid = _cluster_keys() if cluster else _connection_keys(scheme)
    client = "RedisCluster" if cluster else f"connection pools for {scheme}://"
    in_query = f"{_where(alias)} is {_query_values_masked(location)!r}, whose query"
    for holder, keys in ((in_query, list(query)), (option("connection_options"), list(options))):
        for key in keys:
            if key in SET_BY_BACKEND:
                raise ImproperlyConfiguredThreadmill(
                    f"{holder} has {key!r}, which the backend sets itself: it reads every Redis "
                    "reply as text decoded from UTF-8. Drop it."
                )
            if key not in valid:
                close = difflib.get_close_matches(str(key), valid, n=1, cutoff=CLOSE_MATCH)
                fix = f"Did you mean {close[0]!r}?" if close else f"Use one of {', '.join(valid)}."
                raise ImproperlyConfiguredThreadmill(
                    f"{holder} has {key!r}, which is no argument of both redis-py's sync and "
                    f"asyncio {client}. {fix}"
                )


def _query_values_masked(location: str) -> str:
    """Return ``location`` as ``masked_location`` shows it, every query value as ``***``: an
    argument redis-py does not take may be a misspelt secret (``ssl_pasword=``), and the error
    naming it needs no value."""
    base, mark, query = masked_location(location).partition("?")
    return base + mark + QUERY_VALUE.sub(r"\1***", query)


@cache
def _connection_keys(scheme: str) -> tuple[str, ...]:
    """Return the keyword arguments both redis-py pools (sync, asyncio) and their connections
    for ``scheme`` take, but those the backend sets itself, sorted."""
    sync_class, async_class = CONNECTION_CLASSES[scheme]
    sync = _init_keys(redis.BlockingConnectionPool) | _init_keys(sync_class)
    asyncio = _init_keys(redis.asyncio.BlockingConnectionPool) | _init_keys(async_class)
    return tuple(sorted((sync & asyncio) - SET_BY_BACKEND))


@cache
def _cluster_keys() -> tuple[str, ...]:
    """Return the keyword arguments both redis-py RedisCluster clients take, but those the
    backend sets itself, sorted."""
    allowed = set(redis.cluster.REDIS_ALLOWED_KEYS) - set(redis.cluster.KWARGS_DISABLED_KEYS)
    sync = _init_keys(redis.RedisCluster) | allowed  # it passes these on to its node pools
    asyncio = _init_keys(redis.asyncio.RedisCluster) | {POOL_TIMEOUT}
    return tuple(sorted((sync & asyncio) - SET_BY_BACKEND))


def _init_keys(cls: type) -> set[str]:
    """Return the keyword arguments ``cls()`` takes, up its classes (each passes the rest up)."""
    keys: set[str] = set()
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is not None and klass is not object:
            parameters = inspect.signature(init).parameters.values()
            keys |= {p.name for p in parameters if p.kind in KEYWORD_KINDS and p.name != "self"}
    return keys
