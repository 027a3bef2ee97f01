"""Wording shared by error messages."""

VOWELS = frozenset("aeiouAEIOU")


def a_type(value: object) -> str:
    """Return the type of ``value`` with its article: "a list", "an int", "an ImmediateBackend"."""
    name = type(value).__name__
    return f"{'an' if name[0] in VOWELS else 'a'} {name}"
