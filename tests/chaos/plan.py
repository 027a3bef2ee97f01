"""How big a chaos run is: a short one in the default suite, a long one opt-in."""

import os
import random
from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class ChaosPlan:
    mode: str
    seed: int
    tasks: int  # tasks enqueued, in waves, while the monkey is at work
    chaos_s: float  # how long the monkey breaks things
    processes: int
    threads: int
    max_redis_restarts: int
    drain_timeout_s: float  # after the chaos, the time the workers get to settle everything
    sync_ack: bool  # run the workers with --sync-ack (THREADMILL_CHAOS_SYNC_ACK=1)
    timeout_s: int  # pytest-timeout for the whole test


SHORT = {"tasks": 2500, "chaos_s": 25.0, "max_redis_restarts": 3, "drain_timeout_s": 60.0}
LONG = {"tasks": 40_000, "chaos_s": 300.0, "max_redis_restarts": 20, "drain_timeout_s": 180.0}


def chaos_plan() -> ChaosPlan:
    """Read THREADMILL_CHAOS (``long``), THREADMILL_CHAOS_SEED and THREADMILL_CHAOS_SYNC_ACK."""
    mode = os.environ.get("THREADMILL_CHAOS", "short")
    if mode not in ("short", "long"):
        raise ValueError(f"THREADMILL_CHAOS={mode!r}: use 'short' (the default) or 'long'.")
    seed_text = os.environ.get("THREADMILL_CHAOS_SEED")
    seed = int(seed_text) if seed_text else random.SystemRandom().randrange(2**32)
    sizes = LONG if mode == "long" else SHORT
    return ChaosPlan(
        mode=mode,
        seed=seed,
        processes=3,
        threads=4,
        sync_ack=bool(os.environ.get("THREADMILL_CHAOS_SYNC_ACK")),
        timeout_s=int(sizes["chaos_s"] + sizes["drain_timeout_s"] + 120),
        **sizes,  # type: ignore[arg-type]
    )
