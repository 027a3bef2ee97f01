"""Under durability='replicated', a WAIT the ACL user may not run is refused naming the grant
('+wait') and the one other mode that sends none ('local'), as a refused WAITAOF names
'+waitaof'; and the checks refuse it at start (threadmill.E005), as they refuse a refused
WAITAOF under 'fsync'.

An ACL built from categories leaves WAIT out unless it grants @connection or @slow (it is in
those two alone). The enqueue's error said only "this user has no permissions to run the 'wait'
command", with no fix, and a fix naming the modes would have offered 'replicated' itself; and
the checks passed such a server, whose worker started and stopped at its first outcome.
"""

import pytest
from django.test import override_settings

from django_threadmill.exceptions import MaybeApplied
from testproject.example.tasks import echo
from tests.conftest import tasks_setting
from tests.servers.redis_server import redis_server_binary
from tests.support import no_permission_words, run_python

from .test_a_redis_that_refuses_config_or_waitaof_is_named_by_the_checks_not_passed_over import (
    refusing_url,
)


def test_an_enqueue_whose_wait_is_refused_names_the_grant(key_prefix: str) -> None:
    for url in refusing_url(key_prefix, "acl", "WAIT", redis_server_binary()):
        with (
            override_settings(TASKS=tasks_setting(url, key_prefix, durability="replicated")),
            pytest.raises(MaybeApplied) as unconfirmed,
        ):
            echo.enqueue(1)
    assert (
        f"durability='replicated' is not met: the confirmation failed: this user has "
        f"{no_permission_words('wait')}. Grant it to the ACL user ('+wait'), or set "
        "OPTIONS['durability'] to 'local'. A failover now could lose it."
    ) in str(unconfirmed.value)


def test_the_checks_refuse_replicated_where_wait_is_refused(key_prefix: str) -> None:
    for url in refusing_url(key_prefix, "acl", "WAIT", redis_server_binary()):
        check = ("manage.py", "check", "--deploy", "--tag", "threadmill")
        ran = run_python(*check, redis_url=url, key_prefix=key_prefix,
                         options={"durability": "replicated"})  # fmt: skip
    output = ran.stdout + ran.stderr
    assert ran.returncode == 1, output
    assert "(threadmill.E005)" in output
    assert "durability='replicated' sends WAIT after every write, and this Redis refuses it " \
        f"(this user has {no_permission_words('wait')})" in output  # fmt: skip
    assert "grant it to the ACL user ('+wait'); or use durability='local'." in output
