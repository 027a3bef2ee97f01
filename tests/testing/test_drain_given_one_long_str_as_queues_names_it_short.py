"""drain(queues=...) given one str, bytes or an int too long to show names it cut short
(wording.shown), as every other bad argument is named.

``queues="z" * 100_000`` was echoed whole twice, in "queues=… is one string" and in the fix
"queues=[…]": a message of 200,000 characters; an int past Python's 4,300 digits could not be
written at all, and raised a bare "Exceeds the limit (4300 digits) for integer string
conversion" naming neither the argument nor the fix.
"""

import pytest

from django_threadmill.testing import drain

CUT = f"'{'z' * 47}...{'z' * 48}'"


@pytest.mark.parametrize(
    ("queues", "message"),
    [
        (
            "z" * 100_000,
            f"queues={CUT} is one string, not a list of queue names. Pass a list, e.g. "
            f"queues=[{CUT}].",
        ),
        (
            b"z" * 100_000,
            f"queues=b'{'z' * 46}...{'z' * 48}' is one string, not a list of queue names. Pass "
            f"a list, e.g. queues=[b'{'z' * 46}...{'z' * 48}'].",
        ),
        (
            10**5000,
            "queues=an int of about 5000 digits is an int, not a list of queue names. Pass a "
            "list, e.g. queues=['default'], or None for every queue in QUEUES.",
        ),
    ],
    ids=["a str", "bytes", "an int of 5000 digits"],
)
@pytest.mark.usefixtures("backend")
def test_the_value_given_as_queues_is_named_cut_short_with_the_fix(
    queues: object, message: str
) -> None:
    with pytest.raises(TypeError) as refused:
        drain(queues=queues)  # type: ignore[arg-type]

    assert str(refused.value) == message


@pytest.mark.usefixtures("backend")
def test_a_queue_name_given_as_one_str_is_still_named_whole() -> None:
    with pytest.raises(TypeError) as refused:
        drain(queues="emails")

    assert str(refused.value) == (
        "queues='emails' is one string, not a list of queue names. Pass a list, e.g. "
        "queues=['emails']."
    )
