"""threadmill_queue forget-damaged --all whose queue's ``damaged`` key holds another type names
that key, as ``damaged`` and ``forget-damaged`` with ids do.

Before, forget_damaged.lua failed at its HRANDFIELD with "… in one of this backend's keys
(WRONGTYPE … script: <sha>, on @user_script:19.) … delete that key": a key it did not name.
"""

from io import StringIO

import pytest
import redis
from django.core.management import CommandError, call_command

from django_threadmill.broker import Broker

REFUSAL = "WRONGTYPE Operation against a key holding the wrong kind of value"


@pytest.mark.usefixtures("backend")
def test_forget_all_names_a_damaged_key_of_another_type(
    broker: Broker, redis_client: redis.Redis
) -> None:
    damaged = broker.queue_keys("default").damaged
    redis_client.set(damaged, "another program's value")

    with pytest.raises(CommandError) as refused:
        call_command("threadmill_queue", "forget-damaged", "default", "--all", stdout=StringIO())

    assert f"({REFUSAL} in {damaged})" in str(refused.value)
    assert redis_client.get(damaged) == "another program's value"
