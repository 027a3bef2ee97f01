"""Read single fields of a stored payload without decoding its arguments.

``records.encode_payload`` writes the path first and run_after_ms last, so both sit where a
partial decode finds them; anything else falls back to a full decode or to "unknown".
"""

import json
import re

_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"\s*")
_PATH_OPENING = '{"path":'
_RUN_AFTER_KEY = '"run_after_ms":'
_NO_RUN_AFTER = _RUN_AFTER_KEY + "null}"  # how records.encode_payload ends without run_after


def task_path(payload: str | None) -> str:
    """Return the task path from a payload without decoding all its arguments if possible."""
    if not payload:
        return ""
    if payload.startswith(_PATH_OPENING + '"'):  # how records.encode_payload writes it
        end = payload.find('"', len(_PATH_OPENING) + 1)
        path = payload[len(_PATH_OPENING) + 1 : end]
        if end > 0 and "\\" not in path:  # a path with escapes is read by the decoder below
            return path
    try:
        if payload.startswith(_PATH_OPENING):
            path, _ = _DECODER.raw_decode(payload, _SPACE.match(payload, len(_PATH_OPENING)).end())
        else:
            path = json.loads(payload).get("path", "")
    except (ValueError, AttributeError):
        return ""
    return path if isinstance(path, str) else ""


def run_after_ms(payload: str) -> int | None:
    """Return the run_after_ms a payload stores, or None (none, or unreadable).

    The last occurrence of the key is the payload's own: argument text comes before it.
    """
    if payload.endswith(_NO_RUN_AFTER):  # the usual payload: nothing to decode
        return None
    at = payload.rfind(_RUN_AFTER_KEY)
    if at < 0:
        return None
    try:
        value, _ = _DECODER.raw_decode(
            payload, _SPACE.match(payload, at + len(_RUN_AFTER_KEY)).end()
        )
    except ValueError:
        return None
    return value if type(value) is int else None
