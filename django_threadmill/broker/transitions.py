"""Worker transitions after acquire: start, finish, renew and release, batched per queue.

A batch that spans queues is one script call per queue, sent as one pipeline (docs/design.md,
Hot-path budget).
"""

import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..codec.ids import worker_host_and_pid
from ..exceptions import BrokerUnavailable, PartlyAcked, PartlyRenewed
from ..wording import listed_names
from .damaged import log_set_aside
from .keys import QueueKeys
from .progress import ProgressWrites
from .scripts import ScriptCall, ScriptName
from .types import Ack, Finish, Lease, ProgressReport, Rejected, Start

# A worker silent this long is dropped from the admin list; a host whose processes last signed
# off this long ago is no longer last seen by threadmill_health.
FORGET_WORKER_MS = 24 * 3600 * 1000
# Most characters of results and errors one finish call carries, as the ack writer splits them (a
# larger one goes alone; JSON as stored is ASCII, a byte each): Redis refuses a request past its
# client-query-buffer-limit (1 GiB by default), and one big batch that keeps failing would hold
# up every outcome behind it (checks.py warns of a lower limit, threadmill.W006).
FINISH_CALL_CHARS = 64 * 2**20


def reap_mark() -> str:
    """Return a new mark for a reaper's finish call (finish.lua, ARGV[4])."""
    return f"~reaped-{uuid.uuid4().hex}"


def fences(leases: Iterable[Lease]) -> list[str]:
    """The scripts' per-lease arguments: id, token, id, token, ..."""
    return [part for lease in leases for part in (lease.task_id, lease.token)]


def _partly_renewed(
    groups: dict[str, list[Lease]], failed: dict[str, BrokerUnavailable], lost: list[str]
) -> PartlyRenewed:
    """Return the error of a renewal whose calls for the queue parts in ``failed`` failed,
    the others' replies naming ``lost``."""
    first = next(iter(failed.values()))
    return PartlyRenewed(
        f"not renewed in queue {listed_names(failed)}, renewed in the others: {first}",
        first,
        answered=frozenset(
            lease.task_id for part, group in groups.items() if part not in failed for lease in group
        ),
        lost=tuple(lost),
        failed=tuple(failed),
    )


@dataclass(slots=True)
class _Fenced[T: (Start, Finish)]:
    """What the per-queue calls of a start or finish batch did: the items a call did not
    record (with why), those it recorded (with their queue part), and those of the parts
    whose call failed, with the first failed part's error."""

    rejected: list[Rejected[T]] = field(default_factory=list)
    recorded: list[tuple[str, T]] = field(default_factory=list)
    unanswered: list[T] = field(default_factory=list)
    failed: dict[str, BrokerUnavailable] = field(default_factory=dict)  # by queue part

    def answered(self, items: Sequence[T]) -> Sequence[T]:
        """Return those of ``items`` whose part's call answered."""
        if not self.unanswered:
            return items
        unanswered = {item.lease for item in self.unanswered}
        return [item for item in items if item.lease not in unanswered]

    def partly(
        self,
        items: Sequence[T],
        progress_failed: Sequence[tuple[list[ProgressReport], BrokerUnavailable]] = (),
    ) -> None:
        """Raise ``PartlyAcked`` if a part's call failed, or a call of the progress reports
        that rode along (``progress_failed``: each one's reports and error): the caller sends
        again only what was not written."""
        if self.failed:
            error = next(iter(self.failed.values()))
            message = f"not written in queue {listed_names(self.failed)}, written in the others"
        elif progress_failed:
            error = progress_failed[0][1]
            message = "progress reports not written, the outcomes were"
        else:
            return
        raise PartlyAcked(
            f"{message}: {error}",
            error,
            answered=frozenset(item.lease for item in self.answered(items)),
            rejected=tuple(self.rejected),
            progress_unwritten=tuple(report for group, _ in progress_failed for report in group),
        )


