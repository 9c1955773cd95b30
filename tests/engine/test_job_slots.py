"""The run's job slots (``context.run_unit_jobs``, ``JobSlot``): at most
``parallelism`` units in their Spark jobs at once, each in its slot's FAIR
pool; a unit that gives its slot back (after its last Spark job) finishes
its swap beside the next unit's jobs; with a parallelism of 1, strictly one
unit at a time."""

from __future__ import annotations

import dataclasses
import threading
import time

import pytest


class _SparkContext:
    """Records the scheduler pool each thread's jobs would go to."""

    def __init__(self) -> None:
        self.local = threading.local()

    def setLocalProperty(self, key: str, value: str | None) -> None:  # noqa: N802 - Spark's name
        assert key == "spark.scheduler.pool"
        self.local.pool = value


@dataclasses.dataclass
class _Settings:
    parallelism: int


def _ctx(parallelism: int):
    from lakekeeper_spark.catalog.context import Context

    sc = _SparkContext()
    spark = type("Spark", (), {"sparkContext": sc})()
    return Context(spark, None, None, _Settings(parallelism), "run-1"), sc


class _Recorder:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.in_jobs = self.in_swap = 0
        self.max_jobs = self.max_total = 0
        self.swap_beside_jobs = False
        self.pools: list[str | None] = []

    def enter(self, phase: str, delta: int) -> None:
        with self.lock:
            if phase == "jobs":
                self.in_jobs += delta
            else:
                self.in_swap += delta
            self.max_jobs = max(self.max_jobs, self.in_jobs)
            self.max_total = max(self.max_total, self.in_jobs + self.in_swap)
            if self.in_swap and self.in_jobs:
                self.swap_beside_jobs = True


def _unit(rec: _Recorder, sc: _SparkContext, i: int, release: bool = True, fail: bool = False):
    def job(slot):
        rec.enter("jobs", 1)
        rec.pools.append(sc.local.pool)
        time.sleep(0.03)  # its Spark jobs
        rec.enter("jobs", -1)
        if fail:
            raise RuntimeError(f"unit {i} failed")
        if release:
            slot.release()
            slot.release()  # twice: the second does nothing
            assert sc.local.pool is None
        rec.enter("swap", 1)
        time.sleep(0.03)  # renames, journal, Metastore
        rec.enter("swap", -1)
        return i
    return job


@pytest.mark.parametrize("parallelism", [2, 3])
def test_at_most_parallelism_units_in_jobs_and_swaps_beside_them(parallelism):
    from lakekeeper_spark.catalog.context import run_unit_jobs

    ctx, sc = _ctx(parallelism)
    rec = _Recorder()
    out = run_unit_jobs(ctx, [_unit(rec, sc, i) for i in range(12)])
    assert out == list(range(12))  # the plan's order
    assert rec.max_jobs == parallelism  # never more units in Spark jobs than slots
    assert rec.max_total > parallelism  # units finishing their swap beside them
    assert rec.swap_beside_jobs
    assert set(rec.pools) == {f"lakekeeper-{s}" for s in range(parallelism)}
    assert ctx.job_slots().qsize() == parallelism  # every slot given back


def test_a_unit_that_keeps_its_slot_or_fails_gives_it_back_at_its_end():
    from lakekeeper_spark.catalog.context import run_unit_jobs

    ctx, sc = _ctx(2)
    rec = _Recorder()
    assert run_unit_jobs(ctx, [_unit(rec, sc, i, release=False) for i in range(6)]) == list(range(6))
    assert rec.max_total == 2  # its swap still holds the slot: no third unit beside it
    assert ctx.job_slots().qsize() == 2
    rec = _Recorder()
    with pytest.raises(RuntimeError, match="unit 1 failed"):
        run_unit_jobs(ctx, [_unit(rec, sc, i, fail=i == 1) for i in range(4)])
    assert ctx.job_slots().qsize() == 2  # the failed unit's slot too


def test_parallelism_one_is_one_unit_at_a_time():
    from lakekeeper_spark.catalog.context import run_unit_jobs

    ctx, sc = _ctx(1)
    rec = _Recorder()
    assert run_unit_jobs(ctx, [_unit(rec, sc, i) for i in range(4)]) == [0, 1, 2, 3]
    assert rec.max_total == 1  # no swap beside another unit's jobs
    assert not rec.swap_beside_jobs


