"""``manage.py threadmill_queue purge``: finished results deleted from the command line.

Before, a purge ran from the Python API or the admin, whose purge is one HTTP request (about
15 s for 2 million results): past a web server's timeout it stopped part-way with no message
and no audit line. The command purges batch by batch through the same script, says how many
it deleted, stops between two batches on Ctrl-C or SIGTERM with the count so far (a rerun
purges the rest), refuses an unknown queue or state, and logs who purged what.
"""

import signal
import textwrap
from dataclasses import dataclass
from datetime import timedelta

import pytest
import redis
from django.utils import timezone

from django_threadmill.broker import Broker, Start
from django_threadmill.broker.keys import QueueKeys
from django_threadmill.codec.times import now_ms
from django_threadmill.testing import drain
from testproject.example.tasks import echo, fail
from tests.support import Command, run_python

SUCCESSFUL, FAILED, BATCH = 12, 8, 5  # four batches of both states, two of FAILED ones alone
RERUN = "run 'manage.py threadmill_queue purge default' again to purge them."

# threadmill_queue with argv[1:], in which a stop signal (argv[1]) arrives once the second purge
# call has answered and the command has heard it, as an operator's Ctrl-C between two batches;
# a third purge call ends the process with exit code 97: the purge went on past the stop.
STOPPED_AFTER_TWO_BATCHES = textwrap.dedent(
    """
    import os
    import signal
    import sys
    import threading

    import django

    django.setup()

    from django.core.management import execute_from_command_line

    from django_threadmill.broker import Broker
    from django_threadmill.broker.scripts import ScriptName
    from django_threadmill.management.stop_held import HeldStop

    signum = signal.Signals[sys.argv[1]]
    # SIGINT as a terminal's command has it: a background job (a CI runner's) inherits it
    # ignored, and the command leaves an ignored signal ignored (management/stop_held.py).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    heard, calls = threading.Event(), []
    run, held = Broker._run, HeldStop.heard

    def heard_then_set(self, *args):
        held(self, *args)
        heard.set()

    def run_then_stopped(self, call, *args, **kwargs):
        if call.name is not ScriptName.PURGE:
            return run(self, call, *args, **kwargs)
        calls.append(call)
        if len(calls) > 2:
            print("a third purge call was sent", file=sys.stderr, flush=True)
            os._exit(97)
        reply = run(self, call, *args, **kwargs)
        if len(calls) == 2:
            os.kill(os.getpid(), signum)
            assert heard.wait(30)
        return reply

    HeldStop.heard = heard_then_set
    Broker._run = run_then_stopped
    execute_from_command_line(["manage.py", "threadmill_queue", *sys.argv[2:]])
    """
)


@dataclass(frozen=True)
class Unfinished:
    """The ids of the tasks of the default queue that a purge must leave alone."""

    ready: str
    delayed: str
    reserved: str
    running: str


def finished_and_unfinished(broker: Broker) -> Unfinished:
    """Store SUCCESSFUL and FAILED results in the default queue, then a task in each state a
    purge must not touch: READY, delayed, reserved and running."""
    for n in range(SUCCESSFUL):
        echo.enqueue(n)
    for n in range(FAILED):
        fail.enqueue(f"boom {n}")
    drain()
    held = [echo.enqueue("reserved").id, echo.enqueue("running").id]
    leases = [reservation.lease for reservation in broker.acquire("default", 2).reservations]
    assert [lease.task_id for lease in leases] == held
    assert broker.start("worker-a", [Start(lease=leases[1], started_ms=now_ms())]) == []
    later = echo.using(run_after=timezone.now() + timedelta(hours=1)).enqueue("later")
    return Unfinished(echo.enqueue("ready").id, later.id, *held)


def states(redis_client: redis.Redis, keys: QueueKeys, unfinished: Unfinished) -> list[str]:
    ids = [unfinished.ready, unfinished.delayed, unfinished.reserved, unfinished.running]
    return [redis_client.hget(keys.record(task_id), "state") for task_id in ids]


def finished_left(redis_client: redis.Redis, keys: QueueKeys) -> dict[str, int]:
    """Count the records the done index still names, by state."""
    left: dict[str, int] = {}
    for task_id in redis_client.zrange(keys.done, 0, -1):
        state = redis_client.hget(keys.record(task_id), "state")
        left[state] = left.get(state, 0) + 1
    return left


def purge(redis_url: str, key_prefix: str, *args: str) -> tuple[int, str, str]:
    ended = run_python(
        "manage.py",
        "threadmill_queue",
        "purge",
        *args,
        "--skip-checks",
        redis_url=redis_url,
        key_prefix=key_prefix,
    )
    return ended.returncode, ended.stdout, ended.stderr


UNTOUCHED = ["ready", "ready", "reserved", "running"]  # delayed tasks are READY, run_after later


