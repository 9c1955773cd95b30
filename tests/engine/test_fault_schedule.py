"""A schedule of faults, not a list (issue 46, item 6): seeded, randomized
schedules of commands on two or three small partitioned tables, in process
on the shared session, with faults injected at random journal steps.

A schedule (``random.Random(seed)``, reproducible from its seed) is a
sequence of 4-6 operations per table (compact, compact --merge-from a new
batch, rollback, cleanup --older-than all / --keep-last 1, recover),
interleaved across the tables; some operations get a fault at a random
journal step (its unit too):

* ``pause``: the run waits at the step with its heartbeat going (a live
  run): a probe command on the table must find it ``locked`` and change
  nothing, and the next operation (on another table) runs meanwhile
  (overlapping runs); then the run goes on;
* ``stall``: the run waits with its heartbeat held (a stopped or killed
  process, ``=stall``); once its lease is stale (``lease_timeout`` 30s) the
  next operation on the table takes it over and settles its journal; the
  stalled run is resumed only at the end of the schedule and must report
  ``lease_lost``, say ``changed`` exactly when it had changed what readers
  see before it stopped, and change nothing more (the fence);
* ``raise``: an injected error at the step (the error path: the run
  settles what it left at once).

An oracle follows the reported results only: each table's rows per
partition (compaction, rollback, cleanup and recovery keep rows; a merge
upserts its batch by key into the partitions it swapped, reported by the
run or by whichever recovery settled it; a rollback restores the rows of
the newest backup for the partitions it restored) and its backups (which
runs keep one; cleanup must remove exactly what its retention rule says).
After each operation with nothing running on its table meanwhile: a result
with ``changed: false`` left the table's files (visible and hidden),
backups and journals as they were. After each schedule: a final
``recover`` (then "nothing to recover"), and per table the rows equal the
oracle's exactly (as multisets), every partition directory exists, no
staging or trash is left, the journals left are exactly those of the
backups the oracle expects, and so are the backup tables.

The suite runs ``SUITE_SEEDS``; more by hand:
``LAKEKEEPER_FAULT_SCHEDULES=<n>`` (n schedules) and/or
``LAKEKEEPER_FAULT_SEED=<seed>`` (seeds seed, seed+1, ...), e.g.
``LAKEKEEPER_FAULT_SEED=7 LAKEKEEPER_FAULT_SCHEDULES=20 pytest -s
tests/engine/test_fault_schedule.py``. Each schedule prints a summary line
(seed, operations, faults, outcomes) to the terminal.
"""

from __future__ import annotations

import dataclasses
import os
import random
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.integration

SUITE_SEEDS = [3, 8]
LEASE = "30s"  # the shortest lease a run may take: a stalled run's goes stale after it
STALE_AFTER = 32.0  # seconds from a stall to its lease being stale (the heartbeat's last beat is before the stall)
SCHEMA = "id BIGINT, v STRING, ver INT, op STRING"
DEDUPE = dict(dedupe_keys="id", dedupe_order_by="ver", dedupe_delete_marker="op", dedupe_delete_value="D")
# the journal steps of tests/crash/world.py (COMPACT_STEPS, ROLLBACK_STEPS) and merge_recording
COMPACT_STEPS = ["table:creating_backup", "table:compacting", "writing_staging", "verifying", "moving_aside",
                 "moving_aside:after", "moving_in", "moving_in:after", "repointing_backup", "done", "table:finished"]
ROLLBACK_STEPS = ["table:rolling_back", "rolling_back", "rollback_moved_compacted:after", "rollback_restored:after",
                  "table:rolled_back"]
STEPS = {"compact": COMPACT_STEPS, "merge": COMPACT_STEPS + ["merge_recording"], "rollback": ROLLBACK_STEPS}
# A stall at table:finished of a compaction leaves a finished journal with a backup: no recovery reports it (there
# is nothing to settle), so an oracle that reads results only could not know the run swapped; paused or raised there.
NO_STALL = {"table:finished"}
SWAPPED = {"completed_swap", "completed_backup", "repointed_backup"}
NOT_SWAPPED = {"restored_original", "rolled_back_unswapped", "source_vanished"}


