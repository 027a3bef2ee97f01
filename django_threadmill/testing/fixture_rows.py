"""Tell which tasks were enqueued as fixtures loaded (docs/testing.md, Keys are flushed around
each test).

``loaddata`` saves each row of a fixture raw (``pre_save`` and ``post_save`` are sent with
``raw=True``), and a project's receiver of those signals may enqueue. A TestCase loads its
``fixtures`` once for the class, and ThreadmillTestMixin's flush before the first test deletes
what they enqueued: its warning names the fixtures and the models whose rows enqueued, where it
named a ``setUpClass`` or ``setUpTestData`` the class may not have.
"""

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db.models.signals import post_save, pre_save

from ..backend import ThreadmillTaskBackend
from ..compat import TaskResult, task_enqueued


@contextmanager
def enqueued_by_fixture_rows() -> Iterator[dict[str, str]]:
    """Map the id of each task a ThreadmillTaskBackend stores inside the block while a raw
    save (a fixture's row, as ``loaddata`` saves it) runs in the same thread to the label of
    that row's model. A receiver connected before the block runs before the row's end is noted
    (receivers run in the order they connected)."""
    saving: dict[int, str] = {}  # thread id -> the model whose row it saves raw
    models_of: dict[str, str] = {}

    def row_begins(sender: Any, raw: bool = False, **kwargs: Any) -> None:
        if raw:
            saving[threading.get_ident()] = sender._meta.label

    def row_ends(sender: Any, raw: bool = False, **kwargs: Any) -> None:
        if raw:
            saving.pop(threading.get_ident(), None)

    def note(sender: type, task_result: TaskResult, **kwargs: Any) -> None:
        model = saving.get(threading.get_ident())
        if model is not None and issubclass(sender, ThreadmillTaskBackend):
            models_of[task_result.id] = model

    pre_save.connect(row_begins, weak=False)
    post_save.connect(row_ends, weak=False)
    task_enqueued.connect(note, weak=False)
    try:
        yield models_of
    finally:
        task_enqueued.disconnect(note)
        post_save.disconnect(row_ends)
        pre_save.disconnect(row_begins)
