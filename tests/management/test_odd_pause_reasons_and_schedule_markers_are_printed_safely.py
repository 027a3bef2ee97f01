"""What the operator commands print of an odd stored value: escaped, on its line, no traceback.

A pause's reason is one line (``checked_reason``), but a terminal's control characters (ESC,
a tab, a backspace) pass that check, from ``--reason`` as from the admin's form, and a
``P:paused`` key written by hand may hold anything. The worker's start warning logs the reason
with such characters escaped (``\\x1b``), as ``threadmill_queue damaged`` lists a hand-written
reason; ``threadmill_queue pause`` printed it raw in its "paused already" line, and its
``Queue paused`` log line held it raw: an escape sequence there clears or rewrites the
operator's terminal, and a line break written by hand split the line.

``threadmill_schedules`` reads a schedule's marker as a time: one written by hand that is no
time a datetime holds (past the year 9999, before year 1) or not UTF-8 ended the listing with a
traceback, where one of another type reads as never fired.
"""

import re

import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker.inspect import Inspector
from tests.support import run_python, run_to_completion, worker

REASON = "disk\x1b[2Jfull\tsee\x08 ops"  # a terminal's "clear screen", a tab, a backspace
ESCAPED = "disk\\x1b[2Jfull\\x09see\\x08 ops"
CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # all but \t and \n, shown as found
# A number no datetime holds reads as an unknown time, as a hand-written pause time does; bytes
# that are not UTF-8 as no marker, as the enqueue script reads them (tonumber: nil).
LAST = {
    b"99999999999999999999": "unknown time",
    b"-99999999999999": "unknown time",
    b"\xff\xfe": "never",
}
SCHEDULES = {"schedules": {"ping": {"task": "testproject.example.tasks.echo", "every": 30}}}


def queue_command(redis_url: str, key_prefix: str, *args: str) -> tuple[int, str, str]:
    ended = run_python(
        "manage.py",
        "threadmill_queue",
        *args,
        "--skip-checks",
        redis_url=redis_url,
        key_prefix=key_prefix,
    )
    return ended.returncode, ended.stdout, ended.stderr


def test_a_pause_reason_is_printed_and_logged_escaped_as_the_worker_logs_it(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str
) -> None:
    code, _, log = queue_command(redis_url, key_prefix, "pause", "emails", "--reason", REASON)
    assert code == 0, log
    assert Inspector(backend.broker).paused(["emails"])["emails"].reason == REASON  # as given
    [paused] = [line for line in log.splitlines() if "Queue paused backend=" in line]
    assert paused.endswith(f" reason={ESCAPED}"), paused

    code, said, log = queue_command(redis_url, key_prefix, "pause", "emails")
    assert code == 0, log
    said_reason = re.fullmatch(
        r"The queue emails of backend default was paused already since \S+ by \S+ with "
        r"manage\.py threadmill_queue \((.*)\); nothing changed\.\n",
        said,
        re.DOTALL,
    )
    assert said_reason is not None, repr(said)
    assert said_reason[1] == ESCAPED, repr(said)
    assert not CONTROLS.search(said), repr(said)
    assert "\t" not in said, repr(said)

    # A real worker starting on the paused queue logs the same reason, the same way.
    log = run_to_completion(worker(redis_url, key_prefix, "--queue", "emails", "--burst"))
    [started] = re.findall(r"Queue paused, its tasks wait until it is resumed .*", log)
    assert started.endswith(f" reason={ESCAPED}"), started


def test_a_hand_written_pause_note_with_a_line_break_is_said_on_one_line(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, redis_url: str, key_prefix: str
) -> None:
    key = backend.broker.queue_keys("emails").paused
    redis_client.set(key, "1700000000000 ops\x1b[1A: disk full\nPaused queue reports: forged")

    code, said, log = queue_command(redis_url, key_prefix, "pause", "emails")

    assert code == 0, log
    assert said == (
        "The queue emails of backend default was paused already since 2023-11-14T22:13:20+00:00 "
        "by ops\\x1b[1A (disk full\\x0aPaused queue reports: forged); nothing changed.\n"
    )


def test_a_schedule_marker_that_is_no_time_is_listed_not_a_traceback(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, redis_url: str, key_prefix: str
) -> None:
    key = backend.broker.queue_keys("default").fired("ping")
    for marker in (b"99999999999999999999", b"-99999999999999", b"\xff\xfe"):
        redis_client.set(key, marker)

        ended = run_python(
            "manage.py",
            "threadmill_schedules",
            "--skip-checks",
            redis_url=redis_url,
            key_prefix=key_prefix,
            options=SCHEDULES,
        )

        assert ended.returncode == 0, (marker, ended.stderr)
        assert "Traceback" not in ended.stderr, ended.stderr
        [line] = ended.stdout.splitlines()
        assert line.startswith("ping  every 0:00:30 (UTC)  task=testproject.example.tasks.echo "), (
            line
        )
        assert line.endswith(f"  last={LAST[marker]}"), line
