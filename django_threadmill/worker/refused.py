"""Results Redis refuses as too large: each recorded FAILED, the outcomes beside it written.

Redis takes no argument past its proto-max-bulk-len and no request past its
client-query-buffer-limit, and either may be set below ``max_result_bytes`` (threadmill.W006).
A finish call carrying such a result failed for good, and the ack writer sent it again and
again, holding up every outcome beside and behind it (docs/worker.md, Durability window of the
ack writer). Redis replies "Protocol error" and closes the connection; a client still writing the
value meets the closed connection first, mostly, so a refusal looks like a dropped connection.
Neither limit can be set below 1 MiB, so only a longer value can be the one refused.
"""

import logging
from collections.abc import Sequence

from ..broker import Broker, Finish, Outcome, ProgressReport, Rejected
from ..broker.connection import maybe_too_large
from ..codec.results import error_json
from ..exceptions import BrokerUnavailable

logger = logging.getLogger(__name__)

# The least proto-max-bulk-len and client-query-buffer-limit Redis takes, in bytes: a value no
# longer (JSON as stored is ASCII, a byte a character) is never refused for its size.
LEAST_LIMIT_CHARS = 2**20
# Sends of a value alone that fail so, Redis answering a ping after each, before it is refused.
TRIES = 2


def may_carry_refused(error: BrokerUnavailable, finishes: Sequence[Finish]) -> bool:
    """Tell whether the finish call of ``finishes`` that raised ``error`` may have been
    refused for a value too large (asked only once a call failed)."""
    longest = max(len(finish.value) for finish in finishes)
    return longest > LEAST_LIMIT_CHARS and maybe_too_large(error)


def finish_apart(
    broker: Broker,
    worker_id: str,
    finishes: Sequence[Finish],
    progress: Sequence[ProgressReport],
) -> list[Rejected[Finish]]:
    """Send the outcomes no longer than 1 MiB in one call and each longer one alone, recording
    one that Redis refuses as too large FAILED; return those not recorded, with why.

    ``progress`` rides the first call. Raise ``BrokerUnavailable`` if Redis is away: the
    caller sends them all again, and what was recorded answers "already".
    """
    short = [finish for finish in finishes if len(finish.value) <= LEAST_LIMIT_CHARS]
    rejected: list[Rejected[Finish]] = []
    if short:
        rejected += broker.finish(worker_id, short, progress)
        progress = ()
    for finish in finishes:
        if len(finish.value) > LEAST_LIMIT_CHARS:
            rejected += _alone(broker, worker_id, finish, progress)
            progress = ()
    return rejected


def _alone(
    broker: Broker, worker_id: str, finish: Finish, progress: Sequence[ProgressReport]
) -> list[Rejected[Finish]]:
    """Send ``finish`` alone; once it failed as refused ``TRIES`` times, Redis answering a
    ping after each, record it FAILED instead."""
    refusal: Exception | None = None
    for _ in range(TRIES):
        try:
            return broker.finish(worker_id, [finish], progress)
        except BrokerUnavailable as exc:
            if not maybe_too_large(exc):
                raise
            broker.ping()  # raises if Redis is away: a dropped connection, not a refusal
            # What redis-py said: ours reads "unreachable … Start Redis" for the dropped
            # connection a refusal mostly is, though Redis has just answered a PING.
            refusal = exc.__cause__ if isinstance(exc.__cause__, Exception) else exc
    logger.error(
        "Result refused by Redis as too large, recording the task FAILED task_id=%s chars=%d "
        "error=%s",
        finish.lease.task_id,
        len(finish.value),
        repr(refusal),
    )
    return broker.finish(worker_id, [refused(finish)], progress)


def refused(finish: Finish) -> Finish:
    """Return ``finish`` as FAILED, its value Redis refused replaced by the error that says so."""
    error = ValueError(
        f"The task returned {len(finish.value)} bytes of JSON, and Redis refused to store them "
        "as too large: they are past its proto-max-bulk-len (or client-query-buffer-limit). "
        "Lower OPTIONS['max_result_bytes'] below it, so that a result this large fails at "
        "once naming the limit, or raise proto-max-bulk-len in redis.conf (threadmill.W006)."
    )
    return finish._replace(outcome=Outcome.FAILED, value=error_json(error), retry_delay_ms=0)
