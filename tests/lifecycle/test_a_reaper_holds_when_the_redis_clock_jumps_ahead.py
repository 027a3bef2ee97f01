"""A reaper holds off settling leases when the Redis clock jumps ahead between two of its passes.

Leases lapse on the Redis clock. When Redis's host steps its clock forward (NTP correcting a
clock that ran slow, a clock set by hand), every live worker's lease lapses early by the jump,
with no outage and no stall for a reaper to see: its next pass settled the running task of a
live worker (FAILED LeaseExpired, the worker's own outcome then refused). Each pass already
asks Redis how long ago its server was first seen, a Redis time less a fixed one; that it ran
further than the reaper's own lease clock since the last pass is the jump, and the pass now
holds as after an outage, while live workers renew (docs/lifecycle.md, After an outage or a
stall).

The Redis server runs with a small ``LD_PRELOAD`` library, built here, that adds the number of
microseconds held in a file to its wall clock: the test steps Redis's clock, no other.
"""

import mmap
import os
import struct
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from tests.servers.redis_server import RedisProcess, started, wait_until_up
from tests.support import wait_until

from .test_reaper_holds_after_an_outage_or_a_stall import (
    Scene,
    assert_held,
    assert_ran_once_and_recorded,
    freeze,
    reaper,
    scene,
    thaw,
)

__all__ = ["reaper", "scene"]  # the fixtures of the outage and stall tests, on this Redis
pytestmark = pytest.mark.timeout(90)

JUMP_S = 30  # past the 6 s lease and its 2 s renewal interval

# Shifts the wall clock of the process it is preloaded into by the int64 of microseconds at the
# start of the file SHIFTED_CLOCK_FILE names (mapped once, read at every call: the test writes
# it while the server runs). Monotonic clocks are left alone, as a step of a host's clock does.
SHIM_C = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile int64_t *shift_us;

static int64_t shift(void) {
  if (!shift_us) {
    int fd = open(getenv("SHIFTED_CLOCK_FILE"), O_RDONLY);
    if (fd < 0) return 0;
    void *mapped = mmap(NULL, 8, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (mapped == MAP_FAILED) return 0;
    shift_us = mapped;
  }
  return *shift_us;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
  static int (*real)(struct timeval *, void *);
  if (!real) real = (int (*)(struct timeval *, void *))dlsym(RTLD_NEXT, "gettimeofday");
  int done = real(tv, tz);
  if (done == 0 && tv) {
    int64_t us = (int64_t)tv->tv_sec * 1000000 + tv->tv_usec + shift();
    tv->tv_sec = us / 1000000;
    tv->tv_usec = us % 1000000;
  }
  return done;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
  static int (*real)(clockid_t, struct timespec *);
  if (!real) real = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
  int done = real(id, ts);
  if (done == 0 && ts && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)) {
    int64_t ns = (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec + shift() * 1000;
    ts->tv_sec = ns / 1000000000;
    ts->tv_nsec = ns % 1000000000;
  }
  return done;
}

time_t time(time_t *out) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  if (out) *out = tv.tv_sec;
  return tv.tv_sec;
}
"""


class ShiftedRedis(RedisProcess):
    """A redis-server whose wall clock the test steps (``step``), through the shim."""

    def __init__(self, directory: Path) -> None:
        super().__init__(directory, "--appendonly", "no")
        source, self.shim = directory / "shifted_clock.c", directory / "shifted_clock.so"
        source.write_text(SHIM_C)
        compiler = os.environ.get("CC", "cc")
        subprocess.run(
            [compiler, "-shared", "-fPIC", "-O2", "-o", str(self.shim), str(source), "-ldl"],
            check=True,
        )
        self.shift_file = directory / "shift_us"
        self.shift_file.write_bytes(struct.pack("<q", 0))

    def start(self) -> None:
        env = {
            **os.environ,
            "LD_PRELOAD": str(self.shim),
            "SHIFTED_CLOCK_FILE": str(self.shift_file),
        }
        self.process = subprocess.Popen(
            self.arguments(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
        )
        wait_until_up(self.url)

    def step(self, seconds: int) -> None:
        """Step the server's wall clock ``seconds`` ahead of this host's (back if negative),
        and wait until the server reads it: Valkey reads its clock once per event-loop turn,
        so the TIME of its next call may still read the clock before the step."""
        with self.shift_file.open("r+b") as file, mmap.mmap(file.fileno(), 8) as shared:
            struct.pack_into("<q", shared, 0, seconds * 1_000_000)
        client = redis.Redis.from_url(self.url)

        def stepped() -> bool:
            return abs(redis_ahead_s(client) - seconds) < 1

        try:
            wait_until(stepped, f"the server's clock {seconds:+d} s from this host's")
        finally:
            client.close()


@pytest.fixture
def shifted_redis() -> Iterator[ShiftedRedis]:
    with started(ShiftedRedis) as server:
        yield server


@pytest.fixture
def redis_url(shifted_redis: ShiftedRedis) -> str:
    """Run this module on the server whose clock the test steps."""
    return shifted_redis.url


def redis_ahead_s(redis_client: redis.Redis) -> float:
    """Return how far the Redis clock is ahead of this host's wall clock (s)."""
    seconds, micros = redis_client.time()
    return seconds + micros / 1e6 - time.time()


def test_a_reaper_lets_workers_renew_before_it_settles_after_the_redis_clock_jumped_ahead(
    scene: Scene,
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
    shifted_redis: ShiftedRedis,
) -> None:
    freeze(scene.worker_pids)  # its next renewal comes after the reaper's next pass
    shifted_redis.step(JUMP_S)
    assert_held(scene, r"the Redis clock jumped \d+\.\ds ahead of this host's")
    thaw(scene.worker_pids)
    assert_ran_once_and_recorded(scene, backend, broker, redis_client)
