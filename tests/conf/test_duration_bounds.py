"""Durations in OPTIONS stay between 1 ms (a lease: 1 s) and a bound each, and a WAIT ends before
its socket."""

import re
from datetime import timedelta

import pytest
from django.core.exceptions import ImproperlyConfigured

from django_threadmill.conf.settings import BackendSettings, read_settings

# option -> (its bound in seconds, in words, whether None is allowed)
BOUNDS = {
    "lease_ttl": (86400, "1 day", False),
    "result_ttl": (315360000, "10 years", True),
    "socket_timeout": (86400, "1 day", True),
    "socket_connect_timeout": (86400, "1 day", True),
    "pool_timeout": (86400, "1 day", False),
    "durability_timeout": (86400, "1 day", False),
}
# option -> its shortest, where that is not 1 ms
SHORTEST = {"lease_ttl": 1.0}


def options(**values: object) -> BackendSettings:
    return read_settings("default", {"OPTIONS": values})


def message(name: str, shown: str, fix: str) -> str:
    return f"^{re.escape(f'OPTIONS[{name!r}] is {shown}, {fix}')}$"


@pytest.mark.parametrize("name", sorted(set(BOUNDS) - set(SHORTEST)))
@pytest.mark.parametrize("value", [0.0001, timedelta(microseconds=999)])
def test_duration_that_rounds_to_0_ms_is_refused(name: str, value: object) -> None:
    shown = repr(value.total_seconds() if isinstance(value, timedelta) else value)
    fix = "shorter than 1 ms. Use at least 0.001 seconds: Redis counts time in whole milliseconds."
    with pytest.raises(ImproperlyConfigured, match=message(name, shown, fix)):
        options(**{name: value})


@pytest.mark.parametrize("value", [0.001, 0.0001, 0.999, timedelta(milliseconds=999)])
def test_lease_ttl_under_a_second_is_refused(value: object) -> None:
    """A lease is renewed every third of it: a lease of milliseconds lapsed between renewals,
    and its tasks ran dozens of times before they ended FAILED."""
    shown = repr(value.total_seconds() if isinstance(value, timedelta) else value)
    fix = (
        "shorter than 1 second. Use at least 1 second: a worker renews its leases every "
        "lease_ttl / 3, which must leave room for a Redis round trip and a busy process, or "
        "leases lapse while their tasks run and the tasks run again (docs/worker.md, Leases)."
    )
    with pytest.raises(ImproperlyConfigured, match=message("lease_ttl", shown, fix)):
        options(lease_ttl=value)


@pytest.mark.parametrize("name", sorted(BOUNDS))
@pytest.mark.parametrize("value", [1e20, 1e300, timedelta(days=999_999_999)])
def test_duration_past_its_bound_is_refused(name: str, value: object) -> None:
    seconds, words, allow_none = BOUNDS[name]
    shown = repr(value.total_seconds() if isinstance(value, timedelta) else value)
    fix = f"longer than {words}. Use at most {seconds} seconds{' or None' if allow_none else ''}."
    with pytest.raises(ImproperlyConfigured, match=message(name, shown, fix)):
        options(**{name: value})


@pytest.mark.parametrize("name", sorted(BOUNDS))
def test_durations_at_their_bounds_are_taken(name: str) -> None:
    seconds, shortest = BOUNDS[name][0], SHORTEST.get(name, 0.001)
    extra = {"socket_timeout": None} if name == "durability_timeout" else {}
    assert getattr(options(**{name: shortest, **extra}), f"{name}_s") == shortest
    assert getattr(options(**{name: seconds, **extra}), f"{name}_s") == seconds


def test_shortest_durations_are_whole_milliseconds() -> None:
    settings = options(lease_ttl=1, result_ttl=0.001, durability_timeout=0.001)
    assert (settings.lease_ttl_ms, settings.result_ttl_ms, settings.durability_timeout_ms) == (
        1000,
        1,
        1,
    )


@pytest.mark.parametrize("durability", ["replicated", "fsync"])
@pytest.mark.parametrize("durability_timeout", [10, 30])
def test_durability_timeout_not_under_socket_timeout_is_refused(
    durability: str, durability_timeout: float
) -> None:
    fix = (
        f"OPTIONS['durability_timeout'] is {durability_timeout}, not under "
        "OPTIONS['socket_timeout'] (10): a write whose confirmation waits that long would look "
        "like Redis being unreachable. Lower OPTIONS['durability_timeout'] or raise "
        "OPTIONS['socket_timeout']."
    )
    with pytest.raises(ImproperlyConfigured, match=f"^{re.escape(fix)}$"):
        options(durability=durability, durability_timeout=durability_timeout)


def test_durability_timeout_is_checked_against_connection_options() -> None:
    fix = (
        "OPTIONS['durability_timeout'] is 2, not under "
        "OPTIONS['connection_options']['socket_timeout'] (1.5): a write whose confirmation "
        "waits that long would look like Redis being unreachable. Lower "
        "OPTIONS['durability_timeout'] or raise OPTIONS['connection_options']['socket_timeout']."
    )
    with pytest.raises(ImproperlyConfigured, match=f"^{re.escape(fix)}$"):
        options(durability="replicated", connection_options={"socket_timeout": 1.5})


@pytest.mark.parametrize(
    "values",
    [
        {"durability": "replicated", "durability_timeout": 9.5},
        {"durability": "fsync", "durability_timeout": 60, "socket_timeout": None},
        {"durability": "replicated", "durability_timeout": 60, "socket_timeout": 61},
        {"durability": "local", "socket_timeout": 1},  # no WAIT: the 2 s default is unused
    ],
)
def test_durability_timeout_under_socket_timeout_is_taken(values: dict[str, object]) -> None:
    assert options(**values).durability_timeout_s == values.get("durability_timeout", 2.0)
