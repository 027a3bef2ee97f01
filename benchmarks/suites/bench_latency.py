"""Latency: pickup on an idle worker (ours and dramatiq), and single enqueue (every queue)."""

from collections.abc import Callable

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from ..harness.config import BenchConfig
from ..harness.processes import Worker, run_client
from ..harness.records import LatencyRecord
from ..harness.report import Session
from ..harness.runner import client_argv, stage
from ..peers import PEERS, Peer, RunContext, WorkerSpec

WARM_UP = 10  # pickups before the measured ones: the first waits for the worker to start


def client(peer: Peer, context: RunContext, *args: str) -> list[float]:
    report = run_client(client_argv(peer, *args), peer.process_env(context), timeout_s=300)
    return [float(value) for value in report["latencies_s"]]


@pytest.mark.parametrize("peer", [peer for peer in PEERS if peer.supports_pickup], ids=str)
def test_pickup_latency(
    peer: Peer,
    bench_config: BenchConfig,
    run_context: Callable[[Peer], RunContext],
    session_record: Session,
    benchmark: BenchmarkFixture,
) -> None:
    """Enqueue one task at a time on an idle worker; enqueue to task start, p50/p99."""
    context = run_context(peer)
    spec = WorkerSpec(threads=1, burst=False)
    stage(peer, spec, context, 0)
    worker = Worker(
        peer.worker_argv(spec), peer.process_env(context), context.workdir / "worker.log"
    )
    worker.start()
    try:
        client(peer, context, "pickup", str(WARM_UP))
        count = str(bench_config.latency_count)
        latencies = benchmark.pedantic(
            client, args=(peer, context, "pickup", count), rounds=1, iterations=1
        )
    finally:
        worker.stop()
    session_record.latencies.append(LatencyRecord.of(peer.name, peer.label, "pickup", latencies))


@pytest.mark.parametrize("peer", PEERS, ids=str)
def test_single_enqueue_latency(
    peer: Peer,
    bench_config: BenchConfig,
    run_context: Callable[[Peer], RunContext],
    session_record: Session,
    benchmark: BenchmarkFixture,
) -> None:
    """Time one ``enqueue`` call at a time, as a web request makes it."""
    context = run_context(peer)
    stage(peer, WorkerSpec(threads=1), context, 0)
    count = str(bench_config.latency_count)
    latencies = benchmark.pedantic(
        client, args=(peer, context, "single", count), rounds=1, iterations=1
    )
    session_record.latencies.append(LatencyRecord.of(peer.name, peer.label, "enqueue", latencies))
