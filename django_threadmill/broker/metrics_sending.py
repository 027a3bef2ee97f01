"""Sending what ``finish`` tallied: the metrics and the done index's new ids, one metrics.lua
call per queue part, on the caller's clock (docs/observability.md, What it costs)."""

import logging
from collections import Counter
from collections.abc import Collection, Mapping, Sequence

from ..exceptions import BrokerUnavailable, MaybeApplied
from .core import BrokerCore
from .keys import queue_of_part
from .metrics import MAX_TASK_PATHS, MINUTE_TTL_MS, PATH_TTL_MS, SENT_TTL_MS, PartTally
from .scripts import ScriptCall, ScriptName

logger = logging.getLogger(__name__)

COUNTED_ALREADY = -1  # metrics.lua's skipped count for a send it counted before (reply lost)


class MetricsSending(BrokerCore):
    """The metrics sends of a broker's tally."""

    def send_metrics(self, *, trimming: Sequence[str] = ()) -> list[str]:
        """Send what ``finish`` tallied, the done index's new ids included: one metrics.lua
        call per queue part, one round trip; raise the first call's error, if any.

        Run by the ack writer about once a second and when it stops (the reaper, through
        ``send_metrics_each``, after each round of its pass). What a send cannot deliver is
        kept for the next one; a send whose reply was lost is sent again as it was, and
        counted once (metrics.py). Each call also trims its part's done index of ids whose
        records expired, a bounded number per call (docs/observability.md, Metrics and the
        done index); the parts of the ``trimming`` queues get a call for that even with
        nothing tallied (the reaper's pass: an idle queue's index would keep them until its
        next outcome, a cancel-only one for good). Return those of the ``trimming`` queues
        whose index still holds expired ids.
        """
        left, failed = self.send_metrics_each(trimming=trimming)
        for error in failed.values():
            raise error
        return left

    def send_metrics_each(
        self,
        *,
        trimming: Sequence[str] | Mapping[str, Sequence[str]] = (),
        leaving_out: Collection[str] = (),
    ) -> tuple[list[str], dict[str, BrokerUnavailable]]:
        """``send_metrics``, but a queue whose call failed (a key of another type) is returned
        with its error, not raised: the reaper's round trip spans every queue, and one queue's
        key must not fail the others' part of the pass. An error of the round trip is raised.

        ``trimming`` may map each queue to the parts of its other shard counts
        (``other_parts``), whose done index is trimmed with the queue's: no worker sends to
        them once those of an earlier ``queue_shards`` stop (docs/scaling.md, Changing the
        shard count).

        The parts in ``leaving_out`` (on a Redis Cluster primary that did not answer: the
        reaper's pass) get no call of their own, to trim or to mark a path seen: theirs would
        fail, and its queue with it, at every send while the node is away. Nor do the parts on
        a node the client spares (``_keep_spared``).
        """
        trimmed = self._trimmed_parts(trimming, leaving_out)
        with self.tally.sending():
            parts = self.tally.take()
            self._share_paths(parts, leaving_out)
            if self.settings.result_ttl_ms is not None:
                for part in (part for its in trimmed.values() for part in its):
                    parts.setdefault(part, PartTally())
            self._keep_spared(parts)
            if not parts:
                return [], {}
            calls = [self._metrics_call(part, tally) for part, tally in parts.items()]
            left, failed = self._send_tallies(parts, calls)
        still = [queue for queue, its in trimmed.items() if not left.isdisjoint(its)]
        return [queue for queue in still if queue not in failed], failed

    def _trimmed_parts(
        self, trimming: Sequence[str] | Mapping[str, Sequence[str]], leaving_out: Collection[str]
    ) -> dict[str, list[str]]:
        """Return, per queue of ``trimming``, the parts whose done index a send trims."""
        other = trimming if isinstance(trimming, Mapping) else {}
        return {
            queue: [p for p in (*self.parts(queue), *other.get(queue, ())) if p not in leaving_out]
            for queue in trimming
        }

    def _share_paths(self, parts: dict[str, PartTally], leaving_out: Collection[str]) -> None:
        """Mark each task path ``parts`` count in a shard of a queue as seen in every shard.

        metrics.lua forgets a path per part, once no send counted it there for PATH_TTL_MS;
        a sharded queue spreads a path's runs over its shards, so a shard the path had not
        landed in for that long dropped its series while it ran in the others, and the
        queue's sum of them fell (docs/observability.md, Families). Marked once an hour per
        sender (``Tally.unshared``): an entry with no counts, riding the shard's send if it
        has one, else a call of its own.
        """
        counted = {
            (queue, path)
            for part, tally in parts.items()
            if self.settings.shards_of(queue := queue_of_part(part)) > 1
            for path in tally.recent
        }
        for queue, path in self.tally.unshared(counted) if counted else ():
            for part in (p for p in self.parts(queue) if p not in leaving_out):
                parts.setdefault(part, PartTally()).recent.setdefault(path, Counter())

    def _keep_spared(self, parts: dict[str, PartTally]) -> None:
        """Take out of ``parts`` those on a Redis Cluster node the client spares (down_nodes.py)
        and keep their tallies for a send once it answers: their calls would fail at once, and
        the send with them. A worker's path mark for a shard there (``_share_paths``) said
        "Metrics not sent" at each new path and each hour, though nothing waited (docs/scaling.md,
        A hot queue beyond one node)."""
        down, node_of = self.down_nodes, self.node_of
        nodes = (node_of(self.queue_keys(part).ready) for part in parts)
        if not self.fails_by_node or not down.spares_any(nodes):  # none spared: none looked up
            return
        spared = [p for p in parts if down.spares_any([node_of(self.queue_keys(p).ready)])]
        self.tally.keep_for_later({part: parts.pop(part) for part in spared})

    def _metrics_call(self, part: str, tally: PartTally) -> ScriptCall:
        """Return the metrics.lua call that sends ``tally`` to ``part``; one that carries
        nothing to count (a trim) goes unnumbered. One to a part of another shard count than
        the configured one (a trim) forgets no task path there: the scrape sums those counters
        as they stand (inspect/counters.py)."""
        keys, ttl_ms = self.queue_keys(part), self.settings.result_ttl_ms
        configured = part in self.parts(queue_of_part(part))
        return ScriptCall(
            ScriptName.METRICS,
            (
                keys.metrics,
                keys.metrics_minute_prefix,
                keys.metrics_paths,
                keys.stats,
                keys.done,
                keys.metrics_sent(self.tally.sender),
            ),
            (
                MAX_TASK_PATHS,
                MINUTE_TTL_MS,
                "" if ttl_ms is None else ttl_ms,
                tally.number if tally.outcomes else "",
                SENT_TTL_MS,
                PATH_TTL_MS if configured else "",
                *(tally.outcomes[name] for name in ("successful", "failed", "retry")),
                *tally.index_entries(),
                *tally.increments(),
            ),
        )

    def _send_tallies(
        self, parts: dict[str, PartTally], calls: list[ScriptCall]
    ) -> tuple[set[str], dict[str, BrokerUnavailable]]:
        """Send one metrics.lua call per part; keep for the next send only the tallies of the
        calls that failed; return the parts whose done index the trim left expired ids in,
        and per queue the first error its parts' calls met.

        Putting back a tally whose call was counted (another part's call failed in the same
        round trip) would count it again at every send; one whose reply was lost is put back
        to be sent again under its number, which metrics.lua skips if it was counted.
        """
        try:
            outcomes = self._run_each(calls)
        except BrokerUnavailable as exc:
            self.tally.put_back(parts, maybe_counted=isinstance(exc, MaybeApplied))
            raise
        failed: dict[str, BrokerUnavailable] = {}
        left: set[str] = set()
        for (part, tally), outcome in zip(parts.items(), outcomes, strict=True):
            if isinstance(outcome, BrokerUnavailable):
                self.tally.put_back({part: tally}, maybe_counted=isinstance(outcome, MaybeApplied))
                failed.setdefault(queue_of_part(part), outcome)
                continue
            skipped, expired_left = outcome
            if expired_left:
                left.add(part)
            if skipped == COUNTED_ALREADY:
                logger.info(
                    "Metrics send already counted part=%s (sent again after its reply was lost)",
                    part,
                )
            elif skipped:
                logger.warning(
                    "Metric fields skipped part=%s count=%d: they hold something that is not a "
                    "number (written by hand); delete the field or key to count again",
                    part,
                    skipped,
                )
        return left, failed
