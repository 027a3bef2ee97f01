"""Redis server costs of a run: commands and CPU from INFO deltas (docs/benchmarks.md, Method)."""

from dataclasses import dataclass

import redis

# Commands the harness itself sends (snapshots); they are left out of the per-task counts.
HARNESS_COMMANDS = frozenset({"info", "config|resetstat", "flushall", "ping", "client|setname"})


@dataclass(frozen=True, slots=True)
class RedisSnapshot:
    """Cumulative server counters at one moment."""

    calls: dict[str, int]  # commandstats calls per command, script-internal calls included
    cpu_s: float  # used_cpu_sys + used_cpu_user of the server process, seconds


@dataclass(frozen=True, slots=True, kw_only=True)
class RedisCost:
    """What one run cost the Redis server."""

    commands: int  # every command executed, calls made inside Lua scripts included
    script_calls: int  # EVAL/EVALSHA/FCALL: one round trip each unless pipelined
    cpu_s: float
    top_commands: dict[str, int]  # the busiest commands, for the profile notes


def snapshot(client: redis.Redis) -> RedisSnapshot:
    """Read INFO commandstats and INFO cpu."""
    stats = client.info("commandstats")
    cpu = client.info("cpu")
    calls = {
        name.removeprefix("cmdstat_"): int(value["calls"])
        for name, value in stats.items()
        if name.startswith("cmdstat_")
    }
    return RedisSnapshot(
        calls=calls, cpu_s=float(cpu["used_cpu_sys"]) + float(cpu["used_cpu_user"])
    )


def cost_between(
    before: RedisSnapshot, after: RedisSnapshot, harness_calls: dict[str, int]
) -> RedisCost:
    """Return the delta, without the harness' own snapshots and polls (``harness_calls``)."""
    delta: dict[str, int] = {}
    for name, calls in after.calls.items():
        count = calls - before.calls.get(name, 0) - harness_calls.get(name, 0)
        if count > 0 and name not in HARNESS_COMMANDS:
            delta[name] = count
    scripts = sum(count for name, count in delta.items() if name in ("eval", "evalsha", "fcall"))
    busiest = dict(sorted(delta.items(), key=lambda item: -item[1])[:8])
    return RedisCost(
        commands=sum(delta.values()),
        script_calls=scripts,
        cpu_s=max(0.0, after.cpu_s - before.cpu_s),
        top_commands=busiest,
    )


def server_version(client: redis.Redis) -> str:
    return str(client.info("server")["redis_version"])
