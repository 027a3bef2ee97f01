"""No pickle anywhere: payloads, results and errors are JSON, so reading them runs no code."""

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "django_threadmill"
UNSAFE = re.compile(r"\b(pickle|cPickle|dill|marshal|shelve|jsonpickle|yaml\.load|eval\(|exec\()")


def test_the_package_never_unpickles_or_evaluates() -> None:
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{number}: {line.strip()}"
        for path in sorted(PACKAGE.rglob("*"))
        if path.suffix in (".py", ".lua")
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if UNSAFE.search(line)
    ]
    assert found == []


def test_redis_clients_are_built_without_a_serializer() -> None:
    """The broker talks to Redis with decode_responses=True: strings in, strings out."""
    source = (PACKAGE / "broker" / "connection.py").read_text()
    assert '"decode_responses": True' in source
