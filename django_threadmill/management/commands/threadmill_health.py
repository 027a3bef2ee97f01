"""``manage.py threadmill_health``: exit 0 when this host's workers heartbeat and Redis answers.

Meant for an orchestrator's probe (docs/deploy.md, Health): it reads the heartbeats the worker
processes already write, so it needs nothing from the worker, and says why in one line on
stderr when it exits non-zero.
"""

import socket
from dataclasses import replace
from typing import Any

from django.core.management.base import CommandError, CommandParser

from ...backend import ThreadmillTaskBackend
from ...broker import Broker
from ...broker.connection import ANOTHER_TYPE_FIX
from ...broker.inspect import Inspector
from ...broker.layouts import QueueNames
from ...conf.settings import waiting_at_most
from ...exceptions import BrokerRefused, BrokerUnavailable
from ...wording import listed_names, listed_values, shown
from ..backend_option import BACKEND_HELP, backend_option, queues_option
from ..ctrl_c import CtrlCSaid
from ..health import (
    HealthCode,
    HostHeartbeats,
    host_heartbeats,
    unconfirmed_writes,
    writes_refused,
)
from ..int_option import int_option
from ..probe_output import ExitCodeCommand
from ..seconds_option import seconds_option
from ..set_up_frozen import SetUpFrozen
from ..text_option import text_option

DEFAULT_TIMEOUT_S = 2.0
MAX_HOST_PROCESSES = 4_194_304  # Linux's PID_MAX_LIMIT: no host runs more processes at once
# What a probe says of the keys it left out (docs/lifecycle.md, Keys of another type).
LEFT_OUT = (
    "each left_out key holds another type, so the heartbeats of its queue are not counted: "
    + ANOTHER_TYPE_FIX
)
FEWER = (
    "fewer worker processes of this host renewed their leases within lease_ttl than --min-processes"
)


def one_line(error: BaseException) -> str:
    """Return the message of ``error`` on one line: a probe's output is read as one."""
    return " ".join(str(error).split())


def named_timeout(message: str, timeout_s: float) -> str:
    """Return ``message`` naming --timeout where it names the socket_timeout the probe set to
    it (``waiting_at_most``): the probe's user sets the option, not that setting."""
    return message.replace(f"socket_timeout={timeout_s:g}s", f"--timeout={timeout_s:g}s")


def usage_error(message: str) -> CommandError:
    return CommandError(message, returncode=HealthCode.USAGE)


