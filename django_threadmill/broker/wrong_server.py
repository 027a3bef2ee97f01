"""Say what answers at LOCATION when it is not the Redis LOCATION describes.

An HTTP server, a TLS port reached with ``redis://``, or a plain Redis or any plain-text server
reached with ``rediss://``, each fail inside redis-py as a parse error, a dropped connection or
a failed handshake, which read like an outage. After such a failure (never on the way of a call
that works) one fresh connection sends ``PING`` in plain text and reads what comes back: a Redis
answers ``+PONG`` or an error line at once, anything else names itself by its first bytes. A
server that closes the connection unanswered, or (for ``rediss://``) answers in plain text, is
offered a TLS handshake: a TLS port takes it.

What answered decides whether the verdict is ``settled`` (docs/reliability.md, What survives
what, the wrong server row): a server that speaks another protocol, or TLS where LOCATION says
none, stays so until LOCATION is fixed, and the commands stop as for a wrong password. One that
only closes the connection may be a proxy or a forwarded port (Docker's) whose Redis is down,
which a wait fixes.
"""

import socket
import ssl
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from ..exceptions import BrokerRefused, BrokerUnavailable

PROBE_TIMEOUT_S = 1.0  # the probe waits no longer for a connection or an answer
# A connection closed unanswered is looked at again after this: a Redis going down or coming
# back closes some too, and would be taken for no Redis (and an enqueue it may have stored
# for one that wrote nothing).
SECOND_LOOK_S = 0.2
PING = b"PING\r\n"  # the inline command every Redis answers, with or without credentials
SAMPLE_BYTES = 24  # how much of a foreign answer the message quotes
TLS_RECORD_TYPES = (0x15, 0x16)  # a TLS alert or handshake record opens the answer


@dataclass(frozen=True, slots=True)
class WrongServer:
    """Why the server at LOCATION is not the Redis it names, with the fix."""

    message: str
    settled: bool  # no wait fixes it: LOCATION names a server of another kind

    def error(self) -> BrokerUnavailable:
        """Return the error to raise: refused when settled, as a wrong password is."""
        return (BrokerRefused if self.settled else BrokerUnavailable)(self.message)


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


def _speaks_tls(host: str, port: int) -> bool:
    """Tell whether the server at ``host:port`` takes a TLS handshake (its certificate not
    checked: nothing is sent over it), or answers one with a TLS alert."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        with (
            socket.create_connection((host, port), timeout=PROBE_TIMEOUT_S) as sock,
            context.wrap_socket(sock),
        ):
            return True
    except ssl.SSLError as exc:  # an alert: a client certificate asked for, say
        return "ALERT" in str(exc.reason)
    except OSError:
        return False


def other_transport(host: str, port: int, *, tls: bool) -> bool:
    """Tell whether the server at ``host:port`` takes the other transport than ``tls`` says: a
    Redis answering plain text where a TLS connection failed, or a TLS port where a plain one
    did."""
    if not tls:
        return _speaks_tls(host, port)
    answer = _answer(host, port)
    return answer is not None and answer.startswith((b"+", b"-"))


def wrong_server(location: str, where: str) -> WrongServer | None:
    """Return why the server at ``location`` is not the Redis it names, with the fix, or None
    when a Redis of the right kind answers there (or nothing does). ``where`` is ``location``
    as it may be shown (without its password)."""
    parts = urlsplit(location)
    if parts.scheme not in ("redis", "rediss") or not parts.hostname:
        return None  # a unix socket: nothing but a Redis listens on one by mistake
    host, port = parts.hostname, parts.port or 6379
    answer = _answer(host, port)
    if answer == b"":
        time.sleep(SECOND_LOOK_S)
        answer = _answer(host, port)
    if answer is None:
        return None
    if parts.scheme == "rediss":
        return _not_tls(host, port, answer, where)
    if answer.startswith((b"+", b"-")):
        return None
    if _tls_record(answer):
        return _tls_port(where)
    if not answer:  # twice
        return _tls_port(where) if _speaks_tls(host, port) else _closed(where)
    web = " Is LOCATION pointing at an HTTP server?" if _web(answer) else ""
    return WrongServer(
        f"The server at {where} answered with something that is not the Redis protocol (got "
        f"{_sample(answer)}).{web} Point LOCATION at Redis; nothing was written.",
        settled=True,
    )


def _not_tls(host: str, port: int, answer: bytes, where: str) -> WrongServer | None:
    """Return why the server a ``rediss://`` LOCATION names speaks no TLS, or None when it
    may: a TLS server's failed handshake says why in the caller's own message.

    A plain Redis answers ``PING``; a server of another protocol answers it with its own
    bytes (an HTTP server's ``400``, an SMTP or SSH banner), as it answered the handshake,
    unless it takes a handshake too (an HTTPS server answering plain text on its port).
    One that closes the connection, or answers with a TLS record, is a TLS server.
    """
    if answer.startswith((b"+", b"-")):
        return _plain_redis(where)
    if not answer or _tls_record(answer) or _speaks_tls(host, port):
        return None
    got = _sample(answer)
    if _web(answer):
        said = f"answered HTTP, not TLS (got {got}): is LOCATION pointing at an HTTP server?"
    else:
        said = (
            f"answered neither TLS nor the Redis protocol (got {got}), but LOCATION says rediss://."
        )
    return WrongServer(
        f"The server at {where} {said} Point LOCATION at the TLS port of a Redis; nothing was "
        "written.",
        settled=True,
    )


def _tls_record(answer: bytes) -> bool:
    """Tell whether ``answer`` opens with a TLS alert or handshake record."""
    return answer[:1] != b"" and answer[0] in TLS_RECORD_TYPES


def _web(answer: bytes) -> bool:
    """Tell whether ``answer`` is an HTTP server's: a status line, or a page sent bare."""
    return answer.startswith((b"<", b"HTTP/"))


def _sample(answer: bytes) -> str:
    """Return the first bytes of ``answer`` as the message quotes them."""
    return repr(answer.decode("latin-1"))


def _plain_redis(where: str) -> WrongServer:
    return WrongServer(
        f"The server at {where} answered the Redis protocol without TLS, but LOCATION says "
        "rediss://. Use redis:// for it, or the port of its TLS listener; nothing was written.",
        settled=True,
    )


def _tls_port(where: str) -> WrongServer:
    return WrongServer(
        f"The server at {where} is a TLS port, but LOCATION says redis://. Use rediss:// for it, "
        "with '?ssl_ca_certs=/path/ca.crt' if a private CA signed its certificate; nothing was "
        "written.",
        settled=True,
    )


def _closed(where: str) -> WrongServer:
    """A server that closes the connection at a command and at a TLS handshake alike: a proxy
    or forwarded port with no Redis behind it now, or another protocol (PostgreSQL, MQTT)."""
    return WrongServer(
        f"The server at {where} closed the connection unanswered, at a Redis command and at a "
        "TLS handshake alike: a proxy or forwarded port (Docker's, HAProxy) whose Redis is "
        "down or missing, or a server that is no Redis. Start that Redis, or point LOCATION "
        "at Redis; nothing was written.",
        settled=False,
    )