def _seeds() -> list[int]:
    n = os.environ.get("LAKEKEEPER_FAULT_SCHEDULES")
    seed = os.environ.get("LAKEKEEPER_FAULT_SEED")
    if not n and not seed:
        return SUITE_SEEDS
    first = int(seed) if seed else 1000
    return [first + i for i in range(int(n) if n else 1)]


# ------------------------------------------------------------------ the oracle


@dataclasses.dataclass
class Run:
    kind: str  # compact | merge | rollback
    pre: dict[str, list[tuple]]  # the rows when it began, per partition
    batch: dict[str, list[tuple]] | None = None  # merge: its rows per partition
    target: str | None = None  # rollback: the run whose backup it restores


@dataclasses.dataclass
class Backup:
    kind: str
    pre: dict[str, list[tuple]] = dataclasses.field(default_factory=dict)  # merge: the rows of its swapped specs


def merged(rows: list[tuple], batch: list[tuple]) -> list[tuple]:
    """Upsert by key, the latest version wins, delete markers drop the key (test_merge._expected)."""
    latest = {r[0]: r for r in rows}
    for b in sorted(batch, key=lambda b: b[2]):
        if b[0] not in latest or b[2] >= latest[b[0]][2]:
            latest[b[0]] = b
    return sorted(r for r in latest.values() if r[3] != "D")


class Model:
    """What the table's readers must see and which backups it must have,
    from the reported results."""

    def __init__(self, name: str, rows: dict[str, list[tuple]]):
        self.name = name
        self.rows = rows
        self.runs: dict[str, Run] = {}
        self.order: list[str] = []  # run ids, in the order their runs began
        self.backups: dict[str, Backup] = {}
        self.unknown: list[str] = []  # what the oracle could not place (asserted empty)

    def begin(self, run_id: str, kind: str, batch=None) -> Run:
        run = Run(kind, {k: list(v) for k, v in self.rows.items()}, batch)
        if kind == "rollback":
            run.target = self.newest_backup()
        self.runs[run_id] = run
        self.order.append(run_id)
        return run

    def newest_backup(self) -> str | None:
        return max(self.backups, key=self.order.index, default=None)

    def swapped(self, run_id: str, spec: str) -> None:
        run = self.runs[run_id]
        b = self.backups.setdefault(run_id, Backup(run.kind))
        if run.kind == "merge" and spec not in b.pre:
            b.pre[spec] = run.pre[spec]
            self.rows[spec] = merged(run.pre[spec], run.batch.get(spec, []))

    def restored(self, run_id: str, spec: str) -> None:
        b = self.backups.get(self.runs[run_id].target or "")
        if b is None:
            self.unknown.append(f"{run_id} restored {spec} of no known backup")
        elif spec in b.pre:  # a merge's partition: its rows before; a compaction's: the same rows
            self.rows[spec] = b.pre.pop(spec)

    def rollback_finished(self, run_id: str) -> None:
        target = self.runs[run_id].target
        b = self.backups.pop(target or "", None)
        for spec in list(b.pre if b else []):  # every unit restored (those not reported one by one)
            self.rows[spec] = b.pre[spec]

    def absorb(self, actions: list[dict[str, Any]]) -> None:
        for a in actions or []:
            run_id, act = a.get("run_id"), a["action"]
            run = self.runs.get(run_id)
            if run is None:
                self.unknown.append(f"action {a} of an unknown run")
                continue
            if run.kind in ("compact", "merge"):
                if act in SWAPPED:
                    self.swapped(run_id, a["spec"])
                elif act == "recorded_merged_batch":
                    for spec in a["partitions"]:
                        self.swapped(run_id, spec)
                elif act == "finished_run":
                    self.backups.setdefault(run_id, Backup(run.kind))
                elif act == "closed_run":
                    self.backups.pop(run_id, None)
            elif act == "rolled_back":
                self.restored(run_id, a["spec"])
            elif act in ("finished_run", "closed_run"):
                self.rollback_finished(run_id)

    def result(self, op: "Op", res: dict[str, Any]) -> None:
        """A run's own result (its run registered when it paused, else now)."""
        if res.get("code") == "lease_lost" or res["status"] == "locked":
            return  # a taken-over run: its journal was settled (and reported) by the table's next holder
        self.absorb(res.get("recovered"))
        self.absorb(res.get("actions") if op.command == "recover" else None)
        run_id = res.get("run_id")
        if op.command in ("compact", "merge", "rollback") and run_id and run_id not in self.runs:
            self.begin(run_id, op.command, op.batch)
        run = self.runs.get(run_id)
        if op.command in ("compact", "merge"):
            for p in res.get("partitions") or []:
                if p["status"] == "compacted":
                    self.swapped(run_id, p["spec"])
            self.absorb(res.get("recovered_after_error"))
        elif op.command == "rollback":
            if run.target is None:
                return
            if res["status"] == "rolled_back":
                assert run.target.replace("T", "_").replace("-", "_") in res["backup_table"], (run.target, res)
                for p in res["partitions"]:
                    if p["status"] == "rolled_back":
                        self.restored(run_id, p["spec"])
                self.rollback_finished(run_id)
            self.absorb(res.get("recovered_after_error"))
        elif op.command == "cleanup" and res["status"] == "cleaned":
            removed = {e["run_id"] for e in res["backups_removed"]}
            keep = set() if op.settings.get("older_than") == "all" else {self.newest_backup()}
            expected = set(self.backups) - keep
            assert removed == expected, (op, removed, expected, res)
            for r in removed:
                self.backups.pop(r, None)
        elif op.command == "cleanup":  # nothing removed: nothing the rule would remove
            assert len(self.backups) <= (0 if op.settings.get("older_than") == "all" else 1), (self.backups, res)