def test_purge_deletes_one_state_then_the_rest_and_leaves_unfinished_tasks_alone(
    broker: Broker, redis_client: redis.Redis, redis_url: str, key_prefix: str
) -> None:
    unfinished = finished_and_unfinished(broker)
    keys = broker.queue_keys("default")

    code, out, err = purge(
        redis_url, key_prefix, "default", "--state", "failed", "--batch-size", "3"
    )
    assert (code, out) == (
        0,
        f"Purged {FAILED} FAILED results from queue default of backend default; waiting and "
        "running tasks were left alone.\n",
    )
    assert f"Queue purged backend=default queue=default state=failed deleted={FAILED} by=" in err
    assert "with manage.py threadmill_queue\n" in err
    assert finished_left(redis_client, keys) == {"successful": SUCCESSFUL}

    code, out, err = purge(redis_url, key_prefix, "default")
    assert (code, out) == (
        0,
        f"Purged {SUCCESSFUL} finished results (SUCCESSFUL and FAILED) from queue default of "
        "backend default; waiting and running tasks were left alone.\n",
    )
    assert f"state=finished deleted={SUCCESSFUL} by=" in err
    assert finished_left(redis_client, keys) == {}
    assert states(redis_client, keys, unfinished) == UNTOUCHED


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
def test_a_stop_signal_ends_the_purge_between_two_batches_and_a_rerun_purges_the_rest(
    broker: Broker,
    redis_client: redis.Redis,
    redis_url: str,
    key_prefix: str,
    signum: signal.Signals,
) -> None:
    unfinished = finished_and_unfinished(broker)
    keys = broker.queue_keys("default")
    command = Command(
        redis_url,
        key_prefix,
        signum.name,
        "purge",
        "default",
        "--batch-size",
        str(BATCH),
        "--skip-checks",
        code=STOPPED_AFTER_TWO_BATCHES,
    )
    try:
        assert command.wait() == 1, command.log
        log = command.log
    finally:
        command.close()

    assert (
        f"CommandError: Purged {2 * BATCH} finished results (SUCCESSFUL and FAILED) from queue "
        f"default of backend default, then stopped: {signum.name} came. Those left are kept: "
        f"{RERUN}" in log
    )
    assert f"state=finished deleted={2 * BATCH} by=" in log
    assert "incomplete=yes" in log
    assert sum(finished_left(redis_client, keys).values()) == SUCCESSFUL + FAILED - 2 * BATCH

    code, out, _ = purge(redis_url, key_prefix, "default")
    assert (code, out.split(";")[0]) == (
        0,
        f"Purged {SUCCESSFUL + FAILED - 2 * BATCH} finished results (SUCCESSFUL and FAILED) "
        "from queue default of backend default",
    )
    assert finished_left(redis_client, keys) == {}
    assert states(redis_client, keys, unfinished) == UNTOUCHED


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (
            ["nope"],
            "CommandError: Queue 'nope' is not in TASKS['default']['QUEUES'] (default, emails and "
            "reports). Add it there or pick one of those.\n",
        ),
        (
            ["default", "--state", "FAILED"],
            # Python 3.12.8+ quotes the choices, earlier ones do not
            "error: argument --state: invalid choice: 'FAILED' (choose from ",
        ),
        (
            ["default", "--batch-size", "0"],
            "error: argument --batch-size: '0' is not a whole number from 1 to 10,000: a batch "
            "is one script call, and Redis serves no other client while it runs. Use e.g. 500.\n",
        ),
        (["default", "--backend", "nope"], "CommandError: --backend nope: TASKS has no backend"),
    ],
    ids=["queue", "state", "batch-size", "backend"],
)
def test_an_unknown_queue_state_or_batch_size_is_refused_and_nothing_is_purged(
    broker: Broker,
    redis_client: redis.Redis,
    redis_url: str,
    key_prefix: str,
    args: list[str],
    error: str,
) -> None:
    echo.enqueue("done")
    drain()
    code, out, err = purge(redis_url, key_prefix, *args)
    assert (code, out) == (1 if "CommandError" in error else 2, "")
    assert error in err
    assert finished_left(redis_client, broker.queue_keys("default")) == {"successful": 1}


def test_dry_run_counts_what_a_purge_would_delete_and_deletes_nothing(
    broker: Broker, redis_client: redis.Redis, redis_url: str, key_prefix: str
) -> None:
    finished_and_unfinished(broker)

    code, out, err = purge(redis_url, key_prefix, "default", "--state", "failed", "--dry-run")

    assert (code, out) == (
        0,
        f"Dry run, nothing deleted: queue default of backend default holds "
        f"{SUCCESSFUL + FAILED} finished results: {SUCCESSFUL} SUCCESSFUL, {FAILED} FAILED. "
        f"'manage.py threadmill_queue purge default --state failed' would delete at most "
        f"{FAILED}.\n",
    )
    assert "Queue purged" not in err
    assert finished_left(redis_client, broker.queue_keys("default")) == {
        "successful": SUCCESSFUL,
        "failed": FAILED,
    }


def test_a_long_purge_prints_its_progress_every_200_batches(
    broker: Broker, redis_client: redis.Redis, redis_url: str, key_prefix: str
) -> None:
    for n in range(200):
        echo.enqueue(n)
    drain()

    code, out, _ = purge(redis_url, key_prefix, "default", "--batch-size", "1")

    assert (code, out.splitlines()[0]) == (0, "Purging queue default: 200 deleted so far.")
    assert out.splitlines()[1].startswith("Purged 200 finished results")
