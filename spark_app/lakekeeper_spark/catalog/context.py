"""What a run shares: the Spark session, the filesystem and catalog
adapters, the settings and the run id (``Context``), and its budget of
concurrent work: tables and units run on bounded thread pools
(``bounded_map``), units' Spark jobs draw from ``parallelism`` slots shared
by every table of the run (``run_unit_jobs``, ``JobSlot``)."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import queue
import threading
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any, Callable, Iterator, TypeVar

from .catalog import Catalog
from ..policy.config import Settings
from ..storage.fs import HadoopFS

log = logging.getLogger(__name__)

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
    _cores: int | None = dataclasses.field(default=None, repr=False)  # cores(), once read; copied by replace()
    # the run's unit threads, shared by its tables (unit_pool); None: each table its own
    units: Any = dataclasses.field(default=None, repr=False)
    # a table's run: its Metastore entry as loaded once (tables.load_table), for the lease, the command and the
    # history record alike (name -> TableInfo); None: each load asks the Metastore
    loaded: Any = dataclasses.field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.settings.parallelism is None:  # not set by the user: from the application's cores
            cores = self.cores()
            self.settings = dataclasses.replace(self.settings, parallelism=parallelism_for_cores(cores))
            log.info("parallelism %d (the application's cores: %d)", self.settings.parallelism, cores)

    def cores(self) -> int:
        """The executor cores the application can count on
        (``application_cores``), read from the session once."""
        with self._slots_lock:
            if self._cores is None:
                sc = self.spark.sparkContext
                self._cores = application_cores(sc.master, dict(sc.getConf().getAll()), sc.defaultParallelism)
            return self._cores

    def job_slots(self) -> "queue.Queue[int]":
        """The run's budget of concurrent unit jobs: ``parallelism`` slot
        numbers, shared by every table of the run."""
        with self._slots_lock:
            if self._slots is None:
                self._slots = queue.Queue()
                for i in range(max(1, self.settings.parallelism)):
                    self._slots.put(i)
            return self._slots


# What an unset ``parallelism`` becomes (parallelism_for_cores): the engine's
# default of earlier versions at the least; at the most, a bound on the
# driver's threads (tables at once, and the run's unit threads: unit_threads)
# and on the Metastore and NameNode calls made side by side.
AUTO_PARALLELISM_MIN = 4
AUTO_PARALLELISM_MAX = 16


def application_cores(master: str, conf: dict[str, str], default_parallelism: int) -> int:
    """The executor cores the application can count on: its executors
    (``spark.executor.instances``, or dynamic allocation's
    ``maxExecutors`` when it has one) times ``spark.executor.cores``; else
    (local mode, a standalone cluster giving executors every core, an
    unbounded dynamic allocation) Spark's default parallelism, the cores
    registered so far unless ``spark.default.parallelism`` says otherwise."""
    if master.startswith("local"):
        return max(1, int(default_parallelism))
    per_executor = _int(conf.get("spark.executor.cores"))
    if conf.get("spark.dynamicAllocation.enabled", "false").strip().lower() == "true":
        executors = _int(conf.get("spark.dynamicAllocation.maxExecutors"))
        executors = executors if executors is not None and executors < 2 ** 31 - 1 else None
    else:
        executors = _int(conf.get("spark.executor.instances"))
    if executors and per_executor:
        return executors * per_executor
    if executors and master.startswith("yarn"):  # YARN's executors have one core unless told otherwise
        return executors
    return max(1, int(default_parallelism))


def parallelism_for_cores(cores: int) -> int:
    """Units in their Spark jobs at once when the user did not say: one a
    core (a small partition's write is a task or two), between
    ``AUTO_PARALLELISM_MIN`` and ``AUTO_PARALLELISM_MAX``."""
    return max(AUTO_PARALLELISM_MIN, min(AUTO_PARALLELISM_MAX, cores))


def _int(value: str | None) -> int | None:
    try:
        return int(str(value).strip()) if value is not None else None
    except ValueError:
        return None


@contextlib.contextmanager
def unit_pool(ctx: Context) -> Iterator[Context]:
    """The run's unit threads, ``unit_threads(parallelism)`` of them, shared
    by every table of the run (contexts made from the one yielded share
    it): however many tables run at once, the driver holds that many unit
    threads, not that many a table. Shut down when the run ends."""
    if ctx.settings.parallelism <= 1 or ctx.units is not None:  # one at a time: in the table's thread
        yield ctx
        return
    pool = ThreadPoolExecutor(max_workers=unit_threads(ctx.settings.parallelism), thread_name_prefix="lakekeeper-unit")
    try:
        yield dataclasses.replace(ctx, units=pool)
    finally:
        pool.shutdown(wait=True)


def bounded_map(fn: Callable[[T], R], items: list[T], limit: int, thread_name_prefix: str) -> list[R]:
    """``fn`` over ``items`` on at most ``limit`` threads (in this thread
    when one is enough); results in the items' order."""
    workers = max(1, min(limit, len(items)))
    if workers == 1:
        return [fn(item) for item in items]
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix=thread_name_prefix) as pool:
        return list(pool.map(fn, items))


