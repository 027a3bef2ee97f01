"""Say what is wrong with a TLS connection's set-up, which no wait fixes.

redis-py reports a certificate it does not trust, or a certificate or key file it cannot read,
as "Error 1 connecting to host:port" or "Error 2 connecting to host:port. No such file or
directory." (the file unnamed), which read like a Redis that is down. The cause it chains says
which: the server's certificate, a file named by ``ssl_ca_certs``, ``ssl_certfile`` or
``ssl_keyfile`` (LOCATION's query or OPTIONS['connection_options']), or the server's alert
that it takes no client without a certificate, or not the one ``ssl_certfile`` names. When
redis-py's first write met the connection the server closed, its alert unread, the server is
asked again (``dropped_for_its_certificate``). redis-py's cluster client wraps that
ConnectionError once more ("Redis Cluster cannot be connected"), so the cause is looked for
down the chain. The same set-up reaches the sentinels (``tls_fault``, broker/no_primary.py).
"""

import inspect
import socket
import ssl
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import redis

from ..exceptions import BrokerRefused
from .wrong_server import PING, PROBE_TIMEOUT_S

TLS_FILES = "ssl_ca_certs, ssl_certfile or ssl_keyfile"
WHERE_SET = "in LOCATION's query or OPTIONS['connection_options']"
# OpenSSL libraries whose errors come from reading a certificate or key file, not from the peer.
FILE_LIBRARIES = frozenset({"X509", "PEM"})
FILE_REASONS = ("PEM lib", "KEY_VALUES_MISMATCH")  # the same, where the library is "SSL"
# OpenSSL 3's verify errors that only VERIFY_X509_STRICT raises (RFC 5280's rules: key usage,
# key identifiers, critical basic constraints ...), which Python 3.13+ sets by default.
STRICT_ONLY_CODES = range(80, 95)
NO_STRICT = "ssl_exclude_verify_flags=VERIFY_X509_STRICT"  # redis-py's opt-out, in the query
# A TLS 1.3 server's alert, on the first read, to a client that sent no certificate it requires
# (redis-server's tls-auth-clients yes).
CERTIFICATE_REQUIRED = "TLSV13_ALERT_CERTIFICATE_REQUIRED"
TRUSTED = "signed by a CA the server trusts (its tls-ca-cert-file)"
# A server's alerts, on the first read too, about the client certificate it was sent (OpenSSL's
# reasons, each from its verify errors): why it refused it, and what a certificate it takes is.
CERTIFICATE_REFUSED = {
    "TLSV1_ALERT_UNKNOWN_CA": ("as signed by a CA it does not trust", TRUSTED),
    "SSLV3_ALERT_CERTIFICATE_EXPIRED": ("as expired", "in date (renew it)"),
    "SSLV3_ALERT_CERTIFICATE_REVOKED": ("as revoked", "not revoked"),
    "SSLV3_ALERT_UNSUPPORTED_CERTIFICATE": (
        "as not made for a TLS client",
        "whose extendedKeyUsage, if any, holds clientAuth",
    ),
    "SSLV3_ALERT_BAD_CERTIFICATE": (
        "as unusable",
        "in date, its key and digest strong enough (RSA 2048 bits, SHA-256)",
    ),
    "SSLV3_ALERT_CERTIFICATE_UNKNOWN": ("as unusable", TRUSTED),
}
# How a write fails on a connection the server closed (with that alert unread, say).
CLOSED_ON_WRITE = (ssl.SSLEOFError, ConnectionResetError, BrokenPipeError)


@dataclass(frozen=True, slots=True)
class TlsFault:
    """A TLS set-up no wait fixes: what went wrong with the server it was met on, and the fix,
    each a phrase."""

    problem: str  # after the server ("presented ..."), or after "a TLS file" when of_a_file
    fix: str  # lower case, with no full stop: callers end the sentence
    of_a_file: bool  # a local certificate or key file, read before the server was reached


def tls_refusal(
    location: str, where: str, error: BaseException, tls: Mapping[str, Any] | None
) -> BrokerRefused | None:
    """Return the error for a rediss:// connection that failed on its own TLS set-up, or None
    for any other failure; ``where`` is ``location`` as it may be shown. ``tls``: the TLS
    arguments the failed connection was made with (``tls_arguments``), to ask LOCATION's server
    why it closed it at the first write; None when it was another server's (the primary the
    sentinels named)."""
    if not location.startswith("rediss://"):
        return None
    fault = tls_fault(error, hosts_in="LOCATION")
    if fault is None and tls is not None:
        fault = dropped_for_its_certificate(
            _address(location), error, tls=tls, timeout_s=PROBE_TIMEOUT_S
        )
    if fault is None:
        return None
    subject = f"A TLS file for Redis at {where}" if fault.of_a_file else f"Redis at {where}"
    fix = fault.fix[0].upper() + fault.fix[1:]
    return BrokerRefused(f"{subject} {fault.problem}. {fix}; nothing was written.")


