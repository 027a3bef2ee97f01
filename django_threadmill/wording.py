"""Wording shared by error messages."""

VOWELS = frozenset("aeiouAEIOU")
# Letters whose spoken name starts with a vowel sound: "an HTTPResponse", "an SSLError".
VOWEL_SOUNDING_LETTERS = frozenset("AEFHILMNORSX")


def dotted_name(value: object) -> str:
    """Return where ``value`` is defined, e.g. "myapp.tasks.report", or its repr if it does not
    say (a function's repr holds a memory address)."""
    module, name = getattr(value, "__module__", None), getattr(value, "__qualname__", None)
    return f"{module}.{name}" if module and name else repr(value)


def a_type(value: object) -> str:
    """Return the type of ``value`` with its article: "a list", "an int", "an ImmediateBackend",
    and for a name read letter by letter (two capitals first) as it is spoken: "a UUID"."""
    name = type(value).__name__
    spelt_out = name[:2].isupper() and name[:2].isalpha()
    vowel_sound = name[0] in (VOWEL_SOUNDING_LETTERS if spelt_out else VOWELS)
    return f"{'an' if vowel_sound else 'a'} {name}"
