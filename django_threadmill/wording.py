"""Wording shared by error messages."""

VOWELS = frozenset("aeiouAEIOU")


def dotted_name(value: object) -> str:
    """Return where ``value`` is defined, e.g. "myapp.tasks.report", or its repr if it does not
    say (a function's repr holds a memory address)."""
    module, name = getattr(value, "__module__", None), getattr(value, "__qualname__", None)
    return f"{module}.{name}" if module and name else repr(value)


def a_type(value: object) -> str:
    """Return the type of ``value`` with its article: "a list", "an int", "an ImmediateBackend"."""
    name = type(value).__name__
    return f"{'an' if name[0] in VOWELS else 'a'} {name}"
