"""Enqueue bursts from one process: coalesced against one call per task."""

from collections.abc import Callable
from itertools import product

import pytest
import redis
from pytest_benchmark.fixture import BenchmarkFixture

from ..harness.config import BenchConfig, load_config
from ..harness.processes import run_client
from ..harness.records import BurstRecord
from ..harness.redis_stats import cost_between, snapshot
from ..harness.report import Session
from ..peers import Peer, RunContext, peer_named

STYLES = ("async", "threads")
VARIANTS = ("coalesced", "plain")


def burst_argv(peer: Peer, style: str, variant: str, config: BenchConfig) -> list[str]:
    if style == "async":
        numbers = [str(config.burst_async_count)]
    else:
        numbers = [str(config.burst_threads), str(config.burst_thread_calls)]
    return peer.python("-m", "benchmarks.harness.enqueue_burst", style, *numbers, variant)


@pytest.mark.parametrize("round_no", range(load_config().rounds), ids=lambda n: f"round{n}")
@pytest.mark.parametrize(("style", "variant"), list(product(STYLES, VARIANTS)), ids=str)
def test_enqueue_burst(
    style: str,
    variant: str,
    round_no: int,
    bench_config: BenchConfig,
    run_context: Callable[[Peer], RunContext],
    session_record: Session,
    benchmark: BenchmarkFixture,
) -> None:
    """Time one burst in a client process; count its script calls and Redis CPU."""
    peer = peer_named("threadmill")
    context = run_context(peer)
    with redis.Redis.from_url(context.direct_redis_url) as client:
        client.flushall()
        before = snapshot(client)
        report = benchmark.pedantic(
            run_client,
            args=(burst_argv(peer, style, variant, bench_config), peer.process_env(context), 600),
            rounds=1,
            iterations=1,
        )
        cost = cost_between(before, snapshot(client), {})
    tasks = int(report["tasks"]) + 1  # the client's warm-up call is in the Redis counts
    session_record.bursts.append(
        BurstRecord(
            peer=peer.name,
            label=peer.label,
            style=style,
            variant=variant,
            round=round_no,
            tasks=tasks - 1,
            rate=(tasks - 1) / float(report["seconds"]),
            errors=int(report["errors"]),
            script_calls=cost.script_calls / tasks,
            redis_cpu_us=1e6 * cost.cpu_s / tasks,
        )
    )
