"""A throwaway certificate authority and a redis-server that speaks TLS only."""

import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import redis

from tests.servers.redis_server import free_port, redis_server_binary, wait_until_up
from tests.support import run_python

UNVERIFIED = "ssl_cert_reqs=none&ssl_check_hostname=false"


@dataclass(frozen=True, slots=True)
class TlsRedis:
    port: int
    ca_file: Path

    @property
    def url(self) -> str:
        """A rediss:// LOCATION that trusts the throwaway CA (redis-py reads the query)."""
        return f"rediss://127.0.0.1:{self.port}/0?ssl_ca_certs={self.ca_file}"


def _openssl(directory: Path, *args: str) -> None:
    subprocess.run(["openssl", *args], cwd=directory, check=True, capture_output=True)


def make_certificates(directory: Path, *, ca_key_usage: bool = True) -> None:
    """Write ca.crt, redis.crt and redis.key: a CA and a server certificate for 127.0.0.1.

    ``ca_key_usage=False``: a CA as ``openssl req -x509`` makes it by default, which Python
    3.13+ refuses (ssl.VERIFY_X509_STRICT) and older Pythons accept."""
    # Python 3.13+ verifies strictly (ssl.VERIFY_X509_STRICT): a CA without key usage fails.
    key_usage = ["-addext", "keyUsage=critical,keyCertSign,cRLSign"] if ca_key_usage else []
    _openssl(
        directory,
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=threadmill-test-ca",
        *key_usage,
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
    )
    _openssl(
        directory,
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=127.0.0.1",
        "-keyout",
        "redis.key",
        "-out",
        "redis.csr",
    )
    (directory / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    _openssl(directory, "x509", "-req", "-in", "redis.csr", "-CA", "ca.crt", "-CAkey",
             "ca.key", "-CAcreateserial", "-days", "1", "-extfile", "san.ext",
             "-out", "redis.crt")  # fmt: skip


@contextmanager
def tls_redis(*, ca_key_usage: bool = True) -> Iterator[TlsRedis]:
    """Run a redis-server with TLS on its only port; raise RuntimeError if it has no TLS."""
    with tempfile.TemporaryDirectory(prefix="threadmill-redis-tls-") as name:
        directory = Path(name)
        make_certificates(directory, ca_key_usage=ca_key_usage)
        server = TlsRedis(free_port(), directory / "ca.crt")
        process = subprocess.Popen(
            [
                redis_server_binary(), "--port", "0", "--tls-port", str(server.port),
                "--bind", "127.0.0.1", "--dir", name, "--save", "",
                "--tls-cert-file", "redis.crt", "--tls-key-file", "redis.key",
                "--tls-ca-cert-file", "ca.crt", "--tls-auth-clients", "no",
            ],
            cwd=directory,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            try:
                # Waited for unverified: a CA it refuses is the test's (any redis-py reads these).
                wait_until_up(f"{server.url}&{UNVERIFIED}", timeout_s=5)
            except redis.ConnectionError as exc:
                if process.poll() is None:  # it runs: the client is refused, a test failure
                    raise
                output = process.stdout.read().decode()
                raise RuntimeError(f"redis-server did not start with TLS: {output}") from exc
            yield server
        finally:
            process.kill()
            process.wait()
            if process.stdout is not None:
                process.stdout.close()


def refused_by_the_commands(
    location: str, key_prefix: str, options: dict[str, object], fix: str
) -> tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]:
    """Assert that a TLS set-up Redis refuses stops the worker and fails the health probe with
    exit 4 and the check with ``threadmill.E004``, each naming ``fix``; return how the worker
    and the check ended, for what a caller asserts besides."""
    worker = run_python(
        "manage.py", "threadmill_worker", "--burst", "--processes", "1",
        redis_url=location, key_prefix=key_prefix, options=options,
    )  # fmt: skip
    assert worker.returncode == 4, worker.stderr
    assert fix in worker.stderr
    health = run_python(
        "manage.py", "threadmill_health", "--redis-down-ok",
        redis_url=location, key_prefix=key_prefix, options=options,
    )  # fmt: skip
    assert health.returncode == 4, health.stderr
    assert fix in health.stderr
    check = run_python(
        "manage.py", "check", "--tag", "threadmill",
        redis_url=location, key_prefix=key_prefix, options=options,
    )  # fmt: skip
    assert check.returncode == 1, check.stderr
    assert "threadmill.E004" in check.stderr
    return worker, check