# ------------------------------------------------------------------ schedules


@dataclasses.dataclass
class Op:
    table: int
    command: str  # compact | merge | rollback | cleanup | recover
    settings: dict[str, Any]
    fault: str | None = None  # pause | stall | raise
    step: str | None = None
    unit: int | None = None
    batch: dict[str, list[tuple]] | None = None
    batch_uri: str | None = None

    def label(self) -> str:
        where = f"{self.fault}@{self.step}" + ("" if self.unit is None else f"#{self.unit}") if self.fault else ""
        return f"t{self.table}:{self.command}" + (f"[{where}]" if where else "")


def plan_schedule(rng: random.Random) -> tuple[list[list[str]], list[Op]]:
    """The tables' partitions and the interleaved operations."""
    tables = [sorted(rng.sample("abcd", rng.randint(2, 3))) for _table in range(rng.randint(2, 3))]
    per_table: list[list[Op]] = []
    for t, parts in enumerate(tables):
        ops = []
        for i in range(rng.randint(4, 6)):
            command = rng.choice(["compact", "merge"]) if i == 0 else rng.choices(
                ["compact", "merge", "rollback", "cleanup", "recover"], [3, 3, 3, 2, 1])[0]
            settings: dict[str, Any] = {}
            if command == "cleanup":
                settings = rng.choice([{"older_than": "all"}, {"keep_last": 1}])
            op = Op(t, command, settings)
            if command in STEPS and rng.random() < 0.6:
                op.fault = rng.choices(["pause", "stall", "raise"], [2, 2, 3])[0]
                steps = [s for s in STEPS[command] if op.fault != "stall" or s not in NO_STALL]
                op.step = rng.choice(steps)
                if not op.step.startswith("table:") and op.step != "merge_recording":
                    op.unit = rng.choice([0, 0, 1]) if len(parts) > 1 else 0
            ops.append(op)
        per_table.append(ops)
    order: list[Op] = []
    while any(per_table):
        order.append(rng.choice([ops for ops in per_table if ops]).pop(0))
    return tables, order


