"""A pause reason's Unicode bidi controls (U+202E and the others) are shown escaped, as its
control characters are, on the queues page, the pause confirmation and the log line.

HTML escaping leaves them as they are, and a browser obeys them: a reason holding a
right-to-left override turned the text after it around, the badge's fixed words ("Workers take
none of its tasks …") and the confirmation's READY count included, so whoever paused the queue
could make the page say what it did not. An invisible mark showed nothing of itself either.
"""

import logging

import pytest
from django.test import Client

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker.inspect import Inspector
from tests.admin.conftest import QUEUES_URL
from tests.admin.test_queue_pause import PAUSE_URL, RESUME_URL, confirmed

# A right-to-left override, then an isolate and a mark of each kind.
REASON = "deploy \u202e8 ,yadot \u2067x\u2069 \u200f\u061c"
ESCAPED = "deploy \\xe2\\x80\\xae8 ,yadot \\xe2\\x81\\xa7x\\xe2\\x81\\xa9 \\xe2\\x80\\x8f\\xd8\\x9c"
BIDI = [chr(c) for c in (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))]


def test_a_reasons_bidi_controls_are_shown_escaped_on_the_pages_and_in_the_log(
    operator: Client, backend: ThreadmillTaskBackend, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="django_threadmill.broker.pausing"):
        confirmed(operator, PAUSE_URL, reason=REASON)
    assert Inspector(backend.broker).paused(["default"])["default"].reason == REASON  # as given

    queues = operator.get(QUEUES_URL).content.decode()
    confirmation = operator.post(RESUME_URL).content.decode()

    assert f": {ESCAPED}. Workers take none of its tasks until it is resumed." in queues
    assert f": {ESCAPED}. Workers take none of its tasks until it is resumed." in confirmation
    [logged] = caplog.messages
    assert logged.endswith(f" reason={ESCAPED}"), logged
    for text in (queues, confirmation, logged):
        assert not [char for char in BIDI if char in text]