@pytest.mark.parametrize("master, conf, default, cores", [
    ("local[2]", {}, 2, 2),
    ("local[*]", {"spark.executor.instances": "50"}, 8, 8),  # local mode: its own threads, whatever the conf
    ("yarn", {"spark.executor.instances": "10", "spark.executor.cores": "4"}, 2, 40),
    ("yarn", {"spark.executor.instances": "6"}, 2, 6),  # YARN: one core an executor by default
    ("yarn", {"spark.dynamicAllocation.enabled": "true", "spark.dynamicAllocation.maxExecutors": "20",
              "spark.executor.cores": "2", "spark.executor.instances": "1"}, 2, 40),
    ("yarn", {"spark.dynamicAllocation.enabled": "true", "spark.executor.cores": "2"}, 3, 3),  # unbounded
    ("yarn", {"spark.dynamicAllocation.enabled": "TRUE", "spark.dynamicAllocation.maxExecutors": "2147483647",
              "spark.executor.cores": "2"}, 5, 5),
    ("spark://master:7077", {}, 12, 12),  # standalone: every core of the workers, as registered
    ("spark://master:7077", {"spark.executor.instances": "x"}, 12, 12),
])
def test_the_cores_an_unset_parallelism_comes_from(master, conf, default, cores):
    from lakekeeper_spark.catalog.context import application_cores

    assert application_cores(master, conf, default) == cores


@pytest.mark.parametrize("cores, parallelism", [(1, 4), (2, 4), (4, 4), (7, 7), (16, 16), (400, 16)])
def test_an_unset_parallelism_is_one_unit_a_core_between_4_and_16(cores, parallelism):
    from lakekeeper_spark.catalog.context import parallelism_for_cores

    assert parallelism_for_cores(cores) == parallelism


def test_a_context_resolves_an_unset_parallelism_from_its_sessions_cores():
    from lakekeeper_spark.policy.config import build_settings
    from lakekeeper_spark.catalog.context import Context

    class Conf:
        def getAll(self):  # noqa: N802 - Spark's name
            return [("spark.executor.instances", "12"), ("spark.executor.cores", "1")]

    sc = type("SC", (), {"master": "yarn", "defaultParallelism": 2, "getConf": lambda self: Conf()})()
    spark = type("Spark", (), {"sparkContext": sc})()
    assert build_settings({}, {}).parallelism is None
    assert Context(spark, None, None, build_settings({}, {}), "r").settings.parallelism == 12
    assert Context(spark, None, None, build_settings({}, {"parallelism": 3}), "r").settings.parallelism == 3


@pytest.mark.parametrize("conf, parallelism, units, slots", [
    ({"spark.executor.instances": "10", "spark.executor.cores": "4"}, 4, 30, 10),
    ({"spark.executor.instances": "10", "spark.executor.cores": "4"}, 4, 2, 20),  # two units: half each
    ({"spark.dynamicAllocation.enabled": "true", "spark.dynamicAllocation.maxExecutors": "20",
      "spark.executor.cores": "2"}, None, 100, 2),  # 40 cores, parallelism 16
    ({"spark.dynamicAllocation.enabled": "true", "spark.executor.cores": "2"}, None, 100, 1),  # unbounded: 2 now
])
def test_a_units_task_slots_count_the_configured_executors(conf, parallelism, units, slots):
    """On YARN the driver starts before (all) its executors: ``defaultParallelism``
    is 2 then, which left every unit one slot and never wrote in pieces."""
    from lakekeeper_spark.commands.compact import unit_slots
    from lakekeeper_spark.policy.config import build_settings
    from lakekeeper_spark.catalog.context import Context

    calls = []

    class Conf:
        def getAll(self):  # noqa: N802 - Spark's name
            calls.append(1)
            return list(conf.items())

    sc = type("SC", (), {"master": "yarn", "defaultParallelism": 2, "getConf": lambda self: Conf()})()
    spark = type("Spark", (), {"sparkContext": sc})()
    settings = build_settings({}, {} if parallelism is None else {"parallelism": parallelism})
    ctx = Context(spark, None, None, settings, "r")
    assert unit_slots(ctx, units) == slots
    assert unit_slots(dataclasses.replace(ctx, run_id="r2"), units) == slots
    assert len(calls) == 1  # read once, then carried by the contexts made from this one


def test_on_the_tests_local_session_an_unset_parallelism_is_the_old_default(spark):
    from lakekeeper_spark.policy.config import build_settings
    from lakekeeper_spark.catalog.context import Context

    assert spark.sparkContext.master == "local[2]"
    assert Context(spark, None, None, build_settings({}, {}), "r").settings.parallelism == 4