def make_batch(rng: random.Random, model: Model, next_id: list[int]) -> dict[str, list[tuple]]:
    specs = rng.sample(sorted(model.rows), rng.randint(1, len(model.rows)))
    out = {}
    for spec in specs:
        rows = model.rows[spec]
        picked = rng.sample(rows, min(len(rows), rng.randint(2, 6)))
        batch = []
        for n, (key, _v, ver, _op) in enumerate(picked):
            op = "D" if n < rng.randint(0, 2) else "U"
            batch.append((key, f"{key}-v{ver + 1}", ver + 1, op))
        for _insert in range(rng.randint(1, 3)):
            next_id[0] += 1
            batch.append((next_id[0], f"{next_id[0]}-v1", 1, "I"))
        if rng.random() < 0.3 and picked:  # a key twice in the batch: its later version wins
            key, _v, ver, _op = picked[0]
            batch.append((key, f"{key}-v{ver + 2}", ver + 2, "U"))
        out[spec] = batch
    return out


# ------------------------------------------------------------------ the runner


@dataclasses.dataclass
class Flight:
    op: Op
    thread: threading.Thread
    box: dict
    pause_dir: Path
    tag: str
    paused_at: float | None = None
    run_id: str | None = None
    snap_start: dict | None = None
    state_paused: Any = None


