"""Say what answers at LOCATION when it is not the Redis LOCATION describes.

An HTTP server, a TLS port reached with ``redis://`` or a plain Redis reached with ``rediss://``
each fail inside redis-py as a parse error, a dropped connection or a handshake timeout, which
read like an outage. After such a failure (never on the way of a call that works) one fresh
connection sends ``PING`` in plain text and reads what comes back: a Redis answers ``+PONG`` or
an error line at once, anything else names itself by its first bytes.
"""

import socket
import time
from urllib.parse import urlsplit

PROBE_TIMEOUT_S = 1.0  # the probe waits no longer for a connection or an answer
# A connection closed unanswered is looked at again after this: a Redis going down or coming
# back closes some too, and would be taken for no Redis (and an enqueue it may have stored
# for one that wrote nothing).
SECOND_LOOK_S = 0.2
PING = b"PING\r\n"  # the inline command every Redis answers, with or without credentials
SAMPLE_BYTES = 24  # how much of a foreign answer the message quotes
TLS_RECORD_TYPES = (0x15, 0x16)  # a TLS alert or handshake record opens the answer


def _answer(host: str, port: int) -> bytes | None:
    """Return what the server at ``host:port`` answers to a plain ``PING`` (b"" if it closes
    the connection first), or None when it cannot be reached or says nothing in time."""
    try:
        with socket.create_connection((host, port), timeout=PROBE_TIMEOUT_S) as sock:
            sock.sendall(PING)
            return sock.recv(SAMPLE_BYTES)
    except ConnectionResetError:
        return b""
    except OSError:  # refused, unresolvable, silent: the caller's own message says it
        return None


def wrong_server(location: str, where: str) -> str | None:
    """Return why the server at ``location`` is not the Redis it names, with the fix, or None
    when a Redis of the right kind answers there (or nothing does). ``where`` is ``location``
    as it may be shown (without its password)."""
    parts = urlsplit(location)
    if parts.scheme not in ("redis", "rediss") or not parts.hostname:
        return None  # a unix socket: nothing but a Redis listens on one by mistake
    tls = parts.scheme == "rediss"
    answer = _answer(parts.hostname, parts.port or 6379)
    if answer == b"":
        time.sleep(SECOND_LOOK_S)
        answer = _answer(parts.hostname, parts.port or 6379)
    if answer is None or (tls and not answer.startswith((b"+", b"-"))):
        return None  # with TLS, anything but plain Redis fails the handshake with its reason
    sample = answer.decode("latin-1")
    if answer.startswith((b"+", b"-")):
        if not tls:
            return None
        return (
            f"The server at {where} answered the Redis protocol without TLS, but LOCATION says "
            "rediss://. Use redis:// for it, or the port of its TLS listener; nothing was written."
        )
    if not answer:  # twice: a TLS port, or a server of another protocol (PostgreSQL, MQTT)
        return (
            f"The server at {where} closed the connection at the first command instead of "
            "answering it: it is no Redis, or a TLS port (then use rediss:// in LOCATION). "
            "Point LOCATION at Redis; nothing was written."
        )
    if answer[0] in TLS_RECORD_TYPES:
        return (
            f"The server at {where} answered a TLS record ({sample!r}) at the first command "
            "instead of answering it: is it a TLS port? Use rediss:// in LOCATION for a Redis "
            "with TLS; nothing was written."
        )
    web = " Is LOCATION pointing at an HTTP server?" if answer.startswith((b"<", b"HTTP/")) else ""
    return (
        f"The server at {where} answered with something that is not the Redis protocol (got "
        f"{sample!r}).{web} Point LOCATION at Redis; nothing was written."
    )