class JobSlot:
    """A unit's hold on one of the run's ``parallelism`` job slots, taken
    when the unit starts: its Spark jobs run in the slot's FAIR pool
    (``lakekeeper-<slot>``). ``release`` gives it back once the unit's last
    Spark job is done, so its swap, journal and Metastore steps run beside
    the next unit's write instead of keeping the executors waiting."""

    def __init__(self, slots: "queue.Queue[int]", sc: Any) -> None:
        self._slots, self._sc = slots, sc
        self._slot: int | None = slots.get()
        sc.setLocalProperty("spark.scheduler.pool", f"lakekeeper-{self._slot}")

    def take(self) -> None:
        """Hold a slot again (a unit tried again after it gave its slot back)."""
        if self._slot is not None:
            return
        self._slot = self._slots.get()
        self._sc.setLocalProperty("spark.scheduler.pool", f"lakekeeper-{self._slot}")

    def release(self) -> None:
        if self._slot is None:
            return
        self._sc.setLocalProperty("spark.scheduler.pool", None)  # a stray job after this: the default pool
        slot, self._slot = self._slot, None
        self._slots.put(slot)


# Threads the units may use beyond the ``parallelism`` places (unit_threads).
FINISHING_THREADS_MAX = 8


def unit_threads(parallelism: int) -> int:
    """Threads the units of a run run on: ``parallelism`` of them in their
    Spark jobs (``JobSlot``) and, from a parallelism of 2, as many again
    (at most ``FINISHING_THREADS_MAX``) finishing (swap, journal,
    Metastore) or waiting for a place. With 1, strictly one unit at a time."""
    return parallelism if parallelism <= 1 else parallelism + min(parallelism, FINISHING_THREADS_MAX)


def run_unit_jobs(ctx: Context, jobs: list[Callable[[JobSlot], R]]) -> list[R]:
    """Run units on a bounded pool of threads: each submits its own Spark
    jobs, so many small partitions keep the executors busy. At most
    ``parallelism`` units run Spark jobs at once in the whole application
    (tables run concurrently share the budget): a unit holds a ``JobSlot``
    from its start to its last Spark job, in the slot's own FAIR pool
    (``lakekeeper-<slot>``), so the scheduler shares the cores between them
    instead of serving one job's tasks first; the steps after it run
    without the slot (``unit_threads``). The threads are the run's
    (``unit_pool``) when it has them. Results keep the plan's order."""
    slots = ctx.job_slots()
    sc = ctx.spark.sparkContext

    def run(job: Callable[[JobSlot], R]) -> R:
        slot = JobSlot(slots, sc)
        try:
            return job(slot)
        finally:
            slot.release()

    if ctx.units is None or len(jobs) <= 1:
        return bounded_map(run, jobs, unit_threads(ctx.settings.parallelism), "lakekeeper-unit")
    futures = [ctx.units.submit(run, job) for job in jobs]
    wait(futures)  # every unit settled before the table goes on, even when one raised
    return [f.result() for f in futures]
