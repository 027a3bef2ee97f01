"""Error messages name a value's type with the article it is read with."""

import uuid
from decimal import Decimal
from http.client import HTTPException

import pytest
from django.contrib.auth.models import User

from django_threadmill.wording import a_type


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ([], "a list"),
        (1, "an int"),
        (object(), "an object"),
        (Decimal(1), "a Decimal"),
        (uuid.uuid4(), "a UUID"),
        (HTTPException(), "an HTTPException"),
        (b"", "a bytes"),
        (User(), "a User"),  # a U read as "you": it read "an User"
        (type("Unknown", (), {})(), "an Unknown"),
        (type("Union", (), {})(), "a Union"),
        (type("Unused", (), {})(), "an Unused"),  # it read "a Unused"
        (type("Uninitialized", (), {})(), "an Uninitialized"),  # "a Uninitialized"
        (type("Unimplemented", (), {})(), "an Unimplemented"),
        (type("Utility", (), {})(), "a Utility"),
    ],
)
def test_a_type_reads_as_spoken(value: object, expected: str) -> None:
    assert a_type(value) == expected