@pytest.mark.parametrize("parallelism, threads", [(1, 1), (2, 4), (4, 8), (8, 16), (16, 24), (64, 72)])
def test_a_tables_unit_threads(parallelism, threads):
    from lakekeeper_spark.catalog.context import unit_threads

    assert unit_threads(parallelism) == threads


def test_the_tables_of_a_run_share_its_unit_threads():
    from lakekeeper_spark.catalog.context import bounded_map, run_unit_jobs, unit_pool

    ctx, sc = _ctx(2)
    rec = _Recorder()
    names: set[str] = set()

    def unit(i):
        job = _unit(rec, sc, i)

        def named(slot):
            names.add(threading.current_thread().name)
            return job(slot)
        return named

    with unit_pool(ctx) as run_ctx:
        assert run_ctx.units is not None
        out = bounded_map(lambda t: run_unit_jobs(run_ctx, [unit(10 * t + i) for i in range(6)]), [0, 1, 2], 3,
                          "table")
        pool = run_ctx.units
    assert out == [[10 * t + i for i in range(6)] for t in range(3)]
    assert rec.max_jobs == 2 and rec.max_total <= 4  # three tables at once, the run's 4 unit threads
    assert rec.swap_beside_jobs
    assert len(names) <= 4 and all(n.startswith("lakekeeper-unit") for n in names)
    with pytest.raises(RuntimeError):  # shut down with the run
        pool.submit(print)


def test_a_table_goes_on_only_when_every_unit_has_settled():
    from lakekeeper_spark.catalog.context import run_unit_jobs, unit_pool

    ctx, sc = _ctx(2)
    rec = _Recorder()
    finished: list[int] = []

    def unit(i):
        job = _unit(rec, sc, i, fail=i == 0)

        def tracked(slot):
            try:
                return job(slot)
            finally:
                finished.append(i)
        return tracked

    with unit_pool(ctx) as run_ctx:
        with pytest.raises(RuntimeError, match="unit 0 failed"):
            run_unit_jobs(run_ctx, [unit(i) for i in range(5)])
        assert sorted(finished) == [0, 1, 2, 3, 4]  # the first unit's failure raised after the others ended
    assert ctx.job_slots().qsize() == 2


def test_a_real_compaction_swaps_beside_the_next_units_jobs(spark, warehouse, engine, monkeypatch):
    """Real Spark and Metastore, a partitioned table of six small partitions,
    a parallelism of 2: never more than two units hold a slot, and a unit
    that gave its slot back was still finishing when the next one took it."""
    from engine_helpers import make_table
    from lakekeeper_spark.catalog import context
    from lakekeeper_spark.commands import compact

    make_table(spark, warehouse, "slots_parts", rows=50, partitions={f"d{i}": 3 for i in range(6)})
    lock, events, held = threading.Lock(), [], [0, 0]  # held: now, most
    init, release, unit = context.JobSlot.__init__, context.JobSlot.release, compact._compact_unit

    def timed_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        with lock:
            held[0] += 1
            held[1] = max(held)
            events.append(("took", self))  # the object itself: an id could be reused

    def timed_release(self):
        if self._slot is not None:
            with lock:
                held[0] -= 1
                events.append(("gave", self))
        release(self)

    def timed_unit(*args, **kwargs):
        try:
            return unit(*args, **kwargs)
        finally:
            with lock:
                events.append(("ended", kwargs["job"]))  # the unit's own JobSlot

    monkeypatch.setattr(context.JobSlot, "__init__", timed_init)
    monkeypatch.setattr(context.JobSlot, "release", timed_release)
    monkeypatch.setattr(compact, "_compact_unit", timed_unit)
    (res,) = engine.run("compact", ["lk.slots_parts"], parallelism=2)
    assert res["status"] == "compacted", res
    assert [p["status"] for p in res["partitions"]] == ["compacted"] * 6
    assert held[1] == 2  # never a third unit in its Spark jobs
    overlapped = 0
    for i, (what, slot) in enumerate(events):
        if what == "gave":  # another unit took a slot before this one ended
            end = next((j for j in range(i, len(events)) if events[j][0] == "ended" and events[j][1] is slot),
                       i)  # i: it had ended before
            overlapped += any(e[0] == "took" for e in events[i + 1:end])
    assert overlapped >= 1, events
    assert spark.table("lk.slots_parts").count() == 300
