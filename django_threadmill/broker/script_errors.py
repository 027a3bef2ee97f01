"""Read the error a Lua script met as Redis 7 words it, on Redis 6.2 too.

Redis 7 answers a script's error with the error's own code first ("READONLY You can't write
..."), from which redis-py makes its class (``ReadOnlyError``). Redis 6.2 wraps it in what names
the script and its line, and redis-py then raises a plain ``ResponseError``: what reads a reply
by its code reads past the wrapping here.
"""

import re

import redis
from redis._parsers import BaseParser

# How redis-py opens the error of one command of a pipeline: "Command # 3 (HGETALL k) of pipeline
# caused error: WRONGTYPE ...". The reply itself follows.
PIPELINE_ERROR = "of pipeline caused error: "
# How Redis 6.2 wraps the error a script met, where Redis 7 puts the error code first: a
# redis.call's as "Error running script (call to f_<sha>): @user_script:12: WRONGTYPE ...", and a
# refusal before the command ran (OOM, READONLY, NOREPLICAS, MISCONF) once more, as
# "@user_script: 12: -OOM ...", which is all a redis.pcall's refusal the script passes on keeps.
SCRIPT_ERROR_WRAPPING = re.compile(
    r"^(?:(?:ERR )?Error running script \(call to f_[0-9a-f]+\): )?(?:@user_script: ?\d+: -?)*"
)


def _annotation_and_reply(exc: redis.ResponseError) -> tuple[str, str]:
    """Split ``exc``'s words into what redis-py adds in front in a pipeline ("" out of one,
    the separator kept) and the reply Redis sent."""
    annotated, separator, reply = str(exc).partition(PIPELINE_ERROR)
    return (f"{annotated}{separator}", reply) if separator else ("", annotated)


def reply_of(exc: redis.ResponseError) -> str:
    """Return the error reply Redis sent, without what redis-py adds in front in a pipeline,
    nor what Redis 6.2 adds in front of a script's error (``SCRIPT_ERROR_WRAPPING``)."""
    return SCRIPT_ERROR_WRAPPING.sub("", _annotation_and_reply(exc)[1], count=1)


def unwrapped(exc: redis.ResponseError) -> redis.ResponseError:
    """Return a script's error from Redis 6.2 as redis-py raises it from Redis 7: without what
    6.2 adds in front (``SCRIPT_ERROR_WRAPPING``), of the class its error code makes (READONLY a
    ``ReadOnlyError``, its code dropped), redis-py's pipeline annotation kept; any other ``exc``
    as it is. Else 6.2's users read "(@user_script: 227: -READONLY You can't write ...)"."""
    annotation, reply = _annotation_and_reply(exc)
    bare = SCRIPT_ERROR_WRAPPING.sub("", reply, count=1)
    if bare == reply:
        return exc
    error: redis.ResponseError = BaseParser.parse_error(bare)
    if annotation:
        error.args = (f"{annotation}{error}", *error.args[1:])
    return error