class Transitions(ProgressWrites):
    """The fenced worker transitions of the Broker, each sent per queue."""

    def _by_queue[T](
        self,
        items: Iterable[T],
        lease_of: Callable[[T], Lease],
        build: Callable[..., ScriptCall],
        also: Iterable[str] = (),
        *,
        durable: bool = False,
        before: Sequence[ScriptCall] = (),
    ) -> tuple[list[Any], list[tuple[str, list[T], Any]]]:
        """Group ``items`` by queue, send one script call per queue; return the replies of the
        calls in ``before``, and each queue part with its items and its call's reply, or the
        error that call met. Raise the error when every call met one.

        A sharded queue is one call per shard its items live in. Queues in ``also`` get a
        call (each of their shards) even when no item is theirs. Calls in ``before`` run first,
        in the same round trip, even when their script must be loaded.
        """
        groups = self.by_part(items, lease_of, also)
        if not groups:
            return [], []
        calls = [build(self.queue_keys(part), group) for part, group in groups.items()]
        replies = self._run_each_per_queue([*before, *calls], durable=durable, in_order=len(before))
        answers = zip(groups.items(), replies[len(before) :], strict=True)
        return replies[: len(before)], [(part, group, reply) for (part, group), reply in answers]

    def _fenced_out[T: (Start, Finish)](
        self,
        items: Sequence[T],
        build: Callable[[QueueKeys, list[T]], ScriptCall],
        *,
        durable: bool = False,
        before: Sequence[ScriptCall] = (),
    ) -> tuple[_Fenced[T], list[Any]]:
        """Send ``items`` per queue to a script that answers an ``Ack`` per item; return what
        each part's call did, and the replies of the calls in ``before``. An outbox filled is
        noted for the drainer."""
        fenced: _Fenced[T] = _Fenced()
        before_replies, by_queue = self._by_queue(
            items, lambda item: item.lease, build, durable=durable, before=before
        )
        for part, group, reply in by_queue:
            if isinstance(reply, BrokerUnavailable):
                fenced.unanswered += group
                fenced.failed[part] = reply
                continue
            for item, code in zip(group, reply, strict=True):
                if code == Ack.OUTBOX:
                    self.outbox_signal.note(part)
                if code == Ack.RECORDED or code == Ack.OUTBOX:
                    fenced.recorded.append((part, item))
                else:
                    fenced.rejected.append(Rejected(item, Ack(code)))
        return fenced, before_replies

    def start(self, worker_id: str, starts: Sequence[Start]) -> list[Rejected[Start]]:
        """Mark reserved tasks running; return the notices that were not, with why. Raise
        ``PartlyAcked`` when some queues' calls failed and others' did not."""

        def build(keys: QueueKeys, group: list[Start]) -> ScriptCall:
            limited = self.wake_on_free(group[0].lease.queue)
            args: list[str | int] = [self.settings.lease_ttl_ms, worker_id, limited]
            for start in group:
                args += [start.lease.task_id, start.lease.token, start.started_ms]
            return ScriptCall(
                ScriptName.START,
                (keys.record_prefix, keys.leases, keys.damaged, keys.ready, keys.wake),
                tuple(args),
            )

        fenced, _ = self._fenced_out(starts, build)
        fenced.partly(starts)
        return fenced.rejected

    def finish(
        self,
        worker_id: str,
        finishes: Sequence[Finish],
        progress: Sequence[ProgressReport] = (),
        *,
        mark: str = "",
    ) -> list[Rejected[Finish]]:
        """Record attempt outcomes; return the ones not recorded, with why.

        What the metrics count of the recorded ones goes into ``self.tally``, sent by
        ``send_metrics`` on the caller's clock, with those a call that raised recorded (the
        retry answers them "already recorded"). A ``worker_id`` of "" is the reaper: every
        reaper settles with the attempt's own token, so what it records keeps the token with
        its call's ``mark`` appended (a new one unless given), and only a retry with the same
        mark answers "already" (finish.lua, ARGV[4]). ``progress`` reports ride along, written
        first in the same round trip, so an attempt's last report is in its record before its
        outcome is. Raise ``PartlyAcked`` when some queues' calls failed and others' did not
        (docs/worker.md, Durability window of the ack writer).
        """
        ttl_ms = self.settings.result_ttl_ms
        if not worker_id:
            mark = mark or reap_mark()

        def build(keys: QueueKeys, group: list[Finish]) -> ScriptCall:
            limited = self.wake_on_free(group[0].lease.queue)
            args: list[str | int] = [worker_id, "" if ttl_ms is None else ttl_ms, limited, mark]
            for f in group:
                args += [
                    f.lease.task_id,
                    f.lease.token,
                    f.outcome.value,
                    f.value,
                    f.started_ms,
                    f.finished_ms,
                    f.retry_delay_ms,
                ]
            return ScriptCall(
                ScriptName.FINISH,
                (
                    keys.record_prefix,
                    keys.leases,
                    keys.delayed,
                    keys.wake,
                    keys.unique_prefix,
                    keys.ready,
                    keys.damaged,
                    keys.outbox,
                ),
                tuple(args),
            )

        riders = self.progress_calls(progress)
        try:  # an acknowledged result must survive a failover too (OPTIONS['durability'])
            fenced, before_replies = self._fenced_out(
                finishes, build, durable=True, before=[call for call, _ in riders]
            )
        except BrokerUnavailable:
            # The caller sends them again; what this try recorded then answers "already".
            self.tally.unanswered(finishes)
            raise
        already = [item for item, ack in fenced.rejected if ack is Ack.ALREADY]
        recorded = fenced.recorded
        for finish in self.tally.answered(fenced.answered(finishes), already):
            recorded.append((self.part_in(finish.lease.queue, finish.lease.task_id), finish))
        self.tally.add(recorded, reaping=worker_id == "")
        if fenced.unanswered:
            self.tally.unanswered(fenced.unanswered)
        fenced.partly(
            finishes,
            [
                (group, reply)
                for (_, group), reply in zip(riders, before_replies, strict=True)
                if isinstance(reply, BrokerUnavailable)
            ],
        )
        return fenced.rejected

    def renew(
        self,
        worker_id: str,
        leases: Sequence[Lease],
        served: Iterable[str] = (),
        *,
        threads: int = 0,
    ) -> list[str]:
        """Extend every lease in ``leases`` by lease_ttl; return the ids whose lease is lost.

        Each queue in ``served`` is renewed too, with no leases if none is held there: the
        worker's heartbeat, so the admin and the metrics count idle workers (and, with
        ``threads``, their live worker threads). A queue whose call failed while others' did
        not raises ``PartlyRenewed``, holding what the others' calls did: Redis renewed their
        leases, which the error must not drop. When every call failed, the first error is
        raised.
        """

        def build(keys: QueueKeys, group: list[Lease]) -> ScriptCall:
            return ScriptCall(
                ScriptName.RENEW,
                (
                    keys.record_prefix,
                    keys.leases,
                    keys.workers,
                    keys.held,
                    keys.damaged,
                    keys.threads,
                    keys.ready,
                    keys.wake,
                ),
                (
                    self.settings.lease_ttl_ms,
                    worker_id,
                    FORGET_WORKER_MS,
                    threads,
                    self.wake_on_free(group[0].queue) if group else 0,
                    *fences(group),
                ),
            )

        groups = self.by_part(leases, lambda lease: lease, served)
        calls = [build(self.queue_keys(part), group) for part, group in groups.items()]
        replies = self._run_each_per_queue(calls) if calls else []
        failed = {
            part: reply
            for part, reply in zip(groups, replies, strict=True)
            if isinstance(reply, BrokerUnavailable)
        }
        lost = [
            task_id
            for reply in replies
            if not isinstance(reply, BrokerUnavailable)
            for task_id in reply
        ]
        if failed:
            raise _partly_renewed(groups, failed, lost)
        return lost

    def sign_off(self, worker_id: str, served: Iterable[str]) -> None:
        """Drop ``worker_id``'s sightings from the queues in ``served``: a process that stopped
        is not counted live (the admin, ``threadmill_workers``, ``threadmill_health``) for the
        lease_ttl its last renewal would otherwise cover. Its host keeps the time it signed
        off, so ``threadmill_health`` still says when the host was last seen."""
        host = worker_host_and_pid(worker_id)[0]
        calls = [
            ScriptCall(
                ScriptName.SIGN_OFF,
                (keys.workers, keys.held, keys.threads, keys.stopped),
                (worker_id, host, FORGET_WORKER_MS),
            )
            for queue in served
            for keys in map(self.queue_keys, self.parts(queue))
        ]
        if calls:
            self._run_per_queue(calls, durable=False)

    def release(self, leases: Sequence[Lease]) -> int:
        """Put reserved, never-started tasks back in their place, and give a rate-limited
        queue back the reservation turns they took; return how many went back."""

        def build(keys: QueueKeys, group: list[Lease]) -> ScriptCall:
            queue = group[0].queue
            interval_us = self.settings.limit_of(queue).token_interval_us
            return ScriptCall(
                ScriptName.RELEASE,
                (keys.record_prefix, keys.ready, keys.leases, keys.wake, keys.damaged, keys.rate),
                (
                    self.wake_on_free(queue),
                    "" if interval_us is None else interval_us,
                    *fences(group),
                ),
            )

        released = 0
        _, by_queue = self._by_queue(leases, lambda lease: lease, build)
        for _, group, reply in by_queue:
            if isinstance(reply, BrokerUnavailable):
                raise reply
            count, set_aside = reply
            released += int(count)
            if set_aside:
                log_set_aside(self.settings.alias, group[0].queue, int(set_aside), "release")
        return released
