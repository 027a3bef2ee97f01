"""A Redis that refuses a command every call goes by (EVALSHA, EVAL or SCRIPT renamed away, or
an ACL without it), or that starts refusing the WAITAOF of durability='fsync' under a running
worker: a refusal naming the command and the rule to grant, as for credentials (exit code 4).

Before the fix ``check --deploy`` said "no issues" of scripts refused, the worker started and
met the refusal on its first call, ``threadmill_reap --once`` exited 1, and a renamed SCRIPT was
named by 100 characters of Lua source. A WAITAOF refused at runtime was retried by the ack writer
for good ("Ack batch failed ... attempt=10" after 20 s), and a SIGTERM then waited out the grace
period and exited 6. At enqueue, an ACL refusal of WAITAOF said no fix, and a renamed one read
"'2000' . This Redis".
"""

from collections.abc import Iterator

import pytest
import redis
from django.test import override_settings

from django_threadmill.compat import TaskResultStatus
from django_threadmill.exceptions import BrokerRefused, MaybeApplied
from testproject.example.tasks import echo
from tests.conftest import tasks_setting
from tests.servers.redis_server import redis_server_binary, started
from tests.support import (
    Command,
    no_permission_words,
    run_python,
    unknown_command_words,
    worker,
)

from .test_a_redis_that_refuses_config_or_waitaof_is_named_by_the_checks_not_passed_over import (  # noqa: F401
    APP_PASSWORD,
    MANAGED_RULES,
    ServerOf,
    binary_with_waitaof,
    refusing_url,
    waitaof_refused,
)

# How a server refuses scripts, the command refused, and words the check names it with.
SCRIPT_REFUSALS = {
    "renamed": ("SCRIPT", f"SCRIPT LOAD ({unknown_command_words('SCRIPT', 'LOAD', 'return 1')})"),
    "acl": ("EVALSHA", f"{no_permission_words('evalsha')})"),
}
GRANT_SCRIPTS = "grant them to the ACL user ('+evalsha +eval +script|load', or '+@scripting')"


@pytest.fixture(params=list(SCRIPT_REFUSALS))
def scripts_refused(request: pytest.FixtureRequest, key_prefix: str) -> Iterator[tuple[str, str]]:
    """LOCATION of a server refusing a command scripts go by, and the check's words for it."""
    command, words = SCRIPT_REFUSALS[request.param]
    for url in refusing_url(key_prefix, request.param, command, redis_server_binary()):
        yield url, words


def test_the_checks_refuse_a_redis_that_refuses_scripts_naming_the_command(
    scripts_refused: tuple[str, str], key_prefix: str
) -> None:
    url, words = scripts_refused
    check = ("manage.py", "check", "--deploy", "--tag", "threadmill")
    ran = run_python(*check, redis_url=url, key_prefix=key_prefix)
    output = ran.stdout + ran.stderr
    assert ran.returncode == 1, output
    assert "(threadmill.E004)" in output
    assert "every enqueue and every worker call runs a Lua script, and this Redis refuses a " \
        "command that sends one, " in output  # fmt: skip
    assert words in output
    assert GRANT_SCRIPTS in output


def test_the_worker_and_the_reaper_stop_at_start_with_exit_code_4(
    scripts_refused: tuple[str, str], key_prefix: str
) -> None:
    url, _ = scripts_refused
    commands = [
        worker(url, key_prefix),
        Command(url, key_prefix, "threadmill_reap", "--once"),
        # Past the checks, the pass meets the refusal: 1 before, a code a restart policy restarts.
        Command(url, key_prefix, "threadmill_reap", "--once", "--skip-checks"),
    ]
    try:
        for command in commands:
            assert command.wait() == 4, command.log
        assert GRANT_SCRIPTS in commands[0].log
        assert "Worker process started" not in commands[0].log
    finally:
        for command in commands:
            command.close()


def test_a_renamed_script_command_is_named_without_the_script_s_source(key_prefix: str) -> None:
    for url in refusing_url(key_prefix, "renamed", "SCRIPT", redis_server_binary()):
        with (
            override_settings(TASKS=tasks_setting(url, key_prefix)),
            pytest.raises(BrokerRefused) as refused,
        ):
            echo.enqueue(1)
    message = str(refused.value)
    assert f"does not know a command this backend sends ({unknown_command_words('SCRIPT')}): " \
        "it was renamed or disabled" in message  # fmt: skip
    assert "with args beginning with" not in message


# The words of an enqueue's error where WAITAOF is refused, up to the fix.
WAITAOF_FIXES = {
    "renamed": "'1' '0' '2000'. This Redis has no WAITAOF (Redis and Valkey have it from 7.2)",
    "acl": "no permissions to run the 'waitaof' command. Grant it to the ACL user ('+waitaof'), "
    "or set OPTIONS['durability'] to 'replicated' or 'local'. A failover now could lose it.",
}


def test_an_enqueue_whose_waitaof_is_refused_says_the_fix(
    waitaof_refused: tuple[str, str],  # noqa: F811
    key_prefix: str,
) -> None:
    url, refusal = waitaof_refused
    how = "renamed" if "unknown command" in refusal else "acl"
    with (
        override_settings(TASKS=tasks_setting(url, key_prefix, durability="fsync")),
        pytest.raises(MaybeApplied) as unconfirmed,
    ):
        echo.enqueue(1)
    assert WAITAOF_FIXES[how] in str(unconfirmed.value)


@pytest.fixture
def fsync_server(key_prefix: str) -> Iterator[tuple[str, str]]:
    """A 7.2+ server with the AOF on: its admin's LOCATION, and an ACL user's with
    MANAGED_RULES, WAITAOF among them."""
    binary = binary_with_waitaof()
    with started(lambda directory: ServerOf(directory, binary, "--appendonly", "yes")) as server:
        with redis.Redis.from_url(server.url) as admin:
            admin.execute_command(
                "ACL", "SETUSER", "app", "reset", "on", f">{APP_PASSWORD}", f"~{key_prefix}:*",
                *MANAGED_RULES,
            )  # fmt: skip
        yield server.url, f"redis://app:{APP_PASSWORD}@127.0.0.1:{server.port}/0"


def test_waitaof_refused_under_a_running_worker_stops_it_saying_the_unconfirmed_outcome(
    fsync_server: tuple[str, str], key_prefix: str
) -> None:
    admin_url, app_url = fsync_server
    command = worker(app_url, key_prefix, options={"durability": "fsync"})
    try:
        command.wait_for_log("Worker process started")
        with redis.Redis.from_url(admin_url) as admin:
            admin.execute_command("ACL", "SETUSER", "app", "-waitaof")
        with override_settings(TASKS=tasks_setting(admin_url, key_prefix)):
            result = echo.enqueue(1)
        assert command.wait(30) == 4, command.log  # REFUSED, as for any right taken away
        log = command.log
    finally:
        command.close()
    assert log.count("Redis refused this worker, stopping") == 1, log
    assert "Grant it to the ACL user ('+waitaof')" in log
    assert f"Ack batch applied but not confirmed kind=finish size=1 task_ids={result.id} " \
        "error=" in log  # fmt: skip
    assert "Ack batch failed" not in log
    # Its stop says Redis refused it: "Redis did not take them in time" asked for a wait.
    assert "Stopped with work left to the reaper unwritten=1 " in log
    assert "(Redis refused this worker, which no wait fixes: " in log
    assert "Redis did not take them in time" not in log
    with override_settings(TASKS=tasks_setting(admin_url, key_prefix)):
        result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL  # written, only not confirmed
