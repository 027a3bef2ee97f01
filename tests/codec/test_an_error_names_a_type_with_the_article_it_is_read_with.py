"""Error messages name a value's type with the article it is read with."""

import uuid
from decimal import Decimal
from http.client import HTTPException

import pytest

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
    ],
)
def test_a_type_reads_as_spoken(value: object, expected: str) -> None:
    assert a_type(value) == expected
