"""Prometheus metrics of every queue of every ThreadmillTaskBackend, read fleet-wide from Redis.

Needs the ``metrics`` extra (prometheus_client). Gauges are read at scrape time with the
admin inspector's bounded reads; counters and histograms are those the workers' tallies add up
(broker/metrics.py, sent by metrics.lua). docs/observability.md lists every family.
"""

import logging
from collections.abc import Iterator, Sequence

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from ..broker.inspect import Index
from ..broker.inspect.counters import PathCounters, histogram, lifetime
from ..broker.inspect.source import Source
from ..exceptions import BrokerUnavailable
from ..wording import listed_values

logger = logging.getLogger(__name__)
QUEUE_STATES = ("ready", "delayed", "reserved", "running")
OUTCOMES = ("successful", "failed")
# What a scrape says of the queues a Redis Cluster node that does not answer kept it from reading.
UNKNOWN_SET = (
    "Metrics read in the queues in QUEUES alone, as the queue set could not be read, those of "
    "its node left out backend=%r queues=%s error=%s"
)
LEFT_OUT = (
    "Metrics of queues left out of the scrape, their Redis Cluster node does not answer "
    "backend=%r queues=%s error=%s"
)


class _Families:
    """The metric families of one scrape, filled source by source."""

    def __init__(self) -> None:
        queue_labels, task_labels = ["backend", "queue"], ["backend", "queue", "task"]
        self.backend_up = GaugeMetricFamily(
            "threadmill_backend_up",
            "1 when the scrape read the backend's Redis, 0 when it could not (its other "
            "families are then left out).",
            labels=["backend"],
        )
        self.queue_tasks = GaugeMetricFamily(
            "threadmill_queue_tasks",
            "Tasks in the queue now, by state (reserved and running are estimated above "
            "1000 leases).",
            labels=[*queue_labels, "state"],
        )
        self.oldest_ready = GaugeMetricFamily(
            "threadmill_oldest_ready_seconds",
            "How long the longest-waiting READY task has waited since it became ready (0 when "
            "none waits).",
            labels=queue_labels,
        )
        self.queue_paused = GaugeMetricFamily(
            "threadmill_queue_paused",
            "1 while the queue is paused (workers take none of its tasks), else 0.",
            labels=queue_labels,
        )
        self.workers = GaugeMetricFamily(
            "threadmill_workers",
            "Worker processes heard from (a lease renewal or an idle heartbeat) within lease_ttl.",
            labels=["backend"],
        )
        self.worker_threads = GaugeMetricFamily(
            "threadmill_worker_threads",
            "Live worker threads of the worker processes counted by threadmill_workers, summed "
            "(each pool floats between --threads and --max-threads).",
            labels=["backend"],
        )
        self.finished = CounterMetricFamily(
            "threadmill_tasks_finished",
            "Tasks that finished, by outcome (a lease the reaper settled counts as failed).",
            labels=[*task_labels, "outcome"],
        )
        self.retries = CounterMetricFamily(
            "threadmill_retries",
            "Attempts that failed and were scheduled again.",
            labels=task_labels,
        )
        self.expired = CounterMetricFamily(
            "threadmill_leases_expired",
            "Running attempts whose worker went silent, settled by the reaper.",
            labels=task_labels,
        )
        self.run = HistogramMetricFamily(
            "threadmill_task_run_seconds", "Run time of each attempt.", labels=task_labels
        )
        self.wait = HistogramMetricFamily(
            "threadmill_task_wait_seconds",
            "Time from enqueue (or run_after) to the start of the first attempt.",
            labels=task_labels,
        )

    def all(self) -> list[Metric]:
        return [
            self.backend_up,
            self.queue_tasks,
            self.oldest_ready,
            self.queue_paused,
            self.workers,
            self.worker_threads,
            self.finished,
            self.retries,
            self.expired,
            self.run,
            self.wait,
        ]

    def add(self, other: "_Families") -> None:
        """Add the samples ``other`` holds, family by family."""
        for mine, theirs in zip(self.all(), other.all(), strict=True):
            mine.samples.extend(theirs.samples)

    def add_queue(
        self, alias: str, queue: str, counts: dict[str, int], age_s: float, *, paused: bool
    ) -> None:
        for state in QUEUE_STATES:
            self.queue_tasks.add_metric([alias, queue, state], counts.get(state, 0))
        self.oldest_ready.add_metric([alias, queue], age_s)
        self.queue_paused.add_metric([alias, queue], 1 if paused else 0)

    def add_counters(self, alias: str, queue: str, counters: PathCounters) -> None:
        for path, fields in sorted(counters.items()):
            labels = [alias, queue, path]
            for outcome in OUTCOMES:
                self.finished.add_metric([*labels, outcome], fields.get(outcome, 0))
            self.retries.add_metric(labels, fields.get("retry", 0))
            self.expired.add_metric(labels, fields.get("expired", 0))
            for name, family in (("run", self.run), ("wait", self.wait)):
                found = histogram(fields, name)
                cumulative, buckets = 0, []
                for bound, n in zip([*found.bounds_s, float("inf")], found.counts, strict=True):
                    cumulative += n
                    buckets.append((_le(bound), cumulative))
                family.add_metric(labels, buckets, found.sum_s)


