"""threadmill_health after a worker stopped, and for a --host no worker id can name.

A process that stops signs off, taking its sighting with it: the probe still says when its host
was last seen, and that it stopped. A --host that is empty or holds a ':' never matches a worker
id (``<host>:<pid>:<tag>``), nor does one with whitespace name a host: a wrong option (exit 2),
not workers gone (exit 1). One of bytes that are not UTF-8 is argparse's usage error, not a
traceback.
"""

import re
from collections.abc import Callable
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from django_threadmill.management.health import HealthCode
from tests.management.test_health import LEASE_TTL_S, Probe, probe_at, until_exit
from tests.support import Command, running


@pytest.fixture
def probe(redis_url: str, key_prefix: str) -> Probe:
    return lambda *args: probe_at(redis_url, key_prefix, *args)


def test_last_seen_of_a_host_whose_worker_stopped_is_when_it_stopped(
    probe: Probe, start_worker: Callable[..., Command]
) -> None:
    with running(start_worker("--processes", "2", lease_ttl_s=LEASE_TTL_S)):
        until_exit(probe, HealthCode.HEALTHY, "--min-processes", "2")
    stopped = probe()
    assert stopped.returncode == HealthCode.TOO_FEW
    assert re.search(
        r" live=0 .* last_seen=\d+\.\ds_ago_stopped live_elsewhere=0: ", stopped.stderr
    ), stopped.stderr


@pytest.mark.parametrize("host", ["", "worker-7c9f:8000"])
def test_a_host_no_worker_id_can_name_exits_2_naming_the_fix(host: str) -> None:
    with pytest.raises(CommandError) as raised:
        call_command("threadmill_health", "--host", host, stdout=StringIO())
    assert raised.value.returncode == HealthCode.USAGE
    assert str(raised.value) == (
        f"--host {host!r} cannot be a worker's host: worker ids name it before their first "
        "':'. Give the host name alone, as socket.gethostname() on the worker's host returns "
        "it, e.g. --host worker-7c9f, or leave --host out on that host."
    )


@pytest.mark.parametrize("host", ["worker 7c9f", " ", "worker-7c9f\n", "\tworker-7c9f"])
def test_a_host_with_whitespace_exits_2_naming_the_fix(host: str) -> None:
    """A host name holds no whitespace (RFC 1123): one pasted with a space or a line break
    read as workers gone, and the line break split the probe's one line in two."""
    with pytest.raises(CommandError) as raised:
        call_command("threadmill_health", "--host", host, stdout=StringIO())
    assert raised.value.returncode == HealthCode.USAGE
    assert str(raised.value) == (
        f"--host {host!r} cannot be a worker's host: a host name holds no spaces, tabs or line "
        "breaks. Give the host name alone, as socket.gethostname() on the worker's host "
        "returns it, e.g. --host worker-7c9f, or leave --host out on that host."
    )


def test_a_host_of_bytes_that_are_not_utf8_is_a_usage_error_not_a_traceback() -> None:
    """Python hands such bytes of the command line over as lone surrogates, which Redis cannot
    be sent: the probe raised UnicodeEncodeError from deep in redis-py."""
    with pytest.raises(CommandError) as raised:
        call_command("threadmill_health", "--host", "worker-\udcff", stdout=StringIO())
    assert str(raised.value) == (
        'Error: argument --host: "worker-\\udcff" holds bytes that are not UTF-8 (each shown as '
        "\\udcXX, XX the byte). Type it in UTF-8: set the terminal's encoding, e.g. "
        "LANG=C.UTF-8."
    )
