"""Load the Lua scripts in ``lua/`` and describe one call of one script.

Each script is prepended with ``common.lua`` (helpers only), registered once per client, and
sent with EVALSHA; redis-py reloads it on NOSCRIPT, so a Redis restart or SCRIPT FLUSH is harmless.
"""

from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from importlib.resources import files


class ScriptName(StrEnum):
    ENQUEUE = "enqueue"
    ACQUIRE = "acquire"
    START = "start"
    FINISH = "finish"
    RENEW = "renew"
    RELEASE = "release"
    REAP = "reap"
    CANCEL = "cancel"
    REQUEUE = "requeue"
    PURGE = "purge"


@cache
def script_source(name: ScriptName) -> str:
    """Return the full source sent to Redis for ``name``: common helpers, then the script."""
    lua = files(__package__) / "lua"
    return (lua / "common.lua").read_text() + "\n" + (lua / f"{name}.lua").read_text()


@dataclass(frozen=True, slots=True)
class ScriptCall:
    """One script invocation, built once and sent by the sync or the async client alike."""

    name: ScriptName
    keys: tuple[str, ...]
    args: tuple[str | int | float, ...]
