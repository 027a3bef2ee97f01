"""Say why the sentinels named no primary: all asked again, at once, and each answer named.

redis-py's ``MasterNotFoundError`` lists every sentinel as its client's repr (a screenful each)
and files refused credentials, a service name no sentinel monitors and a plain Redis listed as
a sentinel under one "No master found", which read like an outage. After such a failure (never
on the way of a call that works), each sentinel is asked ``SENTINEL MASTERS`` with the
backend's sentinel credentials, and its answer says what to fix. A setting every sentinel
refuses is ``BrokerRefused``: commands that wait for Redis stop at start, as for a password.

The sentinels are asked at once, not in turn: redis-py's lookup has just waited on each hung
one in turn, and asked in turn again, each hung sentinel held a failed call twice (five of
them held threadmill_health 18 s, past the 10 s its probe is given).
"""

import asyncio
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

import redis
from redis.asyncio.sentinel import MasterNotFoundError as AsyncMasterNotFoundError
from redis.backoff import NoBackoff
from redis.retry import Retry
from redis.sentinel import MasterNotFoundError

from ..conf.topology import SentinelSettings
from ..exceptions import BrokerRefused, BrokerUnavailable
from .tls import dropped_for_its_certificate, tls_fault
from .topology import over_tls
from .wrong_server import other_transport

# Seconds each sentinel is given to connect, then to answer; less if the clients' own timeouts
# are shorter (threadmill_health's --timeout).
PROBE_TIMEOUT_S = 1.0
ASKER_NAME = "threadmill-sentinel-asker"  # the threads that ask the sentinels, one each
# A Redis server's reply to SENTINEL MASTERS: Redis 7 quotes the command with ', 6.2 with `.
NOT_A_SENTINEL = ("unknown command 'SENTINEL'", "unknown command `SENTINEL`")
LIST_SENTINELS = (
    "list the sentinels' addresses (port 26379 by default) in OPTIONS['sentinel']['sentinels']"
)
CONNECT_TIMED_OUT = "Timeout connecting"  # redis-py's words for a connect (or handshake) too slow
SENTINEL_COMMAND = ("'sentinel", "`sentinel")  # in an error reply (lowercased) naming SENTINEL
SENTINEL_SETTINGS = "OPTIONS['sentinel']"
TLS_SET_UP = "the TLS set-up"  # its settings are named in each sentinel's answer
WAIT_OR_FIX = (
    "Wait if a failover is under way; else start the sentinels and the primary, or fix "
    "OPTIONS['sentinel'] (service_name, sentinels, username, password); nothing was written."
)


@dataclass(frozen=True, slots=True)
class Answer:
    """What one sentinel said, as a phrase after its address."""

    said: str
    settled: bool  # a setting is wrong: no wait fixes it
    fixed_in: str = SENTINEL_SETTINGS  # where the setting that ``said`` names is


@contextmanager
def translated_sentinel_errors(
    sentinel: SentinelSettings | None, where: str, timeout_s: float
) -> Iterator[None]:
    """Raise the error ``no_primary`` returns for the sentinels' failures inside the block,
    each sentinel given ``timeout_s`` to connect and to answer.

    redis-py raises ``MasterNotFoundError`` when no sentinel named a primary, but lets a
    sentinel's error reply through (a Redis server's "unknown command 'SENTINEL'", an ACL
    user's NOPERM), which would read as the primary's: the backend sends it no SENTINEL.
    """
    try:
        yield
    except (MasterNotFoundError, AsyncMasterNotFoundError) as exc:
        # The asyncio client's is a class of its own: both are ConnectionErrors, which read
        # as a call that may have been applied, though no primary was found to send it to.
        assert sentinel is not None  # only a Sentinel-managed client raises it
        raise no_primary(sentinel, where, timeout_s) from exc
    except redis.ResponseError as exc:
        if sentinel is None or not any(name in str(exc).lower() for name in SENTINEL_COMMAND):
            raise
        raise no_primary(sentinel, where, timeout_s) from exc


