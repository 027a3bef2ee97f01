"""What ``threadmill_health`` reads: one host's live worker processes, on the Redis clock.

Every worker process renews its leases in each queue it serves as soon as it starts, then once
per ``lease_ttl / 3``, and that renewal is its heartbeat (docs/worker.md, Leases). A process
counts as live while its newest renewal is at most ``lease_ttl`` old by Redis's own clock, as
``threadmill_workers`` counts it, so a host whose clock drifts reads the same answer as every
other.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from django.core.checks import CheckMessage, Error

from ..broker import Broker
from ..broker.inspect import Inspector
from ..checks import ServerCheck, durability_mode_messages, each_server, role_messages
from ..codec.ids import worker_host_and_pid
from ..conf.settings import BackendSettings
from ..conf.topology import Durability, masked_location


class HealthCode(IntEnum):
    """The exit codes of ``threadmill_health`` (docs/deploy.md, Health)."""

    HEALTHY = 0
    TOO_FEW = 1  # fewer live worker processes on this host than --min-processes
    USAGE = 2  # a wrong option or setting (argparse exits 2 on a bad command line too)
    UNREACHABLE = 3  # Redis could not be reached or cannot serve now; or too few live while a
    # queue's heartbeat key holds another type, unread (not passed by --redis-down-ok)
    REFUSED = 4  # Redis refused the credentials or ACL rights, or LOCATION is wrong in a way
    # no wait fixes (TLS, another kind of server): the worker's code 4 too


@dataclass(frozen=True, slots=True, kw_only=True)
class HostHeartbeats:
    """The worker processes of one host as Redis last saw them in some queues."""

    host: str
    lease_ttl_ms: int  # how recent a renewal must be to count
    live: frozenset[str]  # worker ids of this host renewed within lease_ttl
    # How long ago this host's newest renewal or sign-off was; None: none kept. Below 0 when it
    # is dated more than a lease ahead of the Redis clock, which stepped back since.
    last_seen_ms_ago: int | None
    signed_off: bool  # the newest of those is a process signing off as it stopped
    live_elsewhere: int  # live worker processes of other hosts (a --host mismatch shows here)
    unread: tuple[str, ...]  # heartbeat keys of another type, their queue left out of the count


def host_heartbeats(
    inspector: Inspector, queues: Sequence[str], host: str, lease_ttl_ms: int
) -> HostHeartbeats:
    """Read the sightings of ``queues`` and keep what they say about ``host``.

    A process that stopped took its sighting with it (it signs off), so the time its host
    signed off stands in for it in ``last_seen``.
    """
    now_ms = inspector.now_ms()
    live: set[str] = set()
    elsewhere: set[str] = set()
    newest_ms: int | None = None
    # Every live sighting, not only the newest MAX_SIGHTINGS: on a fleet of more, this host's
    # processes rank past them for part of each renewal interval.
    read = inspector.host_sightings(queues, host, now_ms - lease_ttl_ms)
    for sighting in read.sightings:
        here = worker_host_and_pid(sighting.worker_id)[0] == host
        if here:
            newest_ms = max(sighting.last_renewal_ms, newest_ms or 0)
        if sighting.live(now_ms, lease_ttl_ms):
            (live if here else elsewhere).add(sighting.worker_id)
    signed_off = read.signed_off_ms is not None and read.signed_off_ms >= (newest_ms or 0)
    if signed_off:
        newest_ms = read.signed_off_ms
    return HostHeartbeats(
        host=host,
        lease_ttl_ms=lease_ttl_ms,
        live=frozenset(live),
        last_seen_ms_ago=None if newest_ms is None else _ms_ago(now_ms, newest_ms, lease_ttl_ms),
        signed_off=signed_off,
        live_elsewhere=len(elsewhere),
        unread=read.unread,
    )


def _ms_ago(now_ms: int, then_ms: int, lease_ttl_ms: int) -> int:
    """Return how long before ``now_ms`` ``then_ms`` is: 0 for a time up to a lease ahead (a
    renewal made while the probe read), below 0 for one further ahead, made before the Redis
    clock stepped back (``WorkerSighting.live`` does not count it)."""
    ago = now_ms - then_ms
    return ago if ago < -lease_ttl_ms else max(0, ago)


def unconfirmed_writes(broker: Broker) -> str | None:
    """Return why Redis cannot confirm writes as OPTIONS['durability'] asks, else None.

    A worker then retries its first ack batch until Redis can, and renews its leases all
    along, so its heartbeat alone reads healthy while no outcome is written.
    One INFO call (one per Redis Cluster primary), made only for a durability other than
    "local".
    """
    if broker.settings.durability is Durability.LOCAL:
        return None
    return _problems_of(broker, durability_mode_messages)


def writes_refused(broker: Broker) -> str | None:
    """Return why Redis refuses or holds back every write, else None: it is a read-only replica
    (a primary demoted without Sentinel), a primary with no replica in sync under
    min-replicas-to-write (NOREPLICAS), or one whose writes are paused (a FAILOVER under way).
    Its workers renew nothing there and restarting them does not help, so the probe answers as
    for a Redis that cannot serve, not as for workers gone.
    One INFO call (one per Redis Cluster primary), made only when too few processes are live."""
    return _problems_of(broker, _refusal_messages)


def _refusal_messages(
    where: str, settings: BackendSettings, info: dict[str, Any]
) -> list[CheckMessage]:
    """Say each way Redis INFO shows that Redis refuses or holds back every write now."""
    return [
        *role_messages(where, settings, info),
        *_no_replica_in_sync(where, info),
        *_writes_paused(where, info),
    ]


def _no_replica_in_sync(where: str, info: dict[str, Any]) -> list[CheckMessage]:
    """A primary refuses every write (NOREPLICAS) while fewer replicas are in sync than its
    min-replicas-to-write. INFO says how many are (``min_slaves_good_slaves``) only when that
    setting is on, not its value: with none in sync, any value refuses."""
    if info.get("role") != "master" or info.get("min_slaves_good_slaves") != 0:
        return []
    return [
        Error(
            f"{where}: Redis refuses every write (NOREPLICAS): no replica acknowledged it "
            "within its min-replicas-max-lag, and its min-replicas-to-write asks for one at "
            "least.",
            hint="Check its replicas (INFO replication: connected_slaves, each one's lag): it "
            "takes writes again once enough are back in sync, or once a failover promotes one "
            "that is.",
        )
    ]


def _writes_paused(where: str, info: dict[str, Any]) -> list[CheckMessage]:
    """A primary holds every write back while a FAILOVER it runs waits for its replica to catch
    up or hands over (``master_failover_state``, Redis 6.2+), and while a CLIENT PAUSE WRITE
    lasts, which INFO shows only where it has ``paused_actions`` (Valkey 8.1+; Redis 7 does
    not: such a pause past lease_ttl reads as too few, docs/deploy.md, Health)."""
    failover = info.get("master_failover_state", "no-failover")
    if failover != "no-failover":
        return [
            Error(
                f"{where}: Redis holds every write back for a failover under way (FAILOVER, "
                f"master_failover_state={failover}), so no worker can renew its leases.",
                hint="It takes writes again once the failover is over, or aborted (its TIMEOUT, "
                "or FAILOVER ABORT); the workers renew then.",
            )
        ]
    paused = info.get("paused_actions", "none")
    if paused == "none":
        return []
    return [
        Error(
            f"{where}: Redis holds every write back (paused_actions={paused}, paused_reason="
            f"{info.get('paused_reason', '?')}), so no worker can renew its leases.",
            hint="It takes writes again once the pause is over (CLIENT UNPAUSE, or its timeout: "
            f"paused_timeout_milliseconds={info.get('paused_timeout_milliseconds', '?')}); the "
            "workers renew then.",
        )
    ]


def _problems_of(broker: Broker, check: ServerCheck) -> str | None:
    """Return what ``check`` says of Redis INFO (of each primary of a Redis Cluster), each
    message with its hint, or None."""
    settings = broker.settings
    where = f"TASKS[{settings.alias!r}] at {masked_location(settings.location)}"
    problems = each_server(where, settings, broker.servers_info(with_config=False), check)
    return " ".join(f"{problem.msg} {problem.hint}" for problem in problems) or None
