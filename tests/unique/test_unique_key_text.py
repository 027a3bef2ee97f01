"""A unique_key that UTF-8 cannot hold (a lone surrogate, as os.fsdecode leaves a byte that is not
UTF-8) still names a task: the key is hashed, never sent to Redis."""

import pytest

from .tasks import index_file

pytestmark = pytest.mark.usefixtures("backend")


def test_a_unique_key_with_a_lone_surrogate_names_one_task() -> None:
    first = index_file.enqueue("/data/caf?.txt")
    assert index_file.enqueue("/data/caf?.txt").id == first.id
    assert index_file.enqueue("/data/cafe.txt").id != first.id