class Schedule:
    def __init__(self, seed, spark, engine, files, warehouse, monkeypatch, tmp_path):
        self.seed, self.rng = seed, random.Random(seed)
        self.spark, self.engine, self.files, self.warehouse = spark, engine, files, warehouse
        self.mp, self.tmp = monkeypatch, tmp_path
        self.names: list[str] = []
        self.locs: list[str] = []
        self.models: list[Model] = []
        self.stalled: dict[int, Flight] = {}  # table -> its stalled run (taken over or not yet)
        self.taken: set[int] = set()
        self.log: list[str] = []
        self.counts: Counter = Counter()
        self.next_id = [100000]
        self.n = 0

    # ---------------------------------------------------------- tables
    def create(self, t: int, parts: list[str]) -> None:
        name = f"fsched_{self.seed}_{t}"
        full, loc = f"lk.{name}", f"{self.warehouse}/{name}"
        self.spark.sql(f"DROP TABLE IF EXISTS {full}")
        self.spark.sql(f"CREATE EXTERNAL TABLE {full} ({SCHEMA}) PARTITIONED BY (dt STRING) STORED AS PARQUET "
                       f"LOCATION '{loc}'")
        rows = {}
        for n, dt in enumerate(parts):
            base = [(n * 10000 + i, f"{n * 10000 + i}-v1", 1, "I") for i in range(self.rng.randint(60, 120))]
            self.spark.createDataFrame(base, SCHEMA).repartition(self.rng.randint(3, 5)).createOrReplaceTempView(
                "lk_fsched_src")
            self.spark.sql(f"INSERT INTO {full} PARTITION (dt='{dt}') SELECT * FROM lk_fsched_src")
            rows[f"dt={dt}"] = sorted(base)
        self.names.append(full)
        self.locs.append(loc)
        self.models.append(Model(full, rows))

    def rows(self, t: int) -> dict[str, list[tuple]]:
        self.spark.sql(f"REFRESH TABLE {self.names[t]}")
        out: dict[str, list[tuple]] = {}
        for r in self.spark.table(self.names[t]).collect():
            out.setdefault(f"dt={r['dt']}", []).append((r["id"], r["v"], r["ver"], r["op"]))
        return {k: sorted(v) for k, v in out.items()}

    def backups(self, t: int) -> set[str]:
        from lakekeeper_spark.catalog.backup import find_backups
        from lakekeeper_spark.catalog.catalog import Catalog
        from lakekeeper_spark.policy.config import build_settings

        db, name = self.names[t].split(".")
        return {b.run_id for b in find_backups(Catalog(self.spark), db, name, build_settings({}, {}).backup_prefix)}

    def journals(self, t: int) -> list[str]:
        from lakekeeper_spark.protocol.journal import Journal

        return Journal.run_ids(self.files.fs, f"{self.locs[t]}/.lakekeeper")

    def state(self, t: int) -> tuple:
        """Everything a run may change: the visible files, the hidden ones
        (the history and the lease apart), the backups."""
        hidden = [h for h in self.files.hidden(self.locs[t])
                  if "/history" not in h and not h.rsplit("/", 1)[-1].startswith("lease")]
        return self.files.snapshot(self.locs[t]), sorted(hidden), sorted(self.backups(t))

    # ---------------------------------------------------------- operations
    def settings(self, op: Op) -> dict[str, Any]:
        s = dict(op.settings, lease_timeout=LEASE, parallelism=1)
        if op.command == "merge":
            s.update(merge_from=op.batch_uri, **DEDUPE)
        return s

    def call(self, op: Op) -> dict[str, Any]:
        command = "compact" if op.command == "merge" else op.command
        return self.engine.one(command, self.names[op.table], **self.settings(op))

    def spec(self, op: Op) -> str:
        return f"{op.step}@{self.names[op.table]}" + ("" if op.unit is None else f"#{op.unit}")

    def prepare(self, op: Op) -> None:
        if op.command == "merge":
            op.batch = make_batch(self.rng, self.models[op.table], self.next_id)
            self.n += 1
            op.batch_uri = f"{self.warehouse}/fsched_batch_{self.seed}_{self.n}"
            rows = [r + (spec.split("=", 1)[1],) for spec, rs in op.batch.items() for r in rs]
            self.spark.createDataFrame(rows, SCHEMA + ", dt STRING").repartition(2).write.mode("overwrite").parquet(
                op.batch_uri)

    def run_sync(self, op: Op) -> dict[str, Any]:
        from lakekeeper_spark.protocol.faults import HOOKS

        t, model = op.table, self.models[op.table]
        before = self.state(t)
        if op.fault == "raise":
            self.mp.setattr(HOOKS, "fired", set())  # a raise spec fires once per process
            self.mp.setenv("LAKEKEEPER_FAULT_AT", f"{self.spec(op)}=raise")
        try:
            res = self.call(op)
        finally:
            self.mp.delenv("LAKEKEEPER_FAULT_AT", raising=False)
        if op.fault == "raise":  # fired: its spec is marked (it may have been settled forward, no error shown)
            self.counts["raised" if HOOKS.fired else "fault not reached"] += 1
        model.result(op, res)
        self.check_changed(op, res, before, self.state(t))
        return res

    def check_changed(self, op: Op, res: dict[str, Any], before: tuple, after: tuple) -> None:
        if not res.get("changed"):
            assert before[0] == after[0], (op, "changed: false but the visible files changed", res)
            assert before[1:] == after[1:], (op, "changed: false but hidden files or backups changed",
                                             before[1:], after[1:], res)
        if res["status"] in ("compacted", "rolled_back", "cleaned"):
            assert res["changed"] and before != after, (op, res)

    def start(self, op: Op) -> Flight:
        """An operation paused (or stalled) at its step; returns once it
        waits there or has finished."""
        self.n += 1
        pause_dir = self.tmp / f"pause{self.n}"
        pause_dir.mkdir()
        tag = f"{self.names[op.table]}.{op.step.replace(':after', '_after')}".replace(":", "_")
        flight = Flight(op, None, {}, pause_dir, tag, snap_start=self.state(op.table))
        self.mp.setenv("LAKEKEEPER_PAUSE_DIR", str(pause_dir))
        self.mp.setenv("LAKEKEEPER_PAUSE_AT", self.spec(op) + ("=stall" if op.fault == "stall" else ""))
        known = set(self.journals(op.table))
        flight.thread = threading.Thread(target=lambda: flight.box.update(res=self.call(op)), daemon=True)
        flight.thread.start()
        paused = pause_dir / f"{tag}.paused"
        deadline = time.time() + 300
        while not paused.exists() and flight.thread.is_alive() and time.time() < deadline:
            time.sleep(0.05)
        self.mp.delenv("LAKEKEEPER_PAUSE_AT")  # only this run, only at this step
        if paused.exists():
            flight.paused_at = time.time()
            new = [r for r in self.journals(op.table) if r not in known]
            assert len(new) == 1, (op, new)
            flight.run_id = new[0]
            self.models[op.table].begin(flight.run_id, op.command, op.batch)
            flight.state_paused = self.state(op.table)
        else:
            self.counts["fault not reached"] += 1
        return flight

    def resume(self, flight: Flight) -> dict[str, Any]:
        (flight.pause_dir / f"{flight.tag}.resume").write_text("go")
        flight.thread.join(300)
        assert not flight.thread.is_alive(), flight.op
        return flight.box["res"]

    def finish_paused(self, flight: Flight) -> dict[str, Any]:
        """A live paused run that went on: its result as any run's."""
        res = self.resume(flight) if flight.paused_at else (flight.thread.join(300) or flight.box["res"])
        model = self.models[flight.op.table]
        model.result(flight.op, res)
        self.check_changed(flight.op, res, flight.snap_start, self.state(flight.op.table))
        return res

    def wait_stale(self, t: int) -> None:
        """The next command on a table whose run stalled comes after its lease went stale."""
        flight = self.stalled.get(t)
        if flight is None or t in self.taken:
            return
        left = flight.paused_at + STALE_AFTER - time.time()
        if left > 0:
            self.counts["seconds waited for expiry"] += round(left)
            time.sleep(left)
        self.taken.add(t)

    def execute(self, order: list[Op]) -> None:
        i = 0
        while i < len(order):
            op = order[i]
            i += 1
            self.wait_stale(op.table)
            self.prepare(op)
            if op.fault in ("pause", "stall") and op.table not in self.stalled:
                flight = self.start(op)
                if not flight.paused_at:
                    self.note(op, self.finish_paused(flight))
                elif op.fault == "stall":
                    self.stalled[op.table] = flight
                    self.note(op, {"status": "stalled"})
                else:
                    probe = self.rng.choice(["compact", "rollback", "recover", "cleanup"])
                    before = self.state(op.table)
                    res = self.engine.one(probe, self.names[op.table], lease_timeout=LEASE,
                                          **({"older_than": "all"} if probe == "cleanup" else {}))
                    assert res["status"] == "locked" and not res["changed"], (op, probe, res)
                    assert self.state(op.table) == before, (op, probe)
                    self.counts["locked probes"] += 1
                    if i < len(order) and order[i].table != op.table and order[i].fault in (None, "raise") \
                            and order[i].table not in self.stalled:
                        other = order[i]  # overlapping: the next operation runs while this one waits
                        i += 1
                        self.prepare(other)
                        self.note(other, self.run_sync(other), "(overlapping)")
                        self.counts["overlapping runs"] += 1
                    self.note(op, self.finish_paused(flight))
            else:
                if op.fault and op.table in self.stalled:
                    op.fault = op.step = op.unit = None  # a table with a stalled run: its next operations plainly
                self.note(op, self.run_sync(op))
            self.counts[op.command] += 1
            if op.fault:
                self.counts[op.fault] += 1

    def note(self, op: Op, res: dict[str, Any], extra: str = "") -> None:
        bits = [op.label(), res["status"] + (f"/{res['code']}" if res.get("code") else "")]
        if res.get("lease_taken_over"):
            bits.append("took-over")
            self.counts["takeovers"] += 1
        if res.get("recovered") or res.get("recovered_after_error") or (op.command == "recover" and res.get("actions")):
            bits.append("recovered")
        self.log.append(" ".join(bits) + (f" {extra}" if extra else ""))
        self.counts[f"status {res['status']}"] += 1

    def settle(self) -> None:
        """The end of the schedule: a final recover of each table (taking
        over a stalled run's lease if no operation did), then the stalled
        runs resumed: each must find its lease lost and change nothing."""
        for t in range(len(self.names)):
            self.wait_stale(t)
            op = Op(t, "recover", {})
            res = self.run_sync(op)
            self.note(op, res, "(final)")
            assert res["status"] in ("recovered", "skipped"), res
        for t, flight in sorted(self.stalled.items()):
            before = self.state(t)
            res = self.resume(flight)
            assert res["status"] == "failed" and res["code"] == "lease_lost", (flight.op, res)
            assert "changed nothing more" in res["reason"] or "it had stopped at" in res["reason"], res
            touched = flight.state_paused[0] != flight.snap_start[0]
            assert bool(res["changed"]) == touched, (flight.op, "changed before it stopped?", touched, res)
            assert self.state(t) == before, (flight.op, "a taken-over run changed the table")
            self.log.append(f"{flight.op.label()} resumed: lease_lost changed={res['changed']}")
            self.counts["resumed stale runs"] += 1

    def verify(self) -> None:
        for t, model in enumerate(self.models):
            assert not model.unknown, model.unknown
            res = self.engine.one("recover", self.names[t], lease_timeout=LEASE)
            assert res["status"] == "skipped" and res["reason"] == "nothing to recover", res
            got = self.rows(t)
            assert got == model.rows, (self.names[t], _diff(got, model.rows))
            parts = sorted(r[0] for r in self.spark.sql(f"SHOW PARTITIONS {self.names[t]}").collect())
            assert parts == sorted(model.rows), parts
            for spec in parts:
                assert self.files.exists(f"{self.locs[t]}/{spec}"), spec
            hidden = self.files.hidden(self.locs[t])
            assert not [h for h in hidden if ".lk_staging" in h or ".lk_trash" in h], hidden
            olds = {h.split(".lk_old_", 1)[1] for h in hidden if ".lk_old_" in h and "/" not in h.split(".lk_old_")[1]}
            assert olds <= set(model.backups), (olds, model.backups)
            assert self.backups(t) == set(model.backups), (self.names[t], self.backups(t), set(model.backups))
            assert set(self.journals(t)) == set(model.backups), (self.journals(t), set(model.backups))


