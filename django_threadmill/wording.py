"""Wording shared by error messages and log lines."""

import math
import reprlib
from collections.abc import Collection
from itertools import islice

from django.utils.text import get_text_list

from .compat import DEFAULT_TASK_BACKEND_ALIAS

# Past this many bits (about 39 digits) reprlib cuts an int short; past about 4,300 digits
# Python refuses to write it at all (sys.get_int_max_str_digits).
SHOWN_INT_BITS = 128
# How values given in error are shown: reprlib's cuts, but a str (a name, an alias) whole up to
# 100 characters, as ids are (codec/ids.py, SHOWN_ID_CHARS): its 30 cut real names.
_SHORT = reprlib.Repr(maxstring=100, maxother=100)
# Ids one message names; the rest are counted: an admin action on a filter leaves up to 10,000
# alone, whose ids made a message of 400 KB, kept in the session, and forget-damaged may be
# given thousands.
MAX_LISTED_IDS = 20
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
    return f"{'a' if not vowel_sound or _you_sound(name) else 'an'} {name}"


def _you_sound(name: str) -> bool:
    """Whether ``name`` starts with the sound of "you": a U, then one consonant and a vowel
    ("User", "Utility"), where "Update" and "Unknown" start with a vowel sound. After "Un" only
    an i makes it ("Unit", "Union"), and not before an n or m ("Unused", "Uninitialized",
    "Unimplemented" open with the prefix un-). Model classes are named so: "args[0] is an
    User" read wrong in the error for the most common."""
    if name[:2] == "Un":
        return name[2:3] == "i" and name[3:4] not in ("n", "m")
    return name[0] == "U" and name[1:2].isalpha() and name[1] not in VOWELS and name[2:3] in VOWELS


def an_int_of_its_size(value: int) -> str:
    """Name an int by its size: "an int of about 5000 digits", for one too long to show."""
    return f"an int of about {int(value.bit_length() * math.log10(2))} digits"


def shown(value: object) -> str:
    """Return ``value``, given in error, as a message shows it: its repr cut short (a rate of
    5,000 digits must not fill the message), an int too long to show named by its size."""
    if isinstance(value, int) and value.bit_length() > SHOWN_INT_BITS:
        return an_int_of_its_size(value)
    return _SHORT.repr(value)


def command_line(alias: str, words: str) -> str:
    """Return ``manage.py <words>`` as a command or a log line tells the operator to run it on
    ``alias``: ``--backend`` added for any alias but the option's default (without it, a resume
    of a queue two aliases both have resumed the other alias's, leaving this one paused)."""
    return f"manage.py {words}{backend_flag(alias)}"


def backend_flag(alias: str) -> str:
    """Return the ``--backend`` a command given on ``alias`` ends with: none for the option's
    default."""
    return "" if alias == DEFAULT_TASK_BACKEND_ALIAS else f" --backend {alias}"


def listed_names(names: Collection[str]) -> str:
    """List the first MAX_LISTED_IDS of ``names`` and count the others: "a, b and 980 more"."""
    listed, more = _first_listed(names)
    return get_text_list([*listed, f"{more:,} more"] if more else listed, "and")


def listed_values(values: Collection[str]) -> str:
    """List the first MAX_LISTED_IDS of ``values`` as one ``key=value`` field of a log or
    probe line, and count the others in one more item, without a space: "a,b,+980_more"."""
    listed, more = _first_listed(values)
    return ",".join([*listed, f"+{more}_more"] if more else listed)


def _first_listed(names: Collection[str]) -> tuple[list[str], int]:
    """The first MAX_LISTED_IDS of ``names`` (a dict: its keys), and how many are left."""
    return list(islice(names, MAX_LISTED_IDS)), max(len(names) - MAX_LISTED_IDS, 0)
