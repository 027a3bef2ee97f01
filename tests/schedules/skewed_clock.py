"""A ``sitecustomize`` that runs a process's wall clock ahead, for tests of "one clock".

Put this directory's copy on PYTHONPATH (``skewed_env``) and the child process, and every
process it spawns, reads ``time.time()`` and ``datetime.now()`` ``THREADMILL_TEST_CLOCK_SKEW_S``
seconds ahead of the machine: a host whose clock drifted. Monotonic clocks are left alone.
"""

import datetime
import os
import time

SKEW_S = float(os.environ.get("THREADMILL_TEST_CLOCK_SKEW_S", "0"))
_time, _time_ns = time.time, time.time_ns
_SKEW = datetime.timedelta(seconds=SKEW_S)


class SkewedDatetime(datetime.datetime):
    """``datetime`` whose ``now`` runs ahead; the C type's own methods cannot be replaced."""

    @classmethod
    def now(cls, tz: datetime.tzinfo | None = None) -> "SkewedDatetime":
        return super().now(tz) + _SKEW

    @classmethod
    def utcnow(cls) -> "SkewedDatetime":
        return cls.now(datetime.UTC).replace(tzinfo=None)


if SKEW_S:
    time.time = lambda: _time() + SKEW_S
    time.time_ns = lambda: _time_ns() + int(SKEW_S * 1e9)
    datetime.datetime = SkewedDatetime
