"""threadmill_schedules whose stdout takes no lines: its reader gone (``| head -1``), closed
(``>&-``) or full. It ended in a BrokenPipeError traceback (or, closed, an AttributeError on
None); now it stops, exit code 1, with nothing on stderr, as threadmill_queue does."""

import pytest

from tests.management.test_health_and_queue_commands_edges import HOW, cut_short
from tests.schedules.test_command import SCHEDULES
from tests.support import command_env, run_python


@pytest.mark.parametrize("how", HOW)
def test_a_listing_whose_output_is_closed_exits_1_without_a_traceback(
    redis_url: str, key_prefix: str, how: str
) -> None:
    env = command_env(redis_url, key_prefix, options={"schedules": SCHEDULES})
    cut = cut_short(how, env, "threadmill_schedules")
    assert (cut.returncode, cut.stderr) == (1, "")


def test_a_listing_read_to_its_end_exits_0(redis_url: str, key_prefix: str) -> None:
    """The same command, its output read, lists each schedule."""
    read = run_python(
        "manage.py",
        "threadmill_schedules",
        redis_url=redis_url,
        key_prefix=key_prefix,
        options={"schedules": SCHEDULES},
    )
    assert (read.returncode, read.stderr) == (0, "")
    assert [line.split()[0] for line in read.stdout.splitlines()] == list(SCHEDULES)
