"""keys.py: every key of one queue shares one hash tag; task ids carry their queue."""

import pytest
from redis.crc import key_slot

from django_threadmill.broker import Broker
from django_threadmill.broker.keys import KeySpace
from django_threadmill.codec.ids import make_task_id, queue_of

QUEUE_KEY_NAMES = ["ready", "delayed", "leases", "done", "wake", "seq", "stats", "workers", "held"]


def test_queue_keys_are_named_under_the_queue_tag() -> None:
    keys = KeySpace("tm", "default").queue("emails")
    assert keys.prefix == "tm:{default:emails}"
    assert keys.record("abc@emails") == "tm:{default:emails}:t:abc@emails"
    assert keys.record_prefix == "tm:{default:emails}:t:"
    assert {name: getattr(keys, name) for name in QUEUE_KEY_NAMES} == {
        name: f"tm:{{default:emails}}:{name}" for name in QUEUE_KEY_NAMES
    }


@pytest.mark.parametrize("queue", ["default", "emails", "a.b-c_d", "x" * 64])
def test_every_key_of_a_queue_hashes_to_one_slot(queue: str) -> None:
    keys = KeySpace("tm:app", "alias").queue(queue)
    names = [
        keys.record(make_task_id("f" * 32, queue)),
        *(getattr(keys, n) for n in QUEUE_KEY_NAMES),
    ]
    assert {key_slot(name.encode()) for name in names} == {key_slot(f"{{alias:{queue}}}".encode())}


def test_alias_wide_keys_use_the_alias_tag() -> None:
    space = KeySpace("tm", "default")
    assert space.queues == "tm:{default}:queues"


def test_a_process_wake_list_shares_the_slot_of_its_first_queue() -> None:
    keys = KeySpace("tm", "default").queue("emails")
    assert keys.process_wake("host-1") == "tm:{default:emails}:wake:host-1"


def test_aliases_do_not_share_keys() -> None:
    assert KeySpace("tm", "one").queue("q").ready != KeySpace("tm", "two").queue("q").ready


@pytest.mark.parametrize("queue", ["default", "a.b-c_d"])
def test_task_id_carries_its_queue(queue: str) -> None:
    task_id = make_task_id("0123abcd", queue)
    assert task_id == f"0123abcd@{queue}"
    assert queue_of(task_id) == queue


@pytest.mark.parametrize("task_id", ["plain-uuid", "trailing@", ""])
def test_foreign_ids_name_no_queue(task_id: str) -> None:
    assert queue_of(task_id) is None


def test_queue_is_what_follows_the_last_separator() -> None:
    assert queue_of("odd@id@emails") == "emails"


def test_broker_finds_no_record_for_a_foreign_id(broker: Broker) -> None:
    assert broker.record_key("not-ours") is None
    assert broker.record("not-ours") is None
    assert broker.record(make_task_id("0" * 32, "default")) is None
