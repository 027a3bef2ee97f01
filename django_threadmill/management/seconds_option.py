"""The argparse type of every option a threadmill command takes in seconds."""

import math
from argparse import ArgumentTypeError

from ..codec.ids import named_short
from ..wording import shown

# The longest duration an option may give, in seconds (about 11.6 days). The waits these
# options feed overflow past 2**31 - 1 ms (24.8 days: poll(), where the supervisor waits) or
# threading.TIMEOUT_MAX; this keeps every one of them, and the sums made of them, below both.
MAX_SECONDS = 1_000_000.0


def seconds_option(text: str) -> float:
    """Return ``text`` as seconds, refusing NaN, infinity and anything above MAX_SECONDS.

    NaN passes every ``<= 0`` check and infinity overflows the waits, so both are refused here,
    as argparse usage errors, ``text`` cut short (one of 10,000 characters filled the message);
    each command still checks the lower bound its option needs.
    """
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan  # not a number at all: refused below, in the same words as NaN
    if not math.isfinite(seconds):
        raise ArgumentTypeError(
            f"{shown(text)} is not a finite number of seconds. Use e.g. 10 or 0.5."
        )
    if seconds > MAX_SECONDS:
        raise ArgumentTypeError(
            f"{named_short(text)} is above the ceiling of {MAX_SECONDS:.0f} seconds (about 11 "
            "days; waits past 24 days overflow the system's timers). Use a smaller number."
        )
    return seconds
