"""Read the OPTIONS that say how to reach Redis beyond one server and how durable a write is.

``cluster`` and ``sentinel`` choose redis-py's own clients (docs/scaling.md);
``durability`` says what an acknowledged enqueue or ack batch must have reached first.
"""

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from ..exceptions import ImproperlyConfiguredThreadmill

SENTINEL_AUTH_KEYS = frozenset({"username", "password"})


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
    auth: dict[str, str] = field(default_factory=dict)  # username/password of the sentinels


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
    unknown = set(value) - {"service_name", "sentinels", *SENTINEL_AUTH_KEYS}
    if unknown:
        raise ImproperlyConfiguredThreadmill(
            f"OPTIONS['sentinel'] has unknown keys {sorted(unknown)}. Use service_name, "
            f"sentinels, username and password, {example}."
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
        auth={key: str(value[key]) for key in SENTINEL_AUTH_KEYS & set(value)},
    )


def _sentinel_addresses(value: object, example: str) -> tuple[tuple[str, int], ...]:
    addresses: list[tuple[str, int]] = []
    for address in value if isinstance(value, list | tuple) else ():
        match address:
            case (str() as host, int() as port) if not isinstance(port, bool):
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
