"""The end of a session: the table, the targets checked, JSON in benchmarks/results/."""

import json
import sys
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..peers.base import config_text
from .records import BurstRecord, DrainRecord, LatencyRecord, Spread, Summary, summarise
from .targets import REFERENCE, target_lines

RESULTS_DIR = Path(__file__).resolve().parents[1] / "results"


@dataclass(slots=True)
class Session:
    """Everything one `pytest benchmarks` run measured, and where it ran."""

    mode: str
    environment: dict[str, Any] = field(default_factory=dict)
    drains: list[DrainRecord] = field(default_factory=list)
    latencies: list[LatencyRecord] = field(default_factory=list)
    bursts: list[BurstRecord] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # peer -> why

    def summaries(self) -> list[Summary]:
        return summarise(self.drains)


def config_name(summary: Summary) -> str:
    """The row's worker configuration as its test id prints it, then its variant."""
    base = config_text(
        summary.processes, summary.threads, summary.max_threads, summary.async_concurrency
    )
    return f"{base} {summary.variant}" if summary.variant else base


def reference_for(summary: Summary, summaries: list[Summary]) -> Summary | None:
    """dramatiq's summary with as many processes and tasks in flight, in the same variant."""
    return next(
        (
            other
            for other in summaries
            if other.peer == REFERENCE
            and (other.processes, other.variant) == (summary.processes, summary.variant)
            and other.in_flight == summary.in_flight
        ),
        None,
    )


def ratio(value: float, reference: float) -> str:
    return f"{value / reference:.2f}x" if reference else "-"


def spread_text(summary: Summary, name: str) -> str:
    spread = summary.figures[name]
    return f"{spread.median:,.0f} ({spread.low:,.0f}-{spread.high:,.0f})"


def optional(summary: Summary, name: str, fmt: str) -> str:
    return format(summary[name], fmt) if name in summary.figures else "-"


def ratios(summary: Summary, summaries: list[Summary], name: str) -> str:
    reference = reference_for(summary, summaries)
    return ratio(summary[name], reference[name]) if reference else "-"


def drain_table(summaries: list[Summary]) -> list[str]:
    """The main table: one row per queue and configuration."""
    header = (
        f"{'queue':<28} {'config':<19} {'tasks':>6}  {'tasks/s median (min-max)':<26} "
        f"{'x dramatiq':>10} {'ideal/s':>7} {'marginal/s':>10} {'x dramatiq':>10} "
        f"{'worker us':>9} {'total us':>8} {'redis us':>8} {'cmds':>6} {'scripts':>7} {'RTs':>5} "
        f"{'enqueue/s':>9} {'start s':>7} {'peak MiB':>8}"
    )
    lines = [header, "-" * len(header)]
    for summary in summaries:
        ideal = f"{summary.ideal_rate:,.0f}" if summary.ideal_rate else "-"
        lines.append(
            f"{summary.label:<28} {config_name(summary):<19} {summary.tasks:>6}  "
            f"{spread_text(summary, 'rate'):<26} {ratios(summary, summaries, 'rate'):>10} "
            f"{ideal:>7} {summary['marginal_rate']:>10,.0f} "
            f"{ratios(summary, summaries, 'marginal_rate'):>10} "
            f"{summary['worker_cpu_us']:>9.0f} "
            f"{optional(summary, 'worker_cpu_total_us', '.0f'):>8} "
            f"{optional(summary, 'redis_cpu_us', '.1f'):>8} "
            f"{optional(summary, 'commands', '.2f'):>6} "
            f"{optional(summary, 'script_calls', '.3f'):>7} "
            f"{optional(summary, 'round_trips', '.3f'):>5} {summary['enqueue_rate']:>9,.0f} "
            f"{summary['startup_s']:>7.2f} {optional(summary, 'rss_peak_mb', '.0f'):>8}"
        )
    return lines


def latency_table(latencies: list[LatencyRecord]) -> list[str]:
    lines = [f"{'queue':<28} {'latency':<8} {'n':>5} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}"]
    for record in latencies:
        lines.append(
            f"{record.label:<28} {record.kind:<8} {record.count:>5} {record.p50_ms:>8.2f} "
            f"{record.p99_ms:>8.2f} {record.max_ms:>8.2f}"
        )
    return lines


