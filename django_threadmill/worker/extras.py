"""What the ack writer sends besides acks, each on its own clock: the progress reports that rode
no finish call, and the metrics of the outcomes written (docs/observability.md, What it costs).

Each backs off on its own after a failure, and keeps what it could not send for its next try.
"""

import logging
import threading
import time
from collections.abc import Callable

from ..broker import Broker
from ..exceptions import BrokerRefused, BrokerUnavailable
from .backoff import ACK_BACKOFF, REDIS_BACKOFF
from .progress import PendingProgress

# Logged under the ack writer's name, whose thread sends them (docs/observability.md, Logging).
logger = logging.getLogger("django_threadmill.worker.ack_writer")

# Metric counters of written outcomes are sent this often, never per result: a crash loses at
# most this much of them (docs/observability.md, What it costs). A failed send is tried again
# after REDIS_BACKOFF, never sooner than this.
METRICS_SEND_S = 1.0


class Extras:
    """The progress and metrics sends of one ack writer, from its thread alone.

    ``on_refused`` stops the process (Redis refused this worker: no retry helps);
    ``give_up`` is set past the stop's deadline, when nothing is retried any more.
    """

    def __init__(
        self,
        broker: Broker,
        progress: PendingProgress,
        on_refused: Callable[[BrokerRefused], None],
        give_up: threading.Event,
    ) -> None:
        self.broker = broker
        self.progress = progress
        self.on_refused = on_refused
        self.give_up = give_up
        self.metrics_due = time.monotonic() + METRICS_SEND_S
        self._progress_failures = 0  # sends of progress alone failed in a row
        self._metrics_failures = 0  # metrics sends failed in a row, but at the stop

    def wakes(self, now: float) -> list[float]:
        """Return when the sends are due next, on the monotonic clock (none: nothing waits)."""
        wakes = [self.metrics_due] if self.broker.tally else []
        if (progress_wait_s := self.progress.wait_s()) is not None:
            wakes.append(now + progress_wait_s)
        return wakes

    def send_metrics_if_due(self) -> None:
        """Send the metrics of what was written if they are due."""
        if time.monotonic() >= self.metrics_due:
            self.send_due_metrics()

    def send_progress(self, *, flush: bool) -> None:
        """Send the waiting progress reports if they are due (all of them with ``flush``); a
        failure keeps them for the next send, unless newer ones came, which waits as a failed
        ack batch does (ACK_BACKOFF), never less than the usual interval. A refusal of this
        worker stops it and drops them: no retry helps."""
        reports = self.progress.take(flush=flush)
        if not reports:
            return
        try:
            self.broker.send_progress(reports)
        except BrokerRefused as exc:
            self.on_refused(exc)
            return
        except BrokerUnavailable as exc:
            self._progress_failures += 1
            retry_in_s = max(self.progress.interval_s, ACK_BACKOFF.after(self._progress_failures))
            self.progress.put_back(reports, retry_in_s)
            logger.warning(
                "Progress not sent, keeping it for the next try count=%d attempt=%d "
                "retry_in_s=%.1f error=%s",
                len(reports),
                self._progress_failures,
                retry_in_s,
                exc,
            )
            return
        self._progress_failures = 0

    def send_due_metrics(self) -> None:
        """Send the metrics of what was written, which are due; a failure keeps them for the
        next send, which waits longer after each failure in a row (REDIS_BACKOFF, never less
        than METRICS_SEND_S): sent every second, a Redis away an hour was 3,600 WARNING lines
        (docs/observability.md, Metrics and the done index)."""
        sent_at = time.monotonic()
        error = self._send_metrics()
        if error is None:
            self._metrics_failures = 0
            self.metrics_due = sent_at + METRICS_SEND_S
            return
        self._metrics_failures += 1
        retry_in_s = max(METRICS_SEND_S, REDIS_BACKOFF.after(self._metrics_failures))
        self.metrics_due = sent_at + retry_in_s
        logger.warning(
            "Metrics not sent, keeping them for the next try attempt=%d retry_in_s=%.1f error=%s",
            self._metrics_failures,
            retry_in_s,
            error,
        )

    def _send_metrics(self) -> BrokerUnavailable | None:
        """Send the metrics of what was written; return the error that kept some unsent (a
        failure keeps them for the next send), or None once Redis took them all. A refusal of
        this worker stops it (``on_refused``)."""
        try:
            self.broker.send_metrics()
        except BrokerUnavailable as exc:
            if isinstance(exc, BrokerRefused):
                self.on_refused(exc)
            return exc
        return None

    def send_last_metrics(self) -> None:
        """Send the metrics at the stop until none is left, at once whatever the backoff of a
        failed send: a send whose reply was lost is sent again (with backoff, until
        ``give_up``), then what waited behind it. One that Redis refused, or that never reached
        it, is not tried again; nor are the metrics of a Redis Cluster node the client spares,
        which a send keeps without a call (sent again, they spun the writer until the stop's
        deadline, as no call looks at the node)."""
        failures = 0
        while self.broker.tally and not self.give_up.is_set():
            error = self._send_metrics()
            if error is None:
                failures = 0
                if self.broker.tally and self.broker.tally.only_spared():
                    logger.warning(
                        "Metrics not sent at the stop: their Redis Cluster node is away (the "
                        "outcomes are recorded)"
                    )
                    return
                continue
            logger.warning("Metrics not sent at the stop error=%s", error)
            if not self.broker.tally.unsure():
                return
            failures += 1
            self.give_up.wait(ACK_BACKOFF.after(failures))
