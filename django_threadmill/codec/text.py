"""Free text a caller hands over (a progress note, a reason) is stored in Redis as UTF-8.

A Python str may hold a lone surrogate that UTF-8 cannot encode: ``os.fsdecode`` and
``sys.argv`` turn bytes that are not UTF-8 into them (``\\udcff`` for a ``0xff`` byte). Sent as
is, such a str fails inside the Redis client, far from the call that brought it, so it is
refused where it comes in (docs/reliability.md, Text that UTF-8 cannot hold).
"""

import re

from django.utils.functional import Promise

from ..wording import a_type, shown

# Unicode's bidi controls: ALM, LRM, RLM, the embeddings and overrides, the isolates. A browser
# or a log viewer obeys one that HTML escaping keeps: a right-to-left override turns the text
# after it around, the page's or the line's own words included.
BIDI_CONTROLS = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
BIDI = re.compile(f"[{BIDI_CONTROLS}]")
# Unicode's LINE SEPARATOR and PARAGRAPH SEPARATOR: no control characters, yet str.splitlines
# and many log viewers end a line at each, so one in a task's error forged a log line.
LINE_SEPARATORS = "\u2028\u2029"


def digits_int(text: str) -> int | None:
    """Return ``text`` as a whole number if it is ASCII digits only, as Redis scripts write
    numbers, else None: ``isdigit`` takes "²", which ``int()`` refuses, and ``int()`` takes "٣",
    which no script reads (a field written by hand)."""
    return int(text) if text.isascii() and text.isdigit() else None


def utf8_text(value: object, what: str) -> str:
    """Return ``value`` if it is a str UTF-8 can encode, else raise naming ``what`` and the fix,
    and ``value`` cut short: bytes of 100,000 given as a note or a reason filled the message.

    A lazily translated string (``gettext_lazy``, as Django code often holds its texts) is
    taken as its text in the language active now."""
    if isinstance(value, Promise):
        value = str(value)
    if not isinstance(value, str):
        raise TypeError(f"{what}={shown(value)} is {a_type(value)}. Pass a str.")
    try:
        value.encode()
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"{what} holds {value[exc.start]!r} at index {exc.start}, a lone surrogate that "
            "UTF-8 cannot encode (it stands for a byte that was not UTF-8 text, as os.fsdecode "
            "leaves it). Pass text: decode such bytes with errors='replace' or "
            "'backslashreplace', or escape the str with "
            "text.encode('utf-8', 'backslashreplace').decode()."
        ) from None
    return value


def printable(text: str) -> str:
    """Return ``text`` with each lone surrogate written as its escape (``\\udcff``), so a page
    or a terminal can show what a task stored, args and errors included, as UTF-8; and each
    bidi control as the escapes of its UTF-8 bytes (``\\xe2\\x80\\xae``), so what a task
    stored cannot turn the words around it."""
    return BIDI.sub(utf8_escapes, text.encode("utf-8", "backslashreplace").decode("utf-8"))


def utf8_escapes(found: re.Match[str]) -> str:
    """Return the character ``found`` as the ``\\xNN`` escapes of its UTF-8 bytes."""
    return "".join(f"\\x{byte:02x}" for byte in found[0].encode())
