"""The accounting invariant: every task settled or visibly queued, none run twice.

Redis says what was recorded; the execution log written by the tasks themselves says what
actually ran. The two are compared task by task, and the stats counters against the records.
"""

import json
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import redis

from django_threadmill.broker import Broker

TASKS = "tests.chaos.tasks."
CHAOS_FAILURE = "tests.chaos.tasks.ChaosFailure"
LEASE_EXPIRED = "django_threadmill.exceptions.LeaseExpired"
STATED_REASONS = {CHAOS_FAILURE, LEASE_EXPIRED}
FINAL = {"successful", "failed"}
# A live worker's outcome refused because a reaper had settled its lapsed lease first: the worker
# was stalled past lease_ttl while a reaper ran on (a loaded machine starves one process more
# than another), and it said so (docs/worker.md, Leases).
FENCED = re.compile(r"pid=(\d+) \S+ Ack not recorded kind=finish task_id=(\S+): settled or held")


@dataclass(frozen=True, slots=True)
class Execution:
    attempt: int
    pid: int


@dataclass(slots=True)
class Ledger:
    """What the audit found; ``problems`` must be empty."""

    tasks: int = 0
    orphans: int = 0  # in Redis though their enqueue raised (the reply was lost)
    successful: int = 0
    failed: int = 0
    queued: int = 0
    executions: int = 0
    duplicates: int = 0  # extra executions, each after a worker died or was fenced out mid-run
    fenced: int = 0  # runs on live workers whose outcome a reaped lease refused (a stall)
    lost: int = 0
    failed_by: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)


def read_executions(log: Path) -> dict[str, list[Execution]]:
    """Parse the tasks' own log: one ``<id> <attempt> <pid>`` line per execution."""
    runs: dict[str, list[Execution]] = defaultdict(list)
    if log.exists():
        for line in log.read_text().splitlines():
            task_id, attempt, pid = line.split()
            runs[task_id].append(Execution(int(attempt), int(pid)))
    return runs


def fenced_outcomes(worker_log: str, killed_pids: set[int]) -> Counter[str]:
    """Count, by task id, the outcomes that processes never killed logged as refused for a
    lease reaped under them: such a run has no recorded outcome, and said why."""
    return Counter(
        task_id for pid, task_id in FENCED.findall(worker_log) if int(pid) not in killed_pids
    )


def _zset_members(client: redis.Redis, broker: Broker, queues: list[str]) -> dict[str, dict]:
    members: dict[str, dict] = {"ready": {}, "delayed": {}, "leases": {}}
    for queue in queues:
        keys = broker.queue_keys(queue)
        for name in members:
            members[name].update(client.zrange(getattr(keys, name), 0, -1, withscores=True))
    return members


def _records(client: redis.Redis, prefix: str) -> dict[str, dict[str, str]]:
    """Return every task record under ``prefix``, by task id."""
    keys = list(client.scan_iter(f"{prefix}:*:t:*", count=1000))
    with client.pipeline(transaction=False) as pipe:
        for key in keys:
            pipe.hgetall(key)
        found = pipe.execute()
    return {key.split(":t:", 1)[1]: record for key, record in zip(keys, found, strict=True)}


def _errors(record: dict[str, str]) -> list[str]:
    """Return the exception class path of each recorded error, in attempt order."""
    count = int(record.get("nerrors") or 0)
    return [json.loads(record[f"error:{n}"])["exception_class_path"] for n in range(1, count + 1)]


