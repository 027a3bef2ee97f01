"""A worker process's start line names at most 20 of the queues it serves and counts the others
in the same field: ``queues=q0000,...,q0019,+1980_more``.

It named every queue: a worker serving the 2,000 queues of QUEUES logged a start line of 12 KB,
once per process and again at each recycle, which log shippers cut short (wording.listed_values).
"""

from collections.abc import Callable

from django_threadmill.wording import MAX_LISTED_IDS
from tests.support import Command, running

QUEUES = [f"q{n:04}" for n in range(2_000)]  # QUEUES, as the worker's settings read them
LONGEST_LINE = 1_000  # characters: 20 names, the count and the rest of the line


def start_line(log: str) -> str:
    [line] = [line for line in log.splitlines() if "Worker process started" in line]
    return line


def test_a_worker_of_two_thousand_queues_names_twenty_and_counts_the_others(
    start_worker: Callable[..., Command],
) -> None:
    started = start_worker(extra_env={"THREADMILL_QUEUES": ",".join(QUEUES)})

    with running(started):
        line = start_line(started.log)

    listed = ",".join([*QUEUES[:MAX_LISTED_IDS], f"+{len(QUEUES) - MAX_LISTED_IDS}_more"])
    assert f" queues={listed} threads=" in line, line
    assert len(line) < LONGEST_LINE, len(line)