def no_primary(sentinel: SentinelSettings, where: str, timeout_s: float) -> BrokerUnavailable:
    """Return the error for sentinels that named no primary of ``sentinel.service_name``;
    ``where`` is LOCATION as it may be shown (without its password), ``timeout_s`` how long
    each sentinel is given to connect and to answer.

    Inside a running event loop (a sync call made in a coroutine) the sentinels are not asked:
    the sync probe, up to ``timeout_s`` to connect and as long to answer, would hold every
    other coroutine of the loop on each failed call of an outage. ``aenqueue`` and
    ``aget_result`` translate their errors in a worker thread (off_loop.py), where they are
    asked.
    """
    if _in_event_loop():
        return BrokerUnavailable(
            f"No sentinel named a primary for Redis at {where} (No master found for "
            f"{sentinel.service_name!r}). {WAIT_OR_FIX}"
        )
    answers = _ask_all(sentinel, timeout_s)
    found = {address: answer for address, answer in answers.items() if answer is not None}
    if not found:  # every sentinel names it now: a failover ended meanwhile
        return BrokerUnavailable(
            f"No sentinel named a primary for Redis at {where} (No master found for "
            f"{sentinel.service_name!r}), but they do now: retry; nothing was written."
        )
    said = "; ".join(f"{address} {answer.said}" for address, answer in found.items())
    problem = (
        f"No sentinel named a primary for Redis at {where} (No master found for "
        f"{sentinel.service_name!r}: {said})."
    )
    if len(found) == len(answers) and all(answer.settled for answer in found.values()):
        fixed_in = " and ".join(sorted({answer.fixed_in for answer in found.values()}))
        return BrokerRefused(f"{problem} Fix {fixed_in}; nothing was written.")
    return BrokerUnavailable(f"{problem} {WAIT_OR_FIX}")


def _in_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _ask_all(sentinel: SentinelSettings, timeout_s: float) -> dict[str, Answer | None]:
    """Return each sentinel's answer by address, all asked at once, one thread each: the
    answers take ``timeout_s`` in all (twice that for one slow to connect), not per sentinel."""
    addresses = sentinel.sentinels
    with ThreadPoolExecutor(len(addresses), thread_name_prefix=ASKER_NAME) as pool:
        answers = pool.map(partial(_ask, sentinel, timeout_s=timeout_s), addresses)
        return {
            f"{host}:{port}": answer
            for (host, port), answer in zip(addresses, answers, strict=True)
        }


def _ask(
    sentinel: SentinelSettings, address: tuple[str, int], *, timeout_s: float
) -> Answer | None:
    """Return what the sentinel at ``address`` says is wrong, or None if it names a primary."""
    host, port = address
    client = redis.Redis(
        host,
        port,
        socket_timeout=timeout_s,
        socket_connect_timeout=timeout_s,
        retry=Retry(NoBackoff(), 0),
        decode_responses=True,
        username=sentinel.auth.get("username"),
        password=sentinel.auth.get("password"),
    )
    over_tls(client.connection_pool, sentinel.tls, redis.SSLConnection)
    try:
        # A dict by service name (RESP2, redis-py's default); typed as any reply.
        masters: dict[str, dict[str, Any]] = client.sentinel_masters()  # type: ignore[assignment]
    except redis.AuthenticationError as exc:  # a ConnectionError: first
        return Answer(_refused(sentinel, exc), settled=True)
    except redis.exceptions.InvalidResponse as exc:  # an HTTP server, a port taken over
        return Answer(
            f"answered with something that is not the Redis protocol ({exc}): it is no "
            f"sentinel; {LIST_SENTINELS}",
            settled=True,
        )
    except (redis.ConnectionError, redis.TimeoutError) as exc:
        return _unreachable(sentinel, address, exc, timeout_s=timeout_s)
    except redis.exceptions.NoPermissionError as exc:
        return Answer(
            f"refused SENTINEL MASTERS to OPTIONS['sentinel']['username'] ({exc}): grant that "
            "ACL user '+sentinel' in sentinel.conf",
            settled=True,
        )
    except redis.ResponseError as exc:
        if not any(reply in str(exc) for reply in NOT_A_SENTINEL):
            return Answer(f"answered SENTINEL MASTERS with an error ({exc})", settled=False)
        return Answer(
            f"is a Redis server, not a sentinel ({exc}): {LIST_SENTINELS}",
            settled=True,
        )
    finally:
        client.close()
    return _state(sentinel.service_name, masters)