def _le(bound: float) -> str:
    return "+Inf" if bound == float("inf") else repr(float(bound))


class ThreadmillCollector:
    """Collect the families of ``sources`` at scrape time (a prometheus_client collector).

    A backend whose Redis cannot be read is left out, its ``threadmill_backend_up`` 0, so
    that the others are still exported; ``unreachable`` holds its error for the view.
    """

    def __init__(self, sources: Sequence[Source]) -> None:
        self.sources = list(sources)
        self.unreachable: list[BrokerUnavailable] = []

    def collect(self) -> Iterator[Metric]:
        families = _Families()
        self.unreachable = []
        for source in self.sources:
            read = _Families()  # all of one backend or none: a read failing midway adds nothing
            try:
                self._collect_source(source, read)
            except BrokerUnavailable as exc:
                logger.warning(
                    "Metrics of backend %r left out of the scrape: %s", source.alias, exc
                )
                self.unreachable.append(exc)
                families.backend_up.add_metric([source.alias], 0)
                continue
            families.add(read)
            families.backend_up.add_metric([source.alias], 1)
        yield from families.all()

    @staticmethod
    def _collect_source(source: Source, families: _Families) -> None:
        """Read one alias: queue gauges, lifetime counters and live workers, each kind of read
        for every queue at once, so the round trips do not grow with the queues.

        Gauges and counters alike sum every shard count a queue was used with, the recorded
        counts read once: after a change of ``queue_shards`` the tasks still waiting or running
        under the old count, and its workers, stay in the gauges (docs/scaling.md, Changing
        the shard count). The queues on a Redis Cluster node that does not answer are left
        out, named in one WARNING per node (``Source.names``)."""
        inspector, names = source.inspector, source.names
        for error, unread in names.unreached_by_node().items():
            # The others are read: one pipeline spanning the node failed the backend's scrape.
            logger.warning(
                UNKNOWN_SET if error is names.unknown else LEFT_OUT,
                source.alias,
                listed_values(unread) or "none",
                error,
            )
        queues = names.served
        now_ms = inspector.now_ms()
        paused = inspector.paused(queues)
        waiting = inspector.waiting(queues, every_count=True)
        leased = inspector.state_splits(queues, Index.LEASES, every_count=True)
        oldest = inspector.oldest_ready_times(
            [q for q, (ready, _) in waiting.items() if ready], every_count=True
        )
        for queue, (ready, delayed) in waiting.items():
            since = oldest.get(queue)
            age_s = 0.0 if since is None else max(0, now_ms - since) / 1000
            counts = {"ready": ready, "delayed": delayed, **leased[queue].counts}
            families.add_queue(source.alias, queue, counts, age_s, paused=queue in paused)
        for queue, counters in lifetime(inspector, queues, now_ms).items():
            families.add_counters(source.alias, queue, counters)
        lease_ms = source.settings.lease_ttl_ms
        alive = {
            sighting.worker_id: sighting.threads
            for sighting in inspector.workers(
                queues, live_from_ms=now_ms - lease_ms, every_count=True
            )
            if sighting.live(now_ms, lease_ms)
        }
        families.workers.add_metric([source.alias], len(alive))
        families.worker_threads.add_metric([source.alias], sum(alive.values()))


def exposition(sources: Sequence[Source]) -> bytes:
    """Return the Prometheus text format of ``sources``' metrics; raise BrokerUnavailable,
    naming each Redis, when none of them could be read (the scrape then fails)."""
    collector = ThreadmillCollector(sources)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    body = generate_latest(registry)
    if collector.unreachable and len(collector.unreachable) == len(collector.sources):
        raise BrokerUnavailable("\n".join(map(str, collector.unreachable)))
    return body
