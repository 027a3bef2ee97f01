"""Say what is wrong with a rediss:// connection's TLS set-up, which no wait fixes.

redis-py reports a certificate it does not trust, or a certificate or key file it cannot read,
as "Error 1 connecting to host:port" or "Error 2 connecting to host:port. No such file or
directory." (the file unnamed), which read like a Redis that is down. The cause it chains says
which: the server's certificate, or a file named by ``ssl_ca_certs``, ``ssl_certfile`` or
``ssl_keyfile`` (LOCATION's query or OPTIONS['connection_options']). redis-py's cluster client
wraps that ConnectionError once more ("Redis Cluster cannot be connected"), so the cause is
looked for down the chain.
"""

import inspect
import ssl

import redis

from ..exceptions import BrokerRefused

TLS_FILES = "ssl_ca_certs, ssl_certfile or ssl_keyfile"
WHERE_SET = "in LOCATION's query or OPTIONS['connection_options']"
# OpenSSL libraries whose errors come from reading a certificate or key file, not from the peer.
FILE_LIBRARIES = frozenset({"X509", "PEM"})
FILE_REASONS = ("PEM lib", "KEY_VALUES_MISMATCH")  # the same, where the library is "SSL"
# OpenSSL 3's verify errors that only VERIFY_X509_STRICT raises (RFC 5280's rules: key usage,
# key identifiers, critical basic constraints ...), which Python 3.13+ sets by default.
STRICT_ONLY_CODES = range(80, 95)
NO_STRICT = "ssl_exclude_verify_flags=VERIFY_X509_STRICT"  # redis-py's opt-out, in the query


def tls_refusal(location: str, where: str, error: BaseException) -> BrokerRefused | None:
    """Return the error for a rediss:// connection that failed on its own TLS set-up, or None
    for any other failure; ``where`` is ``location`` as it may be shown."""
    if not location.startswith("rediss://"):
        return None
    cause = _os_error_beneath(error)
    if isinstance(cause, ssl.SSLCertVerificationError) and cause.verify_code in STRICT_ONLY_CODES:
        return _not_strict_enough(where, cause)
    if isinstance(cause, ssl.SSLCertVerificationError):
        return BrokerRefused(
            f"Redis at {where} presented a TLS certificate this client does not trust "
            f"(certificate verify failed: {cause.verify_message}). Set ssl_ca_certs {WHERE_SET} "
            "to the CA file that signed it (e.g. '?ssl_ca_certs=/etc/redis/ca.crt'), name the "
            "host in LOCATION as the certificate does, or renew the certificate if it expired; "
            "nothing was written."
        )
    if isinstance(cause, ssl.SSLError) and _from_a_file(cause):
        return BrokerRefused(
            f"A TLS file for Redis at {where} holds no usable certificate or key ({cause}). "
            f"Point {TLS_FILES} {WHERE_SET} at PEM files, the key matching the certificate; "
            "nothing was written."
        )
    if isinstance(cause, FileNotFoundError | PermissionError | IsADirectoryError):
        return BrokerRefused(
            f"A TLS file for Redis at {where} cannot be read ({cause.strerror}). Check the "
            f"paths of {TLS_FILES} {WHERE_SET}, and that this process's user may read them; "
            "nothing was written."
        )
    return None


def _not_strict_enough(where: str, cause: ssl.SSLCertVerificationError) -> BrokerRefused:
    """Return the error for a certificate refused only by strict verification: the CA file is
    the right one, so "set ssl_ca_certs" would send the user the wrong way."""
    return BrokerRefused(
        f"Redis at {where} presented a TLS certificate that strict verification refuses "
        f"(certificate verify failed: {cause.verify_message}): Python 3.13+ checks certificates "
        "as RFC 5280 asks (ssl.VERIFY_X509_STRICT), and one of its chain lacks what that names. "
        "Reissue that certificate with it (a CA with -addext "
        "'basicConstraints=critical,CA:TRUE' -addext 'keyUsage=critical,keyCertSign,cRLSign'; "
        f"a certificate it signs with an authorityKeyIdentifier), or {_strict_opt_out()}; "
        "nothing was written."
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
