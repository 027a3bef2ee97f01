"""A queue name of 10,000 characters given to a command is named short in its refusal.

``Queue name '<the whole name>' is not valid`` echoed it whole: every ``threadmill_queue``
action's QUEUE, ``threadmill_worker --queue`` and ``threadmill_health --queue`` printed a
message of 10,164 characters. The name is now cut as other values given in error are
(wording.shown); every valid name (at most 64 characters) still shows whole.
"""

import pytest
from django.core.management import CommandError, call_command

LONG = "q" * 10_000
REFUSED = (
    f"Queue name '{'q' * 47}...{'q' * 48}' is not valid for ThreadmillTaskBackend. Use 1-64 "
    "letters, digits, '_', '.' or '-', other than '.' or '..' (URLs read those as paths)."
)


@pytest.mark.parametrize(
    ("command", "said"),
    [
        (["threadmill_queue", "pause", LONG], REFUSED),
        (["threadmill_queue", "resume", LONG], REFUSED),
        (["threadmill_queue", "damaged", LONG], REFUSED),
        (["threadmill_queue", "forget-damaged", LONG, "an-id"], REFUSED),
        (["threadmill_queue", "purge", LONG], REFUSED),
        (["threadmill_queue", "purge", LONG, "--dry-run"], REFUSED),
        (["threadmill_worker", "--queue", LONG], REFUSED),
        (["threadmill_health", "--queue", LONG], f"--queue: {REFUSED}"),
    ],
    ids=[
        "queue pause",
        "queue resume",
        "queue damaged",
        "queue forget-damaged",
        "queue purge",
        "queue purge --dry-run",
        "worker --queue",
        "health --queue",
    ],
)
@pytest.mark.usefixtures("backend", "logging_put_back")
def test_a_queue_name_of_ten_thousand_characters_is_named_by_its_start_and_end(
    command: list[str], said: str
) -> None:
    with pytest.raises(CommandError) as refused:
        call_command(*command)

    assert str(refused.value) == said


@pytest.mark.usefixtures("backend", "logging_put_back")
def test_a_name_of_the_most_characters_a_queue_takes_plus_one_is_still_named_whole() -> None:
    with pytest.raises(CommandError) as refused:
        call_command("threadmill_queue", "pause", "q" * 65)

    assert str(refused.value).startswith(f"Queue name '{'q' * 65}' is not valid for ")