def _unreachable(
    sentinel: SentinelSettings,
    address: tuple[str, int],
    exc: redis.RedisError,
    *,
    timeout_s: float,
) -> Answer:
    """Return the answer of a sentinel that dropped, refused or did not answer the connection:
    one that takes the other transport (TLS or plain text) than its connections use stays so
    until OPTIONS['sentinel']['ssl'] is fixed, and one our TLS set-up fails on until that is."""
    host, port = address
    tls = sentinel.tls is not None
    refused = _tls_refused(sentinel, address, exc, timeout_s=timeout_s)
    if refused is not None:
        return refused
    # A plain-text sentinel waits for the end of a line in a TLS handshake, which times out
    # the connect; any other timeout is a hung sentinel, which a probe would wait on again.
    timed_out = isinstance(exc, redis.TimeoutError)
    hung = timed_out and not (tls and CONNECT_TIMED_OUT in str(exc))
    if hung or not other_transport(host, port, tls=tls):
        return Answer(f"is unreachable ({exc})", settled=False)
    if tls:
        return Answer(
            f"answered in plain text a TLS connection, which it did not take ({exc}): set "
            "OPTIONS['sentinel']['ssl'] to False for sentinels without TLS (a rediss:// "
            "LOCATION reaches the sentinels over TLS too), or list their TLS ports",
            settled=True,
        )
    return Answer(
        f"is a TLS port, which dropped a plain-text connection ({exc}): set "
        "OPTIONS['sentinel']['ssl'] to True (its certificate is checked with the ssl_* "
        "arguments of a rediss:// LOCATION), or list the sentinels' plain-text ports",
        settled=True,
    )


def _tls_refused(
    sentinel: SentinelSettings,
    address: tuple[str, int],
    exc: redis.RedisError,
    *,
    timeout_s: float,
) -> Answer | None:
    """Return the answer of a sentinel whose TLS connection failed on our own set-up (its
    certificate untrusted, a TLS file unreadable, no client certificate where it requires
    one, or one it refuses), or None. The sentinels' TLS arguments are the primary's
    (broker/tls.py)."""
    if sentinel.tls is None:
        return None
    fault = tls_fault(exc, hosts_in="OPTIONS['sentinel']['sentinels']") or (
        dropped_for_its_certificate(address, exc, tls=sentinel.tls, timeout_s=timeout_s)
    )
    if fault is None:
        return None
    problem = f"was not reached: a TLS file {fault.problem}" if fault.of_a_file else fault.problem
    return Answer(f"{problem}: {fault.fix}", settled=True, fixed_in=TLS_SET_UP)


def _refused(sentinel: SentinelSettings, exc: Exception) -> str:
    if not sentinel.auth:
        return (
            f"needs credentials ({exc}): set OPTIONS['sentinel']['password'] (and 'username' "
            "for an ACL user) to the sentinels' own, from sentinel.conf"
        )
    return (
        f"refused the credentials of OPTIONS['sentinel'] ({exc}): set its 'username' and "
        "'password' to the sentinels' own, from sentinel.conf (or drop them if the sentinels "
        "need none); the primary's go in LOCATION"
    )


def _state(service_name: str, masters: dict[str, dict[str, Any]]) -> Answer | None:
    """Return what is wrong with ``service_name`` in a sentinel's SENTINEL MASTERS reply."""
    state = masters.get(service_name)
    if state is None:
        monitored = ", ".join(repr(name) for name in sorted(masters)) or "nothing"
        return Answer(
            f"monitors no {service_name!r} (it monitors {monitored}): set "
            "OPTIONS['sentinel']['service_name'] to the name of its 'sentinel monitor' line",
            settled=True,
        )
    if state["is_master"] and not state["is_sdown"] and not state["is_odown"]:
        return None
    return Answer(
        f"reports the primary {state['ip']}:{state['port']} as {state['flags']}",
        settled=False,
    )
