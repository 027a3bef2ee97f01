"""Load the Lua scripts in ``lua/`` and describe one call of one script.

Each script is prepended with the definitions of ``common.lua`` (helpers only) it uses
(prelude.py), registered once per client, and sent with EVALSHA; a call that meets NOSCRIPT
is sent again once its script is loaded (on a Redis Cluster, as EVAL: calls.py, sent_again), so
a Redis restart or SCRIPT FLUSH is harmless.
"""

import re
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from importlib.resources import files

import redis
from redis.commands.core import Script

from .prelude import prelude
from .raw_replies import RAW


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
    METRICS = "metrics"
    ADVANCE = "advance"
    MARK = "mark"
    CREATE_WORKFLOW = "create_workflow"
    PROGRESS = "progress"
    PACE = "pace"
    SET_ASIDE = "set_aside"
    SET_ASIDE_EXPIRED = "set_aside_expired"
    FORGET_DAMAGED = "forget_damaged"
    FORGET_ENTRY = "forget_entry"
    ROW_FIELDS = "row_fields"
    SIGN_OFF = "sign_off"
    SERVER_SEEN = "server_seen"


# Scripts a full Redis (maxmemory, noeviction) must still run: they settle, renew or hand back work
# already stored and add at most a few fields. Redis 7 refuses their first write at maxmemory unless
# flagged, and a worker could then neither ack nor renew (docs/reliability.md, Redis settings we
# require). Progress only overwrites four short fields of a record that is there (its note is
# capped), and rides the finish calls: refused, it would hold up the acks it travels with. Pace
# overwrites one short string, and a refused pace would keep reserved tasks from starting.
# Sign-off drops a stopping process's sighting and adds one host's time: refused, the stopped
# process would be counted live for a lease. Server-seen overwrites one short string, and a reaper
# refused it would settle no lease.
# Enqueue, acquire and requeue add work, so they keep failing with a clear OOM error.
ALLOW_OOM = frozenset(
    {
        ScriptName.START,
        ScriptName.FINISH,
        ScriptName.METRICS,
        ScriptName.RENEW,
        ScriptName.RELEASE,
        ScriptName.REAP,
        ScriptName.CANCEL,
        ScriptName.PURGE,
        ScriptName.PROGRESS,
        ScriptName.PACE,
        ScriptName.SET_ASIDE,
        ScriptName.SET_ASIDE_EXPIRED,
        ScriptName.SIGN_OFF,
        ScriptName.SERVER_SEEN,
    }
)
# Scripts that write nothing. Redis holds every script call back as a write while a FAILOVER or
# a CLIENT PAUSE WRITE lasts, and refuses it on a read-only replica, unless the script is flagged
# no-writes: the admin's task list hung for the whole pause (docs/admin.md, Cost per page view).
# A failed call of theirs is a read to retry (connection.py).
READ_ONLY = frozenset({ScriptName.ROW_FIELDS})
# The flags each script opens with on Redis 7+ (6.2 reads a shebang as a syntax error).
SHEBANGS = {
    **dict.fromkeys(ALLOW_OOM, "#!lua flags=allow-oom\n"),
    **dict.fromkeys(READ_ONLY, "#!lua flags=no-writes\n"),
}
FIRST_VERSION_WITH_FLAGS = 7


def _lua_file(name: str) -> str:
    return (files(__package__) / "lua" / f"{name}.lua").read_text()


@cache
def lua_constant(name: str) -> int:
    """Return the whole number common.lua defines as ``local <name> = <digits>``.

    Python reads the constants the scripts use from there, so each is written once.
    """
    found = re.search(rf"^local {name} = (\d+)$", _lua_file("common"), re.MULTILINE)
    if found is None:
        raise LookupError(f"common.lua defines no whole-number constant {name}")
    return int(found[1])


@cache
def script_source(name: ScriptName, *, flags: bool = False) -> str:
    """Return the full source sent to Redis for ``name``: the common helpers it uses, then
    the script.

    With ``flags`` (Redis 7+), scripts in ``ALLOW_OOM`` open with the allow-oom shebang, those
    in ``READ_ONLY`` with the no-writes one.
    """
    script = _lua_file(name)
    source = prelude(_lua_file("common"), script) + script
    return SHEBANGS.get(name, "") + source if flags else source


def supports_script_flags(client: redis.Redis | redis.RedisCluster) -> bool:
    """Tell whether the server reads shebang flags: Redis (and Valkey) 7 or later."""
    version = str(client.info("server").get("redis_version", "0"))
    return int(version.split(".")[0]) >= FIRST_VERSION_WITH_FLAGS


def register_scripts(client: redis.Redis | redis.RedisCluster) -> dict[ScriptName, Script]:
    """Register every script on ``client``, flagged when its server supports it (one INFO)."""
    flags = supports_script_flags(client)
    return {name: client.register_script(script_source(name, flags=flags)) for name in ScriptName}


@dataclass(frozen=True, slots=True)
class ScriptCall:
    """One script invocation, built once and sent by the sync or the async client alike."""

    name: ScriptName
    keys: tuple[str, ...]
    args: tuple[str | int | float | bytes, ...]
    # The reply's strings come back as bytes, undecoded (redis-py's NEVER_DECODE): for a
    # reply whose records may hold bytes that are not UTF-8 (broker/raw_replies.py).
    raw: bool = False

    @property
    def options(self) -> dict[str, bool]:
        """The options redis-py is given with the call: how to read its reply."""
        return RAW if self.raw else {}
