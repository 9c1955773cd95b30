"""The NameNode calls' threads: ``threaded`` runs a call over many items on
a pool shared by the whole process (listings, open-file checks, HDFS
checks)."""

from __future__ import annotations

import threading
from typing import Any

# One pool of threads for the NameNode calls of every ``threaded`` in the process, kept: a Python thread
# that calls into the JVM opens its own gateway connection (and the JVM a thread for it) the first time,
# which made a pool started per call about 3-5 ms dearer than the calls it ran (4 short calls, local).
POOL_THREADS = 8
_pool: Any = None
_pool_lock = threading.Lock()
_worker = threading.local()


def _shared_pool() -> Any:
    global _pool  # noqa: PLW0603 - created on first use, kept for the process
    with _pool_lock:
        if _pool is None:
            from concurrent.futures import ThreadPoolExecutor

            _pool = ThreadPoolExecutor(max_workers=POOL_THREADS, thread_name_prefix="lakekeeper-nn",
                                       initializer=lambda: setattr(_worker, "in_pool", True))
        return _pool


def threaded(fn: Any, items: list[Any], limit: int = 8) -> list[Any]:
    """``fn`` over ``items`` on up to ``limit`` threads of the shared pool
    (each NameNode call a gateway round trip: many of them overlap); results
    in order. Returns once every call has ended; the first error, in order,
    is raised. Called from one of the pool's own threads it runs in that
    thread (a pool waiting on itself could wait for ever)."""
    if len(items) <= 1 or limit <= 1 or getattr(_worker, "in_pool", False):
        return [fn(x) for x in items]
    from concurrent.futures import wait

    k = min(limit, len(items), POOL_THREADS)
    groups = [list(range(i, len(items), k)) for i in range(k)]

    def run(indexes: list[int]) -> list[tuple[int, Any]]:
        return [(i, fn(items[i])) for i in indexes]

    futures = [_shared_pool().submit(run, g) for g in groups]
    wait(futures)
    out: list[Any] = [None] * len(items)
    for f in futures:
        for i, r in f.result():  # raises the group's error
            out[i] = r
    return out