class Audit:
    """Check one finished chaos run against the invariant."""

    def __init__(
        self, client: redis.Redis, broker: Broker, killed_pids: set[int], worker_log: str
    ) -> None:
        self.client = client
        self.broker = broker
        self.killed_pids = killed_pids
        self.fenced = fenced_outcomes(worker_log, killed_pids)
        self.ledger = Ledger()

    def problem(self, task_id: str, text: str) -> None:
        self.ledger.problems.append(f"{task_id}: {text}")

    def run(self, enqueued: set[str], log: Path) -> Ledger:
        records = _records(self.client, self.broker.keyspace.key_prefix)
        runs = read_executions(log)
        queues = self.broker.queues()
        members = _zset_members(self.client, self.broker, queues)
        seconds, micros = self.client.time()
        now_ms = seconds * 1000 + micros // 1000
        ledger = self.ledger
        ledger.tasks = len(enqueued)
        ledger.orphans = len(set(records) - enqueued)
        ledger.executions = sum(len(r) for r in runs.values())
        for task_id in enqueued - set(records):
            ledger.lost += 1
            self.problem(task_id, "enqueued but has no record in Redis (lost)")
        for task_id in set(runs) - set(records):
            self.problem(task_id, "ran, but Redis has no record of it")
        for task_id, record in records.items():
            self._check_state(task_id, record, members, now_ms)
            self._check_runs(task_id, record, runs.get(task_id, []))
        self._check_stats(records, queues)
        return ledger

    def _check_state(
        self, task_id: str, record: dict[str, str], members: dict[str, dict], now_ms: int
    ) -> None:
        state = record.get("state")
        indexed = [name for name, ids in members.items() if task_id in ids]
        if state in FINAL:
            if indexed:
                self.problem(task_id, f"{state} but still listed in {indexed}")
            self._check_outcome(task_id, record, state)
            return
        self.ledger.queued += 1
        visible = {
            "ready": indexed in (["ready"], ["delayed"]),
            "reserved": indexed == ["leases"],
            "running": indexed == ["leases"] and members["leases"][task_id] > now_ms,
        }
        if not visible.get(state or "", False):
            self.ledger.lost += 1
            self.problem(task_id, f"state={state} listed in {indexed}: not visibly queued")

    def _check_outcome(self, task_id: str, record: dict[str, str], state: str) -> None:
        errors = _errors(record)
        unstated = [path for path in errors if path not in STATED_REASONS]
        if unstated:
            self.problem(task_id, f"errors without a stated reason: {unstated}")
        if state == "successful":
            self.ledger.successful += 1
            if "result" not in record:
                self.problem(task_id, "successful without a result")
            return
        self.ledger.failed += 1
        if not errors or "result" in record:
            self.problem(task_id, f"failed with errors={errors} result={record.get('result')}")
        else:
            self.ledger.failed_by[errors[-1].rsplit(".", 1)[1]] += 1

    def _check_runs(self, task_id: str, record: dict[str, str], runs: list[Execution]) -> None:
        """Compare executions with outcomes; an unrecorded run needs a worker that died, or
        one that logged its outcome refused (it was stalled past lease_ttl)."""
        recorded = _errors(record).count(CHAOS_FAILURE) + (record.get("state") == "successful")
        fenced = self.fenced[task_id]
        on_live = [run for run in runs if run.pid not in self.killed_pids]
        if len(runs) < recorded:
            self.problem(task_id, f"{recorded} outcomes recorded but only {len(runs)} runs")
        if len(on_live) > recorded + fenced:
            self.problem(
                task_id,
                f"ran {len(on_live)} times on workers that did not die, but only {recorded} "
                f"outcomes were recorded and {fenced} refused: runs={runs}",
            )
        self.ledger.fenced += fenced
        self.ledger.duplicates += max(0, len(runs) - max(recorded, 1))

    def _check_stats(self, records: dict[str, dict[str, str]], queues: list[str]) -> None:
        """Each recorded outcome bumps one counter: a second outcome would show up here.

        Counters are sent about once a second, apart from the outcomes (docs/observability.md,
        What it costs): a worker killed with SIGKILL loses the last second of its tally, so
        after kills a counter may be lower than the records, never higher.
        """
        stats: Counter[str] = Counter()
        for queue in queues:
            for name, value in self.client.hgetall(self.broker.queue_keys(queue).stats).items():
                stats[name] += int(value)
        states = Counter(record.get("state") for record in records.values())
        errors = sum(int(record.get("nerrors") or 0) for record in records.values())
        expected = {
            "successful": states["successful"],
            "failed": states["failed"],
            "retry": errors - states["failed"],
        }
        for name, count in expected.items():
            lost_tally_allowed = bool(self.killed_pids) and stats[name] < count
            if stats[name] != count and not lost_tally_allowed:
                self.problem("stats", f"{name} counter is {stats[name]}, records say {count}")
