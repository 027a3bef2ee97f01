"""``ExponentialBackoff.from_dict`` refuses what is not the dict ``to_dict`` wrote, naming it: the
JSON text itself raised a bare AttributeError ('str' object has no attribute 'get'), a
``retry_on`` written as one path was read letter by letter ("retry_on entry 'b' names no
class"), and an entry that is not a path raised a bare AttributeError too."""

import json
import re

import pytest

from django_threadmill.retry import ExponentialBackoff

WRITTEN = ExponentialBackoff(retry_on=(ConnectionError,)).to_dict()


def test_the_json_text_is_refused_saying_to_load_it_first() -> None:
    with pytest.raises(
        TypeError,
        match=(
            r"^ExponentialBackoff\.from_dict\(\) takes the dict to_dict\(\) wrote, not a str\. "
            r"Load the JSON text first: from_dict\(json\.loads\(text\)\)\.$"
        ),
    ):
        ExponentialBackoff.from_dict(json.dumps(WRITTEN))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "retry_on", ["builtins.ConnectionError", None, ["builtins.ConnectionError", 7]]
)
def test_a_retry_on_that_is_not_a_list_of_paths_is_refused(retry_on: object) -> None:
    with pytest.raises(
        TypeError,
        match=(
            rf"^Retry policy dict has retry_on={re.escape(repr(retry_on))}, not a list of "
            r"exception class paths\. Write it as to_dict\(\) does, e\.g\. "
            r"\['builtins\.ConnectionError'\]\.$"
        ),
    ):
        ExponentialBackoff.from_dict(WRITTEN | {"retry_on": retry_on})


def test_the_dict_to_dict_wrote_still_reads_back() -> None:
    assert ExponentialBackoff.from_dict(json.loads(json.dumps(WRITTEN))) == ExponentialBackoff(
        retry_on=(ConnectionError,)
    )