class Command(SetUpFrozen, CtrlCSaid, ExitCodeCommand):
    help = (
        "Exit 0 when at least --min-processes worker processes of this host renewed their "
        "leases within lease_ttl (Redis clock) in the given queues; else exit 1 (too few), "
        "2 (bad option or setting), 3 (Redis unreachable, a read-only replica, holding writes "
        "back for a failover, unable to confirm writes as OPTIONS['durability'] asks, or too "
        "few beside a heartbeat key of another type or a queue on a Redis Cluster node that "
        "does not answer) or 4 (Redis refused the credentials, or LOCATION names no Redis it "
        "can use: wrong TLS set-up, another kind of server), with the reason in one line on "
        "stderr. For liveness and readiness probes."
    )
    # A probe runs every few seconds: the system checks would add a Redis round trip and
    # warnings that are not its answer.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--backend", default="default", help=BACKEND_HELP)
        parser.add_argument(
            "--queue",
            action="append",
            dest="queues",
            metavar="NAME",
            help="Queue whose heartbeats to read; repeat for several (default: every queue in "
            "QUEUES and every queue Redis knows).",
        )
        parser.add_argument(
            "--host",
            type=text_option,  # sent to Redis, which cannot be sent bytes that are not UTF-8
            default=socket.gethostname(),
            help="Host whose worker processes count (default: this one, as worker ids name it).",
        )
        parser.add_argument(
            "--min-processes",
            type=int_option,
            default=1,
            metavar="N",
            help="Live worker processes needed on the host (default: 1).",
        )
        parser.add_argument(
            "--timeout",
            type=seconds_option,
            default=DEFAULT_TIMEOUT_S,
            metavar="S",
            help="Seconds Redis may take to accept the connection or answer one call "
            f"(default: {DEFAULT_TIMEOUT_S:g}; at most three calls, four with durability or with "
            "too few processes live, that one per primary on a Redis Cluster, and one more there).",
        )
        parser.add_argument(
            "--redis-down-ok",
            action="store_true",
            help="Exit 0 when Redis cannot be reached or cannot confirm writes (a liveness "
            "probe: restarting workers does not bring Redis or its replica back). Refused "
            "credentials still fail.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        backend = self._backend(options["backend"])
        _check_min_processes(options["min_processes"])
        if options["timeout"] <= 0:
            raise usage_error(f"--timeout {options['timeout']:g} is not positive. Use e.g. 2.")
        host = self._host(options["host"])
        # Each once: a queue asked twice was named twice in the answer.
        asked = [self._queue(backend, name) for name in dict.fromkeys(options["queues"] or [])]
        broker = self._probe_broker(backend, options["timeout"])
        try:
            listed = QueueNames(queues=asked) if asked else broker.queue_names(backend.queues)
            names = broker.reached(replace(listed, queues=listed.queues or ["default"]))
            queues, read = names.queues, names.served
            beats = host_heartbeats(Inspector(broker), read, host, broker.settings.lease_ttl_ms)
            live, alone = len(beats.live), _queues_unread(names, options["timeout"])
            if live < options["min_processes"] and (refused := writes_refused(broker)):
                self._unavailable(f"host={host} live={live}: {refused}", options["redis_down_ok"])
                return
            if live < options["min_processes"] and alone and not beats.unread:
                # Redis's, not too few: a process serving only a queue not read may still work
                # (docs/deploy.md, Health).
                reason = f"host={host} live={live}: {FEWER} in the queues read, {alone}"
                self._unavailable(reason, options["redis_down_ok"])
                return
            facts = self._enough(beats, queues, options["min_processes"])
            unconfirmed = unconfirmed_writes(broker)
        except BrokerRefused as exc:
            raise CommandError(
                f"Unhealthy host={host}: {one_line(exc)}", returncode=HealthCode.REFUSED
            ) from exc
        except BrokerUnavailable as exc:
            reason = named_timeout(one_line(exc), options["timeout"])
            self._unavailable(f"host={host}: {reason}", options["redis_down_ok"])
            return
        finally:  # its own client: called in-process, it left a socket per cluster node open
            broker.close()
        if unconfirmed is not None:
            self._unavailable(f"{facts}: {unconfirmed}", options["redis_down_ok"])
        elif options["verbosity"] >= 1:
            notes = [*([f"{LEFT_OUT}."] if beats.unread else []), *([alone] if alone else [])]
            self.stdout.write(f"Healthy {facts}" + (f": {' '.join(notes)}" if notes else ""))

    def _backend(self, alias: str) -> ThreadmillTaskBackend:
        try:
            return backend_option(alias)
        except CommandError as exc:
            raise usage_error(str(exc)) from exc

    @staticmethod
    def _host(host: str) -> str:
        """Return ``host`` if a worker id can name it (``<host>:<pid>:<tag>``), else raise: a
        probe for any other never counts a process, and would read as workers gone. Nor does
        a host name hold whitespace (RFC 1123), unless this host's own does: one pasted with a
        space or a line break read as workers gone, the break splitting the probe's one line.
        ``host`` is named cut short: one of 10,000 characters filled the message."""
        if not host or ":" in host:
            why = "worker ids name it before their first ':'"
        elif any(char.isspace() for char in host) and host != socket.gethostname():
            why = "a host name holds no spaces, tabs or line breaks"
        else:
            return host
        raise usage_error(
            f"--host {shown(host)} cannot be a worker's host: {why}. Give the host name alone, "
            "as socket.gethostname() on the worker's host returns it, e.g. --host worker-7c9f, "
            "or leave --host out on that host."
        )

    def _queue(self, backend: ThreadmillTaskBackend, name: str) -> str:
        """Return ``name`` if the worker could serve it, else raise naming the queues that do."""
        try:
            [queue] = queues_option(backend, [name])
        except CommandError as exc:
            raise usage_error(f"--queue: {exc}") from exc
        return queue

    @staticmethod
    def _probe_broker(backend: ThreadmillTaskBackend, timeout_s: float) -> Broker:
        """Return a broker whose connect, reads and pool wait each give up after ``timeout_s``:
        the backend's own timeouts (10 s reads by default) are longer than a probe may take."""
        return Broker(waiting_at_most(backend.settings, timeout_s))

    def _unavailable(self, reason: str, redis_down_ok: bool) -> None:
        """Raise the unhealthy line of a Redis that cannot serve now, or say it is passed."""
        if not redis_down_ok:
            raise CommandError(f"Unhealthy {reason}", returncode=HealthCode.UNREACHABLE)
        self.stderr.write(f"Redis unavailable, passing (--redis-down-ok) {reason}")

    def _enough(self, beats: HostHeartbeats, queues: list[str], needed: int) -> str:
        """Return the facts of the answer, or raise the unhealthy line with what to check. Its
        lists name MAX_LISTED_IDS items at most, then count the rest (wording.listed_values)."""
        facts = (
            f"host={beats.host} live={len(beats.live)} min_processes={needed} "
            f"queues={listed_values(queues)} lease_ttl_s={beats.lease_ttl_ms / 1000:g}"
        )
        if beats.unread:
            facts += f" left_out={listed_values(beats.unread)}"
        if len(beats.live) >= needed:
            return facts
        facts += f" last_seen={_last_seen(beats)} live_elsewhere={beats.live_elsewhere}"
        if beats.unread:
            # Not too few: a process serving only those queues may still work. Not Redis down
            # either: --redis-down-ok must not pass a wedged worker while such a key is there.
            raise CommandError(
                f"Unhealthy {facts}: {FEWER} in the queues read, and {LEFT_OUT}.",
                returncode=HealthCode.UNREACHABLE,
            )
        raise CommandError(
            f"Unhealthy {facts}: {FEWER}. Check that threadmill_worker runs on this host with this "
            "--backend and serves these queues, and its log for Redis errors; a worker process "
            f"first renews as soon as it has started and reached Redis.{_stepped_back(beats)}",
            returncode=HealthCode.TOO_FEW,
        )


def _check_min_processes(needed: int) -> None:
    """Refuse a ``--min-processes`` no host can meet: below 1, or above the processes a host can
    run at once (Linux's pid limit), where the probe failed "too few" for ever and printed a
    number of thousands of digits whole."""
    if needed < 1:
        raise usage_error(
            f"--min-processes {shown(needed)} is below 1. Use e.g. --min-processes 1, or the "
            "--processes the worker runs with."
        )
    if needed > MAX_HOST_PROCESSES:
        raise usage_error(
            f"--min-processes {shown(needed)} is above the {MAX_HOST_PROCESSES:,} processes a "
            "host can run (Linux's pid limit), so the probe could never pass. Use the "
            "--processes the worker runs with."
        )


def _queues_unread(names: QueueNames, timeout_s: float) -> str:
    """Say which queues the probe could not read, on a Redis Cluster node that does not
    answer, with that node's error: the queue set (the probe then read the queues in QUEUES
    alone), and those with a part on such a node, the first MAX_LISTED_IDS of them named; ""
    when it read them all."""
    return " ".join(
        (_set_unread if error is names.unknown else _unread)(
            listed_names(queues), named_timeout(one_line(error), timeout_s)
        )
        for error, queues in names.unreached_by_node().items()
    )


def _set_unread(queues: str, error: str) -> str:
    also = f", and not in {queues}, on that node" if queues else ""
    return (
        "heartbeats read in the queues in QUEUES alone, as the queue set could not be read (a "
        f"queue registered only in Redis is not read){also}: {error}"
    )


def _unread(queues: str, error: str) -> str:
    return f"heartbeats not read in {queues}, on a Redis Cluster node that does not answer: {error}"


def _last_seen(beats: HostHeartbeats) -> str:
    """Return when the host was last seen, as the line gives it: ``4.1s_ago``, ``never``, or
    ``3600.0s_ahead`` for a renewal dated ahead of the Redis clock, which stepped back since."""
    how = "_stopped" if beats.signed_off else ""  # stopped, not silent (docs/deploy.md)
    if beats.last_seen_ms_ago is None:
        return "never"
    if beats.last_seen_ms_ago < 0:
        return f"{-beats.last_seen_ms_ago / 1000:.1f}s_ahead{how}"
    return f"{beats.last_seen_ms_ago / 1000:.1f}s_ago{how}"


def _stepped_back(beats: HostHeartbeats) -> str:
    """Return what a last sighting dated ahead of the Redis clock means, else ''."""
    if beats.last_seen_ms_ago is None or beats.last_seen_ms_ago >= 0:
        return ""
    return (
        " This host was last seen ahead of the Redis clock, which stepped back since (NTP, a "
        "failover to a replica whose clock lags): such a renewal is not counted, and a live "
        f"process renews again within lease_ttl / 3 ({beats.lease_ttl_ms / 3000:.3g}s)."
    )
