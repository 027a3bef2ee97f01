"""The argparse type of a command's free text that is stored in Redis (a pause's reason, ids)."""

from argparse import ArgumentTypeError

from ..codec.text import printable


def text_option(text: str) -> str:
    """Return ``text`` as typed, refusing bytes that are not UTF-8.

    Python hands such bytes of ``sys.argv`` over as lone surrogates, which Redis cannot be sent
    (docs/reliability.md, Text that UTF-8 cannot hold): refused here, as an argparse usage error.
    """
    shown = printable(text)
    if shown != text:
        raise ArgumentTypeError(
            f'"{shown}" holds bytes that are not UTF-8 (each shown as \\udcXX, XX the byte). '
            "Type it in UTF-8: set the terminal's encoding, e.g. LANG=C.UTF-8."
        )
    return text
