"""How big a benchmark run is: the full comparison, or a smoke run for CI (THREADMILL_BENCH)."""

import os
from dataclasses import dataclass, replace


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchConfig:
    """Sizes of one benchmark session."""

    mode: str  # "full" or "smoke", with "-custom" when a size was overridden
    task_count: int  # echo tasks pre-enqueued per drain run
    slow_task_count: int  # for queues that drain far below 1,000 tasks/s (stated in the table)
    rtt_task_count: int  # tasks per run behind the delay proxy
    mark_count: int  # the marginal rate counts from this many finished tasks onwards
    rounds: int  # rounds per configuration, queues alternating within a round
    judged_rounds: int  # rounds for the runs the targets judge (cases.Case.judged)
    thread_counts: tuple[int, ...]  # worker threads per configuration
    sleep_thread_counts: tuple[int, ...]  # worker threads of the sleep 5 ms rows
    latency_count: int  # single tasks for pickup latency and single enqueue latency
    burst_async_count: int  # concurrent aenqueue calls in one event loop
    burst_threads: int  # enqueuing threads in one process
    burst_thread_calls: int  # enqueue calls per thread
    rtt_ms: float  # round-trip time the delay proxy adds
    poll_interval_s: float  # how often the watcher counts finished tasks
    run_timeout_s: float  # a drain run that takes longer fails with what it saw

    @property
    def smoke(self) -> bool:
        return self.mode.startswith("smoke")


FULL = BenchConfig(
    mode="full",
    task_count=20_000,
    slow_task_count=4_000,
    rtt_task_count=5_000,
    mark_count=1_000,
    rounds=3,
    # The judged ratios sit within the run-to-run spread of a shared 2-core VM (one run in
    # three can be 20-30% off): a median of five is steadier, for about two minutes more.
    judged_rounds=5,
    thread_counts=(1, 4),
    sleep_thread_counts=(1, 4, 32),
    latency_count=1_000,
    burst_async_count=10_000,
    burst_threads=64,
    burst_thread_calls=500,
    rtt_ms=2.0,
    poll_interval_s=0.01,
    run_timeout_s=600.0,
)

SMOKE = BenchConfig(
    mode="smoke",
    task_count=200,
    slow_task_count=100,
    rtt_task_count=100,
    mark_count=50,
    rounds=1,
    judged_rounds=1,
    thread_counts=(1,),
    sleep_thread_counts=(1, 32),
    latency_count=20,
    burst_async_count=500,
    burst_threads=64,
    burst_thread_calls=5,
    rtt_ms=2.0,
    poll_interval_s=0.01,
    run_timeout_s=60.0,
)


# Size overrides for development runs; a session that uses one is labelled "<mode>-custom",
# and only a plain full run rewrites the charts in docs/images/.
OVERRIDES = (
    "THREADMILL_BENCH_N",
    "THREADMILL_BENCH_SLOW_N",
    "THREADMILL_BENCH_RTT_N",
    "THREADMILL_BENCH_ROUNDS",
    "THREADMILL_BENCH_LATENCY_N",
    "THREADMILL_BENCH_BURST_N",
    "THREADMILL_BENCH_BURST_CALLS",
)


def _int_env(name: str, default: int) -> int:
    value = os.environ.get(name)
    return int(value) if value else default


def load_config() -> BenchConfig:
    """Read THREADMILL_BENCH (full or smoke) and the optional size overrides."""
    mode = os.environ.get("THREADMILL_BENCH", "full")
    if mode not in ("full", "smoke"):
        raise ValueError(f"THREADMILL_BENCH={mode!r} is not a mode. Use 'full' or 'smoke'.")
    base = SMOKE if mode == "smoke" else FULL
    overridden = any(os.environ.get(name) for name in OVERRIDES)
    return replace(
        base,
        mode=f"{mode}-custom" if overridden else mode,
        task_count=_int_env("THREADMILL_BENCH_N", base.task_count),
        slow_task_count=_int_env("THREADMILL_BENCH_SLOW_N", base.slow_task_count),
        rtt_task_count=_int_env("THREADMILL_BENCH_RTT_N", base.rtt_task_count),
        rounds=_int_env("THREADMILL_BENCH_ROUNDS", base.rounds),
        judged_rounds=_int_env("THREADMILL_BENCH_ROUNDS", base.judged_rounds),
        latency_count=_int_env("THREADMILL_BENCH_LATENCY_N", base.latency_count),
        burst_async_count=_int_env("THREADMILL_BENCH_BURST_N", base.burst_async_count),
        burst_thread_calls=_int_env("THREADMILL_BENCH_BURST_CALLS", base.burst_thread_calls),
    )
