"""Progress reports of running attempts, written into their records by progress.lua.

A report is never a round trip of its own: the worker keeps each attempt's latest and sends
them with its finish calls (``Transitions.finish``), or alone at most every half second
(docs/lifecycle.md, Progress).
"""

from collections.abc import Sequence

from ..codec.progress import stored_number
from .core import BrokerCore
from .keys import QueueKeys
from .scripts import ScriptCall, ScriptName
from .types import ProgressReport


def _arguments(report: ProgressReport) -> tuple[str, ...]:
    total = "" if report.total is None else stored_number(report.total)
    return (report.lease.token, stored_number(report.done), total, report.note)


def _call(keys: QueueKeys, reports: Sequence[ProgressReport]) -> ScriptCall:
    """Return the call that writes ``reports`` of one queue part. It names the records it
    writes, not their prefix: a Redis Cluster then runs it where they are while the queue's
    slot migrates, or refuses it while they are split (progress.lua)."""
    return ScriptCall(
        ScriptName.PROGRESS,
        tuple(keys.record(report.lease.task_id) for report in reports),
        tuple(value for report in reports for value in _arguments(report)),
    )


class ProgressWrites(BrokerCore):
    """The progress section of the Broker: one progress.lua call per queue part."""

    def progress_calls(
        self, reports: Sequence[ProgressReport]
    ) -> list[tuple[ScriptCall, list[ProgressReport]]]:
        """Return the calls that write ``reports``, fenced by their leases' tokens, each with
        the reports it writes (one call per queue part)."""
        return [
            (_call(self.queue_keys(part), group), group)
            for part, group in self.by_part(reports, lambda report: report.lease).items()
        ]

    def send_progress(self, reports: Sequence[ProgressReport]) -> int:
        """Write ``reports`` in one round trip; return how many were written (the others'
        attempts had finished, or were reaped or reserved again)."""
        calls = [call for call, _ in self.progress_calls(reports)]
        return sum(self._run_per_queue(calls, durable=False)) if calls else 0