def tls_fault(error: BaseException, *, hosts_in: str) -> TlsFault | None:
    """Return what is wrong with the TLS set-up ``error`` was raised from, or None when it was
    raised from anything else; ``hosts_in`` is the setting that names the server's host."""
    cause = _os_error_beneath(error)
    if isinstance(cause, ssl.SSLCertVerificationError) and cause.verify_code in STRICT_ONLY_CODES:
        return _not_strict_enough(cause)
    if isinstance(cause, ssl.SSLCertVerificationError):
        return TlsFault(
            problem="presented a TLS certificate this client does not trust (certificate "
            f"verify failed: {cause.verify_message})",
            fix=f"set ssl_ca_certs {WHERE_SET} to the CA file that signed it (e.g. "
            f"'?ssl_ca_certs=/etc/redis/ca.crt'), name the host in {hosts_in} as the "
            "certificate does, or renew the certificate if it expired",
            of_a_file=False,
        )
    if isinstance(cause, ssl.SSLError) and _from_a_file(cause):
        return TlsFault(
            problem=f"holds no usable certificate or key ({cause})",
            fix=f"point {TLS_FILES} {WHERE_SET} at PEM files, the key matching the certificate",
            of_a_file=True,
        )
    if isinstance(cause, FileNotFoundError | PermissionError | IsADirectoryError):
        return TlsFault(
            problem=f"cannot be read ({cause.strerror})",
            fix=f"check the paths of {TLS_FILES} {WHERE_SET}, and that this process's user may "
            "read them",
            of_a_file=True,
        )
    if isinstance(cause, ssl.SSLError):
        return _alerted(cause)
    return None


def dropped_for_its_certificate(
    address: tuple[str, int], error: BaseException, *, tls: Mapping[str, Any], timeout_s: float
) -> TlsFault | None:
    """Return the fault of the TLS server at ``address`` if it dropped a connection for its
    client certificate: none sent where it requires one, or the one ``tls`` names refused.

    redis-py writes its first commands as soon as its side of the handshake ends: the server's
    alert often arrives after, and the write fails on the closed connection ("EOF occurred in
    violation of protocol", or "Connection reset by peer" on Python 3.13), the alert unread. A
    fresh handshake, with the same certificate or none, reads it: only looked for after such a
    write."""
    if not isinstance(_os_error_beneath(error), CLOSED_ON_WRITE):
        return None
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # nothing is sent over it but a PING
    try:
        if tls.get("ssl_certfile"):
            # "", not None: OpenSSL would prompt on the terminal for a key's missing password.
            password = tls.get("ssl_password") or ""
            context.load_cert_chain(tls["ssl_certfile"], tls.get("ssl_keyfile"), password)
        with (
            socket.create_connection(address, timeout=timeout_s) as sock,
            context.wrap_socket(sock) as connection,
        ):
            with suppress(OSError):  # the server may close first, as it did for redis-py
                connection.sendall(PING)  # any Redis answers it at once
            connection.recv(1)
    except ssl.SSLError as exc:  # an alert, or a certificate file it cannot load
        return _alerted(exc)
    except OSError:  # refused, reset, silent: the caller's own message says it
        return None
    return None


def _alerted(error: ssl.SSLError) -> TlsFault | None:
    """Return the fault of a server whose alert ``error`` is, about the client certificate it
    was sent or not, or None for any other TLS error."""
    if error.reason == CERTIFICATE_REQUIRED:
        return TlsFault(
            problem="takes no TLS client without a certificate, and this client sent none "
            f"({CERTIFICATE_REQUIRED})",
            fix=_set_a_certificate(TRUSTED),
            of_a_file=False,
        )
    if error.reason not in CERTIFICATE_REFUSED:
        return None
    why, wanted = CERTIFICATE_REFUSED[error.reason]
    return TlsFault(
        problem=f"refused the TLS client certificate of ssl_certfile {why} ({error.reason})",
        fix=_set_a_certificate(wanted),
        of_a_file=False,
    )


def _set_a_certificate(wanted: str) -> str:
    """Return the fix that sets a client certificate as ``wanted`` describes it."""
    return f"set ssl_certfile and ssl_keyfile {WHERE_SET} to a certificate {wanted} and its key"


def _address(location: str) -> tuple[str, int]:
    """Return the host and port of a rediss:// ``location``."""
    parts = urlsplit(location)
    return parts.hostname or "localhost", parts.port or 6379


def _not_strict_enough(cause: ssl.SSLCertVerificationError) -> TlsFault:
    """Return the fault of a certificate refused only by strict verification: the CA file is
    the right one, so "set ssl_ca_certs" would send the user the wrong way."""
    return TlsFault(
        problem="presented a TLS certificate that strict verification refuses (certificate "
        f"verify failed: {cause.verify_message}): Python 3.13+ checks certificates as RFC 5280 "
        "asks (ssl.VERIFY_X509_STRICT), and one of its chain lacks what that names",
        fix="reissue that certificate with it (a CA with -addext "
        "'basicConstraints=critical,CA:TRUE' -addext 'keyUsage=critical,keyCertSign,cRLSign'; "
        f"a certificate it signs with an authorityKeyIdentifier), or {_strict_opt_out()}",
        of_a_file=False,
    )


def _strict_opt_out() -> str:
    """Return how to turn strict verification off with the installed redis-py."""
    if "ssl_exclude_verify_flags" in inspect.signature(redis.SSLConnection).parameters:
        return f"add {NO_STRICT} to LOCATION's query (after '?' or '&') to trust it as it is"
    return f"upgrade redis-py (pip install -U redis) and add {NO_STRICT} to LOCATION's query"


def _os_error_beneath(error: BaseException) -> OSError | None:
    """Return the first ``OSError`` (an ``ssl.SSLError`` is one) that ``error`` was raised
    from, however many of redis-py's own errors lie between, or None."""
    seen: set[int] = set()
    cause = error.__cause__ or error.__context__
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, OSError):
            return cause
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return None


def _from_a_file(error: ssl.SSLError) -> bool:
    """Tell whether OpenSSL raised ``error`` reading a local file rather than talking to Redis."""
    return getattr(error, "library", None) in FILE_LIBRARIES or any(
        reason in str(error) for reason in FILE_REASONS
    )
