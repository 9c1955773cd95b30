"""What a run shares: the Spark session, the filesystem and catalog
adapters, the settings and the run id (``Context``), and its budget of
concurrent work: tables and units run on bounded thread pools
(``bounded_map``), unit jobs draw from ``parallelism`` slots shared by every
table of the run (``run_unit_jobs``)."""

from __future__ import annotations

import dataclasses
import queue
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, TypeVar

from .catalog import Catalog
from .config import Settings
from .fs import HadoopFS

T = TypeVar("T")
R = TypeVar("R")


@dataclasses.dataclass
class Context:
    spark: Any
    fs: HadoopFS
    catalog: Catalog
    settings: Settings
    run_id: str
    lease: Any = None  # the table's lease (lease.Lease) while a command works on one table
    budget: Any = None  # compact with a deadline: the maintenance window's budget (budget.Budget)
    _slots: Any = dataclasses.field(default=None, repr=False)
    _slots_lock: Any = dataclasses.field(default_factory=threading.Lock, repr=False)

    def job_slots(self) -> "queue.Queue[int]":
        """The run's budget of concurrent unit jobs: ``parallelism`` slot
        numbers, shared by every table of the run."""
        with self._slots_lock:
            if self._slots is None:
                self._slots = queue.Queue()
                for i in range(max(1, self.settings.parallelism)):
                    self._slots.put(i)
            return self._slots


def bounded_map(fn: Callable[[T], R], items: list[T], limit: int, thread_name_prefix: str) -> list[R]:
    """``fn`` over ``items`` on at most ``limit`` threads (in this thread
    when one is enough); results in the items' order."""
    workers = max(1, min(limit, len(items)))
    if workers == 1:
        return [fn(item) for item in items]
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix=thread_name_prefix) as pool:
        return list(pool.map(fn, items))


def run_unit_jobs(ctx: Context, jobs: list[Callable[[], R]]) -> list[R]:
    """Run units on a bounded pool of threads: each submits its own Spark
    jobs, so many small partitions keep the executors busy. At most
    ``parallelism`` units run at once in the whole application (tables run
    concurrently share the budget); each running unit has its own FAIR pool
    (``lakekeeper-<slot>``), so the scheduler shares the cores between them
    instead of serving one job's tasks first. Results keep the plan's order."""
    slots = ctx.job_slots()
    sc = ctx.spark.sparkContext

    def run(job: Callable[[], R]) -> R:
        slot = slots.get()
        try:
            sc.setLocalProperty("spark.scheduler.pool", f"lakekeeper-{slot}")
            return job()
        finally:
            slots.put(slot)

    return bounded_map(run, jobs, ctx.settings.parallelism, "lakekeeper-unit")
