"""The argparse type of every whole-number option a threadmill command takes."""

from argparse import ArgumentTypeError

from ..wording import shown


def int_option(text: str) -> int:
    """Return ``text`` as an int, refusing it in argparse's own words ("invalid int value").

    argparse's ``type=int`` echoed the text whole: one past Python's 4,300 digits
    (``sys.get_int_max_str_digits``), or of 10,000 characters, filled the usage error. It is
    shown cut short, as other values given in error are; each command checks its bounds.
    """
    try:
        return int(text)
    except ValueError:
        raise ArgumentTypeError(f"invalid int value: {shown(text)}") from None