def _diff(got: dict, want: dict) -> dict:
    out = {}
    for spec in sorted(set(got) | set(want)):
        g, w = Counter(got.get(spec, [])), Counter(want.get(spec, []))
        if g != w:
            out[spec] = {"unexpected": sorted((g - w).elements())[:5], "missing": sorted((w - g).elements())[:5]}
    return out


def _cpu_seconds() -> float:
    """CPU seconds of this process and its children (the Spark JVM)."""
    import resource

    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        ru = resource.getrusage(who)
        total += ru.ru_utime + ru.ru_stime
    return total + _jvm_cpu()


def _jvm_cpu() -> float:
    """The JVM child is alive while the session lives: its CPU from /proc."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == os.getpid():  # ppid
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


@pytest.mark.parametrize("seed", _seeds())
def test_fault_schedule(seed, spark, engine, files, warehouse, monkeypatch, tmp_path, request):
    cpu, wall = _cpu_seconds(), time.time()
    for var in ("LAKEKEEPER_FAULT_AT", "LAKEKEEPER_PAUSE_AT"):
        monkeypatch.delenv(var, raising=False)
    s = Schedule(seed, spark, engine, files, warehouse, monkeypatch, tmp_path)
    tables, order = plan_schedule(s.rng)
    for t, parts in enumerate(tables):
        s.create(t, parts)
    try:
        s.execute(order)
        s.settle()
        s.verify()
    finally:
        for flight in s.stalled.values():  # a failed check must not leave a run waiting
            (flight.pause_dir / f"{flight.tag}.resume").write_text("go")
        lines = [f"fault schedule seed={seed}: {len(tables)} tables {['/'.join(p) for p in tables]}, "
                 f"{len(order)} operations; " + ", ".join(f"{k}={v}" for k, v in sorted(s.counts.items())),
                 "  " + "; ".join(s.log),
                 f"  cost: {_cpu_seconds() - cpu:.1f} CPU s (pytest + Spark JVM), {time.time() - wall:.1f} s wall"]
        _terminal(request.config, lines)
    for name in s.names:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def _terminal(config, lines: list[str]) -> None:
    """Write to the terminal whatever pytest's capture setting is."""
    tr = config.pluginmanager.get_plugin("terminalreporter")
    capman = config.pluginmanager.get_plugin("capturemanager")
    if tr is None:
        print("\n".join(lines))
        return
    if capman is not None:
        with capman.global_and_fixture_disabled():
            tr.ensure_newline()
            for line in lines:
                tr.write_line(line)
    else:
        tr.ensure_newline()
        for line in lines:
            tr.write_line(line)
