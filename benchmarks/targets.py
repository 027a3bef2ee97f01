"""DESIGN.md §6 targets, checked against one session's summaries."""

import statistics
from dataclasses import dataclass

from .records import BurstRecord, LatencyRecord, Summary

OURS = "threadmill"
REFERENCE = "dramatiq"


@dataclass(frozen=True, slots=True)
class Verdict:
    """One target: what was measured against what was asked."""

    target: str
    measured: str
    met: bool | None  # None: not measured in this session


def find(summaries: list[Summary], peer: str, threads: int, variant: str = "") -> Summary | None:
    for summary in summaries:
        if (summary.peer, summary.threads, summary.variant) == (peer, threads, variant):
            return summary
    return None


def versus(summaries: list[Summary], figure: str, threads: int, variant: str = "") -> float | None:
    """Our median ``figure`` over dramatiq's, same configuration."""
    ours, theirs = (
        find(summaries, OURS, threads, variant),
        find(summaries, REFERENCE, threads, variant),
    )
    if ours is None or theirs is None or not theirs[figure]:
        return None
    return ours[figure] / theirs[figure]


def ratio_verdict(
    target: str, value: float | None, at_least: float | None = None, at_most: float | None = None
) -> Verdict:
    if value is None:
        return Verdict(target, "not measured", None)
    met = (at_least is None or value >= at_least) and (at_most is None or value <= at_most)
    return Verdict(target, f"{value:.2f}x", met)


def ablation(summaries: list[Summary], variant: str) -> float | None:
    """Our 1x1 main rate over our 1x1 ``variant`` rate."""
    base, other = find(summaries, OURS, 1), find(summaries, OURS, 1, variant)
    if base is None or other is None:
        return None
    return base["rate"] / other["rate"]


def verdicts(summaries: list[Summary], latencies: list[LatencyRecord]) -> list[Verdict]:
    """Every §6 target this session can speak to."""
    found = [
        ratio_verdict("throughput 1x1 >= 3x dramatiq", versus(summaries, "rate", 1), at_least=3),
        ratio_verdict(
            "  the same, marginal rate", versus(summaries, "marginal_rate", 1), at_least=3
        ),
        ratio_verdict("throughput 1x4 >= 3x dramatiq", versus(summaries, "rate", 4), at_least=3),
        ratio_verdict(
            "  the same, marginal rate", versus(summaries, "marginal_rate", 4), at_least=3
        ),
        ratio_verdict(
            "Redis CPU/task 1x1 <= 0.3x dramatiq", versus(summaries, "redis_cpu_us", 1), at_most=0.3
        ),
        ratio_verdict(
            "Redis CPU/task 1x4 <= 0.3x dramatiq", versus(summaries, "redis_cpu_us", 4), at_most=0.3
        ),
        ratio_verdict(
            "ack writer vs --sync-ack, 1x1 >= 2x", ablation(summaries, "sync-ack"), at_least=2
        ),
    ]
    rtt = find(summaries, OURS, 1, "rtt")
    if rtt is not None and "round_trips" in rtt.figures:
        trips = rtt["round_trips"]
        found.append(Verdict("worker round trips/task <= 0.1", f"{trips:.3f}", trips <= 0.1))
    else:
        found.append(Verdict("worker round trips/task <= 0.1", "not measured", None))
    found += pickup_verdicts(latencies)
    found.append(bulk_verdict(summaries))
    found.append(memory_verdict(summaries))
    return found


def pickup_verdicts(latencies: list[LatencyRecord]) -> list[Verdict]:
    ours = [record for record in latencies if record.peer == OURS and record.kind == "pickup"]
    if not ours:
        return [Verdict("pickup latency p50 < 2 ms, p99 < 10 ms", "not measured", None)]
    record = ours[0]
    return [
        Verdict(
            "pickup latency p50 < 2 ms, p99 < 10 ms",
            f"p50 {record.p50_ms:.2f} ms, p99 {record.p99_ms:.2f} ms",
            record.p50_ms < 2 and record.p99_ms < 10,
        )
    ]


def bulk_verdict(summaries: list[Summary]) -> Verdict:
    ours = find(summaries, OURS, 1)
    if ours is None:
        return Verdict("bulk enqueue >= 20,000 tasks/s", "not measured", None)
    rate = ours["enqueue_rate"]
    return Verdict("bulk enqueue >= 20,000 tasks/s", f"{rate:,.0f}/s", rate >= 20_000)


def memory_verdict(summaries: list[Summary]) -> Verdict:
    """Worker tree RSS at the mark and at the last result: a trend, not the 1M-task proof."""
    target = "worker memory flat over 1M tasks"
    ours = find(summaries, OURS, 1)
    if ours is None or "rss_first_mb" not in ours.figures or "rss_late_mb" not in ours.figures:
        return Verdict(target, "not measured", None)
    first, late = ours["rss_first_mb"], ours["rss_late_mb"]
    return Verdict(target, f"RSS {first:.0f} -> {late:.0f} MiB, 1,000 -> 90% done", None)


# Issue 11: enqueue bursts from one process, per style: (tasks/s at least, label).
BURST_TARGETS = {"async": (20_000, "async burst"), "threads": (15_000, "64-thread burst")}
BURST_ROUND_TRIPS = 0.1  # script calls per task, an upper bound on round trips


def burst_verdicts(bursts: list[BurstRecord]) -> list[Verdict]:
    """Our coalesced bursts: none refused, the rate, and round trips per task."""
    found = []
    for style, (at_least, label) in BURST_TARGETS.items():
        target = f"enqueue {label} >= {at_least:,}/s"
        runs = [r for r in bursts if (r.peer, r.style, r.variant) == (OURS, style, "coalesced")]
        if not runs:
            found.append(Verdict(target, "not measured", None))
            continue
        rate = statistics.median(run.rate for run in runs)
        errors = sum(run.errors for run in runs)
        trips = statistics.median(run.script_calls for run in runs)
        measured = f"{rate:,.0f}/s, {errors} refused, {trips:.4f} RT/task"
        met = rate >= at_least and errors == 0 and trips <= BURST_ROUND_TRIPS
        found.append(Verdict(target, measured, met))
    return found


def target_lines(
    summaries: list[Summary], latencies: list[LatencyRecord], bursts: list[BurstRecord]
) -> list[str]:
    marks = {True: "met", False: "NOT MET", None: "-"}
    lines = [f"{'DESIGN.md §6 target':<42} {'measured':<38} verdict"]
    for verdict in [*verdicts(summaries, latencies), *burst_verdicts(bursts)]:
        lines.append(f"{verdict.target:<42} {verdict.measured:<38} {marks[verdict.met]}")
    return lines