def burst_table(bursts: list[BurstRecord]) -> list[str]:
    """One row per burst style and variant: medians (rate with its range) over the rounds."""
    groups: dict[tuple[str, str, str], list[BurstRecord]] = {}
    for record in bursts:
        groups.setdefault((record.label, record.style, record.variant), []).append(record)
    header = (
        f"{'queue':<20} {'burst':<8} {'variant':<10} {'tasks':>6}  "
        f"{'tasks/s median (min-max)':<26} {'errors':>6} {'scripts':>7} {'redis us':>8}"
    )
    lines = [header, "-" * len(header)]
    for (label, style, variant), runs in groups.items():
        rate = Spread.of([run.rate for run in runs])
        scripts = Spread.of([run.script_calls for run in runs]).median
        redis_us = Spread.of([run.redis_cpu_us for run in runs]).median
        lines.append(
            f"{label:<20} {style:<8} {variant:<10} {runs[0].tasks:>6}  "
            f"{f'{rate.median:,.0f} ({rate.low:,.0f}-{rate.high:,.0f})':<26} "
            f"{sum(run.errors for run in runs):>6} {scripts:>7.4f} {redis_us:>8.1f}"
        )
    lines += [
        "   enqueue bursts from one process: async = concurrent aenqueue in one event loop,",
        "   threads = enqueue calls from many threads; coalesced is the product, plain sends one",
        "   call per task; scripts: script calls per task (at least the round trips per task).",
    ]
    return lines


def render(session: Session) -> str:
    """The whole report as text: environment, tables, targets, skipped peers."""
    summaries = session.summaries()
    lines = ["", "== django-threadmill benchmarks (" + session.mode + ")"]
    lines += [f"   {name}: {value}" for name, value in session.environment.items()]
    lines += ["", *drain_table(summaries)]
    lines += [
        "   tasks/s: spawn to last result stored; marginal/s: after the first 1,000;",
        "   worker us: worker CPU per task; redis us: Redis CPU per task; cmds: Redis commands",
        "   per task (inside scripts too); scripts: script calls per task; RTs: round trips per",
        "   task counted by the delay proxy (rtt runs only); start s: spawn to first result.",
        "   config: processes x threads. fresh project: ours with the root logger on a console",
        "   handler and no django.tasks logger set, at -v 1. django-vtasks stores no results:",
        "   its tasks count as done once acknowledged (off its queue and processing lists).",
        "   1x2-64: an elastic pool of 2 to 64 threads (--max-threads); 1x4+500: 4 threads and",
        "   500 async tasks in flight on the event-loop lane (--async-concurrency); 1x500 async:",
        "   500 threads (ours without the lane: one task per thread, on its own event loop),",
        "   dramatiq's AsyncIO middleware (a thread waits on each task), django-vtasks'",
        "   --concurrency. ideal/s: tasks in flight / the task's wait (sleep 5 ms, async 20 ms).",
        "   peak MiB: the worker tree's resident memory, the highest of the polls' samples.",
    ]
    if session.latencies:
        lines += ["", *latency_table(session.latencies)]
    if session.bursts:
        lines += ["", *burst_table(session.bursts)]
    if session.mode != "full":
        lines += [
            "",
            f"   ({session.mode} run: sizes are not the full run's; read no verdict into it)",
        ]
    lines += ["", *target_lines(summaries, session.drains, session.latencies, session.bursts)]
    lines += [f"   skipped {peer}: {why}" for peer, why in session.skipped.items()]
    return "\n".join(lines)


def write_json(session: Session, path: Path | None = None) -> Path:
    """Write every record and summary to benchmarks/results/<mode>-<UTC time>.json."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    path = path or RESULTS_DIR / f"{session.mode}-{stamp}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {
        "mode": session.mode,
        "environment": session.environment,
        "summaries": [asdict(summary) for summary in session.summaries()],
        "drains": [asdict(record) for record in session.drains],
        "latencies": [asdict(record) for record in session.latencies],
        "bursts": [asdict(record) for record in session.bursts],
        "skipped": session.skipped,
    }
    path.write_text(json.dumps(document, indent=2) + "\n")
    return path


def read_json(path: Path) -> Session:
    """Load a session written by write_json."""
    document = json.loads(path.read_text())
    session = Session(mode=document["mode"], environment=document["environment"])
    session.drains = [DrainRecord(**record) for record in document["drains"]]
    session.latencies = [LatencyRecord(**record) for record in document["latencies"]]
    # Files written before the burst benchmark existed (30 Nov) have no "bursts".
    session.bursts = [BurstRecord(**record) for record in document.get("bursts", [])]
    session.skipped = document["skipped"]
    return session


def main() -> None:
    """Print the report of a results file again: python -m benchmarks.harness.report FILE.json."""
    print(render(read_json(Path(sys.argv[1]))))


if __name__ == "__main__":
    main()
