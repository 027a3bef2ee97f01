"""Read-only Redis queries behind the admin: counts, workers, index windows and records.

Every read is bounded, whatever the number of stored results: counts are ZCARD/ZCOUNT, a
listing reads one window of one index by rank (ZRANGE/ZREVRANGE, O(log N + window)) and then
the rows' fields, a payload's head only (row_fields.lua, one call per queue part, pipelined).
Nothing here uses KEYS or SCAN, and nothing writes.
"""

from ...codec.payloads import task_path, task_path_in_head
from ..raw_replies import NotUtf8Id
from .inspector import Inspector
from .queues import STATE_SAMPLE, THROUGHPUT_MINUTES
from .ready_walk import BAND_SAMPLE
from .record import SHOW_ALL_BYTES
from .types import (
    DAMAGED,
    Index,
    QueueOverview,
    StateSplit,
    TaskDetail,
    TaskRow,
    WorkerSighting,
)

__all__ = [
    "BAND_SAMPLE",
    "DAMAGED",
    "SHOW_ALL_BYTES",
    "STATE_SAMPLE",
    "THROUGHPUT_MINUTES",
    "Index",
    "Inspector",
    "NotUtf8Id",
    "QueueOverview",
    "StateSplit",
    "TaskDetail",
    "TaskRow",
    "WorkerSighting",
    "task_path",
    "task_path_in_head",
]
