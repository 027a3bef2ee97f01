"""Drain runs: every queue, 1x1 and 1x4, our ablations, tasks that wait (sleep 5 ms, async
20 ms) with fixed and elastic pools, and runs behind a 2 ms RTT proxy."""

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from urllib.parse import urlsplit

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from ..harness.cases import RTT, Case, all_cases
from ..harness.config import BenchConfig, load_config
from ..harness.progress import ProgressLine
from ..harness.proxy import ProxyLink, delay_proxy
from ..harness.records import record_drain
from ..harness.report import Session
from ..harness.runner import drain, stage
from ..peers import Peer, RunContext


@contextmanager
def worker_link(
    case: Case, context: RunContext, config: BenchConfig
) -> Iterator[tuple[RunContext, ProxyLink | None]]:
    """For an rtt case, a delay proxy the worker connects through; else the direct context."""
    if case.variant != RTT:
        yield context, None
        return
    target_port = urlsplit(context.redis_url).port
    assert target_port is not None, f"no port in {context.redis_url}"
    with delay_proxy(target_port, config.rtt_ms / 2) as proxy:
        yield replace(context, redis_url=proxy.url), proxy


@pytest.mark.parametrize("case", all_cases(load_config()), ids=str)
def test_drain(
    case: Case,
    bench_config: BenchConfig,
    session_record: Session,
    progress: ProgressLine,
    benchmark: BenchmarkFixture,
    run_context: Callable[[Peer], RunContext],
) -> None:
    """Pre-enqueue, then time one worker until every result is stored."""
    context = run_context(case.peer)
    if reason := case.peer.lacks(case.spec):
        session_record.skipped[f"{case.peer.name} {case.spec.config} {case.variant}".strip()] = (
            reason
        )
        pytest.skip(reason)
    tasks = case.task_count(bench_config)
    enqueue_s = stage(case.peer, case.spec, context, tasks)
    progress.start(str(case))
    with worker_link(case, context, bench_config) as (worker_context, proxy):
        result = benchmark.pedantic(
            drain,
            args=(case.peer, case.spec, worker_context, bench_config, tasks, progress),
            rounds=1,
            iterations=1,
        )
    if proxy is not None:
        result.round_trips = proxy.requests
        session_record.environment["rtt through the proxy"] = f"{proxy.ping_ms:.2f} ms (PING p50)"
    session_record.drains.append(
        record_drain(
            case.peer.name,
            case.peer.label,
            case.spec,
            case.variant,
            case.round_no,
            result,
            enqueue_s,
        )
    )
