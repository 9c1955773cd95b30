"""Crash-test worlds: every table of the crash, concurrent-writer and
bad-input tests, driven through as few engine processes as possible.

A JVM start costs seconds (tens of seconds on a busy 2-core machine) and the
embedded Derby Metastore admits one JVM at a time, so one *world* runs a
fixed pipeline of processes over many tables, each table a test case:

file world (embedded Derby, file://):
  setup          one Spark process creates ~100 tables (world_setup.py)
  kill_compact   the real CLI ``compact --tables ...``; every crash table
                 parks at its own step (LAKEKEEPER_FAULT_AT=<step>@<table>),
                 then the process SIGKILLs the JVM and itself
  kill_rollback  the same for rollbacks
  recover        ``recover --tables ...`` for the crashed tables
  cleanup        ``cleanup``: recovers a crashed table first; a foreign file
                 among the originals is kept
  compact        a normal ``compact`` run: automatic recovery of crashed
                 tables, errors injected at every step (``=raise``), writers
                 at pause points (LAKEKEEPER_PAUSE_AT), a separate writer
                 process appending all the time, bad input, owner/mode
                 (the quiet period is checked in kill_compact, a compact run
                 too, whose finished tables' results are kept)
  verify         one Spark process: second recovery (must do nothing) and
                 every invariant, per table (world_verify.py)

HDFS world (test bed: HDFS 3.5 or 2.7, Metastore service): the rename-critical
steps, a rollback step, owner/mode, permission denied and a space quota hit
during the write; and one run per table: a second compact and a cleanup
started as separate processes while a compaction of the same table waits
before its swap.

merge world (file://): merge mode (``compact --table t --merge-from ...``,
one table a process) SIGKILLed at its journal steps, one table each, then
``recover`` and re-runs of the same merge (build_merge_world).

Everything is built once per pytest process (``file_world`` /
``hdfs_world``) and cached; tests assert on slices of the facts.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
APPS = HERE / "apps"
APP = REPO / "spark_app" / "run_lakekeeper.py"
OUTPUT = REPO / "tests" / "output"
PY = sys.executable
sys.path.insert(0, str(APPS))

from testbed.confs import QUICK_JVM_OPTS  # noqa: E402

try:  # the suite's CPU counter (tests/cpu_meter.py): each process's CPU seconds in the stage table
    from cpu_meter import cpu_now
except ImportError:  # pragma: no cover - imported without tests/ on the path
    def cpu_now():
        return None
from world_common import COMPACTED, MERGE_DEDUPE, units_of  # noqa: E402

# Cheaper client JVMs (the suite is CPU-bound): the test bed's quick options.
QUICK_JAVA = " ".join(QUICK_JVM_OPTS)
# Spark's interpreted evaluation instead of generated code, as tests/engine's session: a
# world's processes run the protocol (journal, renames, recovery) over tables of a few
# hundred rows, where compiling generated Java is most of Spark's work, and both modes
# give the same rows. LAKEKEEPER_CRASH_CODEGEN=1 keeps Spark's default (generated code).
INTERPRETED = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}


def world_confs() -> dict[str, str]:
    return {} if os.environ.get("LAKEKEEPER_CRASH_CODEGEN") == "1" else dict(INTERPRETED)


STAGE_TIMEOUT = float(os.environ.get("LAKEKEEPER_CRASH_STAGE_TIMEOUT", "1500"))

COMPACT_STEPS = [
    "table:creating_backup", "table:compacting", "writing_staging", "verifying", "moving_aside",
    "moving_aside:after", "moving_in", "moving_in:after", "repointing_backup", "done", "table:finished",
]
# The kill points of a batch of units written by one job (rewrite/batch.py): a partitioned table's two
# compacted partitions form a batch; killed before its write, its read-back, its renames and after the first
BATCH_STEPS = ["batch_writing", "batch_reading", "batch_renaming", "batch_renaming:after"]
FORWARD_STEPS = {"moving_aside:after", "moving_in", "moving_in:after", "repointing_backup", "done",
                 "table:finished"}
ROLLBACK_STEPS = ["table:rolling_back", "rolling_back", "rollback_moved_compacted:after",
                  "rollback_restored:after", "table:rolled_back"]
# the unit (index in plan order) at which unit-level steps interrupt: the
# partitioned table at its first unit (the second still untouched), the
# table with a partition outside its root at that partition (the first done)
CRASH_UNIT = {"flat": 0, "part": 0, "outside": 1, "minor": 0}
ROLLBACK_UNIT = {"flat": 0, "part": 1, "outside": 1, "minor": 0}
APPEND_UNIT = {"flat": "", "part": "dt=c", "outside": "y=2024/m=03", "minor": ""}
# Minor mode (kind "minor", world_common.MINOR_KEPT): the kept files are moved by rename into the staging
# after the journaled step ``moving_kept`` (``moving_kept:after``: all of them moved), right before the swap
MINOR_STEPS = ["verifying", "moving_kept", "moving_kept:after", "moving_aside", "moving_aside:after",
               "moving_in", "done"]
MINOR_ROLLBACK_STEPS = ["rolling_back", "rollback_moved_compacted:after", "rollback_restored:after"]
MINOR_GROUPS = ("minor_crash", "minor_auto", "minor_raise", "minor_rollback", "minor_cleanup")


def code(step: str) -> str:
    return step.replace("table:", "t_").replace(":after", "_after")


def hook(step: str, table: str, unit: int | None, action: str = "") -> str:
    s = f"{step}@{table}"
    if unit is not None and not step.startswith("table:"):
        s += f"#{unit}"
    return s + (f"={action}" if action else "")


def expected_units(kind: str, step: str) -> dict[str, str]:
    """Unit -> 'fwd' (compacted, original in the backup) or 'back' (original
    files live) after recovering from a crash at ``step``."""
    units = COMPACTED[kind]
    if step.startswith("table:"):
        return {u: "fwd" if step == "table:finished" else "back" for u in units}
    crash = CRASH_UNIT[kind]
    return {u: ("fwd" if i < crash else ("fwd" if step in FORWARD_STEPS else "back") if i == crash else "back")
            for i, u in enumerate(units)}


# ---------------------------------------------------------------- processes


def _group_members(pgid: int) -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid:
                out.append(int(d))
        except (OSError, IndexError, ValueError):
            continue
    return out


def reap_group(pgid: int, timeout: float = 30) -> list[int]:
    """Make sure nothing of a finished run is left (the JVM of a killed
    Python would otherwise keep the Derby lock for a moment)."""
    left = _group_members(pgid)
    deadline = time.time() + timeout
    while left and time.time() < deadline:
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.2)
        left = _group_members(pgid)
    return left


def run_process(argv: list[str], env: dict[str, str], log_dir: Path, name: str,
                timeout: float = STAGE_TIMEOUT, on_poll: Callable[[], None] | None = None) -> dict[str, Any]:
    """Run argv in its own session; stdout/stderr to files; ``on_poll`` is
    called every 0.1 s while it runs (pause points)."""
    log_dir.mkdir(parents=True, exist_ok=True)
    out_p, err_p = log_dir / f"{name}.stdout", log_dir / f"{name}.stderr"
    t0, cpu0 = time.monotonic(), cpu_now()
    with open(out_p, "w") as out, open(err_p, "w") as err:
        proc = subprocess.Popen(argv, env=env, stdout=out, stderr=err, start_new_session=True, cwd=str(log_dir))
        try:
            while proc.poll() is None:
                if on_poll:
                    on_poll()
                if time.monotonic() - t0 > timeout:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                    raise TimeoutError(f"{name} did not finish in {timeout} s (log {err_p})")
                time.sleep(0.1)
        finally:
            left = reap_group(proc.pid)
    seconds = round(time.monotonic() - t0, 1)
    cpu1 = cpu_now()
    cpu = round(cpu1 - cpu0, 1) if cpu0 is not None and cpu1 is not None else None
    stdout = out_p.read_text()
    doc = None
    for line in reversed(stdout.splitlines()):
        if line.startswith("RESULT "):
            doc = json.loads(line[7:])
            break
    if doc is None and stdout.strip().startswith("{"):
        try:
            doc = json.loads(stdout)
        except ValueError:
            doc = None
    return {"name": name, "rc": proc.returncode, "killed": proc.returncode == -signal.SIGKILL, "seconds": seconds,
            "cpu_seconds": cpu, "doc": doc, "stderr": str(err_p), "stdout": str(out_p), "left_processes": left}


def stderr_tail(stage: dict[str, Any], n: int = 60) -> str:
    try:
        return "\n".join(Path(stage["stderr"]).read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return ""


def load_avg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


# ---------------------------------------------------------------- worlds


class World:
    """One filesystem, one Metastore, many tables, a fixed list of stages."""

    def __init__(self, work: Path, base_uri: str, kind: str, env: dict[str, str],
                 engine_args: list[str], setup_spec: dict[str, Any]):
        self.work = work
        self.base = base_uri
        self.kind = kind  # "file" or "hdfs"
        self.env = env
        confs = world_confs()
        self.engine_args = [*engine_args, *(a for k, v in confs.items() for a in ("--conf", f"{k}={v}"))]
        self.spec = dict(setup_spec, templates=f"{base_uri}/templates", tables=[], confs=confs)
        self.stages: dict[str, dict[str, Any]] = {}
        self.extras: dict[str, list[dict[str, Any]]] = {}
        self.cases: dict[str, dict[str, Any]] = {}  # table -> case description
        self.expect: dict[str, Any] = {}
        self.facts: dict[str, Any] = {}
        self.errors: list[str] = []
        self.writer: dict[str, Any] = {}
        self.notes: dict[str, Any] = {}
        self.load = {"start": load_avg()}
        self._template = 0
        self.started = time.monotonic()

    # -------------------------------------------------------------- tables
    def add(self, db: str, name: str, kind: str, **extra: Any) -> str:
        root = f"{self.base}/data/{db}/{name}"
        t = {"db": db, "name": name, "kind": kind, "root": root,
             "outside": f"{self.base}/outside/{db}/{name}/m=03" if kind == "outside" else None,
             "precompact": False, "append": [], "backdate": True, "fresh_units": [], "owner": None,
             "append_to_old": [], "cleaned": False, "batch": None}
        for k, v in extra.items():
            if k in t:
                t[k] = v
        self.spec["tables"].append(t)
        full = f"{db}.{name}"
        self.cases[full] = dict({k: v for k, v in extra.items() if k not in t}, kind=kind, table=full)
        return full

    def table_spec(self, full: str) -> dict[str, Any]:
        return next(t for t in self.spec["tables"] if f"{t['db']}.{t['name']}" == full)

    def unit_dir(self, full: str, unit: str) -> str:
        t = self.table_spec(full)
        return units_of(t["kind"], t["root"], t.get("outside"))["units"][unit]

    def next_template(self) -> int:
        self._template += 1
        return self._template  # 0 is left for appends made by setup

    # -------------------------------------------------------------- stages
    def engine(self, name: str, command: str, tables: list[str], env: dict[str, str] | None = None,
               extra: list[str] | None = None, on_poll: Callable[[], None] | None = None,
               flag: str = "--tables") -> dict[str, Any]:
        """One CLI run; ``flag="--table"`` for options that take one table (``--merge-from``)."""
        argv = [PY, str(APP), command, flag, ",".join(tables), *self.engine_args, *(extra or [])]
        full_env = dict(self.env)
        full_env.update(env or {})
        st = run_process(argv, full_env, self.work / "logs", name, on_poll=on_poll)
        st["tables"] = len(tables)
        st["results"] = {r["table"]: r for r in (st["doc"] or {}).get("tables", [])}
        self.stages[name] = st
        return st

    def app(self, name: str, script: str, *args: str) -> dict[str, Any]:
        st = run_process([PY, str(APPS / script), *args], self.env, self.work / "logs", name)
        self.stages[name] = st
        if st["rc"] != 0 or not st["doc"] or st["doc"].get("error"):
            raise RuntimeError(f"{name} failed (rc {st['rc']}):\n{(st['doc'] or {}).get('error') or stderr_tail(st)}")
        return st

    def setup(self) -> None:
        spec_p = self.work / "spec.json"
        spec_p.write_text(json.dumps(self.spec, indent=1))
        self.app("setup", "world_setup.py", str(spec_p), str(self.work / "expect.json"))
        self.expect = json.loads((self.work / "expect.json").read_text())

    def verify(self, only: list[str] | None = None, script: str = "world_verify.py") -> None:
        extras_p = self.work / "extras.json"
        extras_p.write_text(json.dumps(self.extras, indent=1))
        out = self.work / "facts.json"
        self.app("verify", script, str(self.work / "spec.json"), str(self.work / "expect.json"),
                 str(extras_p), str(out), ",".join(only or []))
        self.facts = json.loads(out.read_text())["tables"]
        self.load["end"] = load_avg()
        self.built_seconds = round(time.monotonic() - self.started, 1)

    def total_seconds(self) -> float:
        """Wall time of the world's processes (frozen once it is built)."""
        if getattr(self, "built_seconds", None) is not None:
            return self.built_seconds
        return round(time.monotonic() - self.started, 1)

    # -------------------------------------------------------------- pauses
    def pause_handler(self, actions: dict[str, Callable[[], None]], ignore: set[str] | frozenset[str] = frozenset(),
                      clear: bool = True) -> Callable[[], None]:
        """on_poll: run the action of every pause point reached, then resume.
        ``ignore``: pause points of an enclosing run (a handler started from
        another handler's action), left to that run's handler; ``clear``:
        remove stale pause files first (not inside an enclosing run)."""
        folder = self.work / "pause"
        folder.mkdir(exist_ok=True)
        if clear:
            for stale in list(folder.glob("*.paused")) + list(folder.glob("*.resume")):
                stale.unlink()
        done: set[str] = set(ignore)

        def poll() -> None:
            for p in folder.glob("*.paused"):
                tag = p.name[: -len(".paused")]
                if tag in done:
                    continue
                done.add(tag)
                try:
                    action = actions.get(tag)
                    if action is None:
                        self.errors.append(f"unexpected pause point {tag}")
                    else:
                        action()
                except Exception as exc:  # noqa: BLE001 - report, and resume anyway
                    self.errors.append(f"pause action {tag} failed: {exc!r}")
                (folder / f"{tag}.resume").write_text("go")
        return poll

    def pause_env(self, specs: list[str]) -> dict[str, str]:
        return {"LAKEKEEPER_PAUSE_AT": ";".join(specs), "LAKEKEEPER_PAUSE_DIR": str(self.work / "pause"),
                "LAKEKEEPER_PAUSE_TIMEOUT": "300"}

    def write_late(self, full: str, unit: str) -> Callable[[], None]:
        """A writer at a pause point: one new file in the unit's directory
        (created if it is missing at that moment), via a hidden temporary
        name and a rename, as pipelines do. file:// only."""
        def act() -> None:
            i = self.next_template()
            d = local(self.unit_dir(full, unit))
            os.makedirs(d, exist_ok=True)
            name = f"late-{uuid.uuid4().hex[:8]}.parquet"
            shutil.copyfile(local(self.expect["late_templates"][i]), os.path.join(d, f".{name}.tmp"))
            os.rename(os.path.join(d, f".{name}.tmp"), os.path.join(d, name))
            self.extras.setdefault(full, []).append({"unit": unit, "template": i, "path": os.path.join(d, name)})
        return act


def local(uri: str) -> str:
    assert uri.startswith("file:"), uri
    return "/" + uri[len("file:"):].lstrip("/")


def pause_tag(table: str, step: str) -> str:
    base, _sep, phase = step.partition(":")
    return f"{table}.{base}{'_after' if phase == 'after' else ''}".replace(":", "_")


# ---------------------------------------------------------------- the file world

BAD_INPUT = [
    # (variant, what it is, expected status, expected code or None)
    ("view", "a view", "refused", "view"),
    ("managed", "a managed table", "refused", "managed_table"),
    ("acid", "a transactional (ACID / insert-only) table", "refused", "transactional_table"),
    ("bucketed", "a bucketed external table", "refused", "bucketed_table"),
    ("sequencefile", "STORED AS SEQUENCEFILE", "refused", "unsupported_format"),
    ("json_datasource", "a JSON datasource table (USING json)", "refused", "unsupported_format"),
    ("hidden_partition_column", "partition column named _p", "refused", "hidden_partition_column"),
    ("missing_partition_dir", "a partition whose directory is gone", "not_needed", None),
    ("missing_table_dir", "the table directory is gone", "not_needed", None),
    ("nested_subdirectory", "a subdirectory inside the table directory", "skipped", None),
    ("text_file_first", "a text file in a parquet table (sorts first)", "failed", None),
    ("text_file_last", "a text file in a parquet table (sorts last)", "failed", None),
    ("corrupt_parquet", "a corrupt parquet file (PAR1 + garbage)", "failed", None),
    ("truncated_parquet", "a truncated parquet file", "failed", None),
    ("schema_mismatch", "a parquet file with another schema (id STRING)", "refused", "schema_drift"),
    ("empty_file", "a zero-byte file among parquet files", None, None),
    ("quote_in_location", "a location with a quote character", "refused", "unsafe_path"),
    ("unreachable_filesystem", "a location on an HDFS nobody runs", "failed", None),
]

# an error (an exception, not a crash) at every unit step, and at the first table step
RAISE_STEPS = [s for s in COMPACT_STEPS if not s.startswith("table:")] + ["table:creating_backup"]


def local_world(work: Path, *engine_args: str) -> World:
    """A world on file:// with an embedded Derby Metastore in ``work/state``
    (no fault or pause hooks inherited from the environment)."""
    work.mkdir(parents=True, exist_ok=True)
    state = work / "state"
    env = dict(os.environ)
    env.update(SPARK_LOCAL_IP="127.0.0.1", JAVA_TOOL_OPTIONS=QUICK_JAVA, PYTHONUNBUFFERED="1")
    env.pop("LAKEKEEPER_FAULT_AT", None)
    env.pop("LAKEKEEPER_PAUSE_AT", None)
    return World(work, f"file://{work}", "file", env,
                 ["--state-dir", str(state), "--master", "local[2]", "--conf", "spark.ui.enabled=false",
                  "--conf", "spark.sql.shuffle.partitions=2", *engine_args],
                 {"state_dir": str(state), "master": "local[2]"})


def build_file_world(work: Path) -> World:
    w = local_world(work, "--conf", "spark.hadoop.ipc.client.connect.max.retries=0",
                    "--conf", "spark.hadoop.ipc.client.connect.max.retries.on.timeouts=0")
    # crash matrix: every compaction step x three kinds, recovered by `recover`
    crash, kill_specs = [], []
    for step in COMPACT_STEPS:
        for kind in ("flat", "part", "outside"):
            t = w.add("cm", f"{kind}_{code(step)}", kind, step=step, group="crash", recover_by="recover",
                      expect=expected_units(kind, step))
            crash.append(t)
            kill_specs.append(hook(step, t, CRASH_UNIT[kind]))
    for step in BATCH_STEPS:  # the batch's own steps: its first unit's index names the batch
        t = w.add("cm", f"part_{code(step)}", "part", step=step, group="crash", recover_by="recover",
                  expect=expected_units("part", step))
        crash.append(t)
        kill_specs.append(hook(step, t, CRASH_UNIT["part"]))
    # the same crash, then a plain new compact run recovers automatically
    auto = []
    for kind, step in (("flat", "moving_in"), ("part", "verifying"), ("outside", "moving_aside:after")):
        t = w.add("ca", f"{kind}_{code(step)}", kind, step=step, group="auto", recover_by="compact",
                  expect={u: "fwd" for u in COMPACTED[kind]})
        auto.append(t)
        kill_specs.append(hook(step, t, CRASH_UNIT[kind]))
    # a writer adds a file during the swap, then the process dies before adopting it
    late, late_pause, late_actions = [], [], {}
    for name, pause, kill in (("adopt_then_crash", "moving_aside", "moving_in:after"),
                              ("recreated_then_crash", "moving_aside:after", "moving_in:after"),
                              ("recreated_crash_before_move_in", "moving_aside:after", "moving_in")):
        t = w.add("cl", name, "flat", step=kill, group="late_crash", recover_by="recover", pause=pause,
                  expect={"": "fwd"})
        late.append(t)
        late_pause.append(hook(pause, t, 0))
        kill_specs.append(hook(kill, t, 0))
        late_actions[pause_tag(t, pause)] = w.write_late(t, "")
    # rollback crashes (each table compacted by setup, then a file appended)
    rb = [w.add("cr", "append_no_crash", "flat", precompact=True, append=[{"unit": "", "template": 0}],
                group="rollback_append", expect={"": "back"})]
    rb_specs = []
    for step in ROLLBACK_STEPS:
        kinds = ("flat",) if step.startswith("table:") else ("flat", "part", "outside")
        for kind in kinds:
            t = w.add("cr", f"{kind}_{code(step)}", kind, step=step, group="rollback", recover_by="recover",
                      precompact=True, append=[{"unit": APPEND_UNIT[kind], "template": 0}],
                      expect={u: "back" for u in COMPACTED[kind]})
            rb.append(t)
            rb_specs.append(hook(step, t, ROLLBACK_UNIT[kind]))
    # errors (exceptions, not crashes) at every step
    errs, raise_specs = [], []
    for step in RAISE_STEPS:
        t = w.add("ce", f"flat_{code(step)}", "flat", step=step, group="raise",
                  expect={"": "fwd" if step in FORWARD_STEPS else "back"})
        errs.append(t)
        raise_specs.append(hook(step, t, 0, "raise"))
    t = w.add("ce", "part_moving_aside_after", "part", step="moving_aside:after", group="raise",
              expect={"dt=a": "fwd", "dt=c": "fwd"})
    errs.append(t)
    raise_specs.append(hook("moving_aside:after", t, 0, "raise"))
    # writers at exact moments (pause points) during a normal run
    writers, pause_specs, actions = [], [], {}
    for name, kind, pause, unit, outcome in (
            ("before_write", "flat", "writing_staging", "", "back"),
            ("before_check", "flat", "verifying", "", "back"),
            ("before_move_aside", "flat", "moving_aside", "", "fwd"),
            ("between_renames", "flat", "moving_aside:after", "", "fwd"),
            ("after_move_in", "flat", "moving_in:after", "", "fwd"),
            ("partition_between_renames", "part", "moving_aside:after", "dt=a", "fwd")):
        t = w.add("cw", name, kind, pause=pause, group="writer", unit=unit,
                  expect={u: (outcome if u == unit else "fwd") for u in COMPACTED[kind]})
        writers.append(t)
        pause_specs.append(hook(pause, t, COMPACTED[kind].index(unit)))
        actions[pause_tag(t, pause)] = w.write_late(t, unit)
    quiet = w.add("cq", "events", "quiet", fresh_units=["dt=new"], group="quiet",
                  expect={"dt=old": "fwd", "dt=new": "back"})
    owned = w.add("co", "owned", "flat", owner={"user": "nobody", "group": "nogroup", "dir_mode": 0o750,
                                                "file_mode": 0o640}, group="owner", expect={"": "fwd"})
    free = [w.add("cf", f"t{i}", kind, group="free_writer") for i, kind in enumerate(("flat", "flat", "part"))]
    # cleanup: a foreign file among the originals is kept (moved live); a crash is recovered first
    cleaned = [w.add("cx", "late_in_backup", "flat", precompact=True, append_to_old=[{"unit": "", "template": 1}],
                     cleaned=True, group="cleanup", expect={"": "fwd"}),
               w.add("cx", "crashed", "flat", cleaned=True, group="cleanup", step="moving_in", recover_by="cleanup",
                     expect={"": "fwd"})]
    kill_specs.append(hook("moving_in", cleaned[1], 0))
    # minor mode: the kept files moved by rename (killed, recovered by `recover` or a new compact; an
    # exception; a rollback killed; a cleanup of its backup)
    for step in MINOR_STEPS:
        t = w.add("cm", f"minor_{code(step)}", "minor", step=step, group="minor_crash", recover_by="recover",
                  expect=expected_units("minor", step))
        crash.append(t)
        kill_specs.append(hook(step, t, CRASH_UNIT["minor"]))
    for step in ("moving_kept", "moving_kept:after"):
        t = w.add("ca", f"minor_{code(step)}", "minor", step=step, group="minor_auto", recover_by="compact",
                  expect={"": "fwd"})
        auto.append(t)
        kill_specs.append(hook(step, t, CRASH_UNIT["minor"]))
        t = w.add("ce", f"minor_{code(step)}", "minor", step=step, group="minor_raise", expect={"": "back"})
        errs.append(t)
        raise_specs.append(hook(step, t, 0, "raise"))
    for step in MINOR_ROLLBACK_STEPS:
        t = w.add("cr", f"minor_{code(step)}", "minor", step=step, group="minor_rollback", recover_by="recover",
                  precompact=True, append=[{"unit": "", "template": 0}], expect={"": "back"})
        rb.append(t)
        rb_specs.append(hook(step, t, ROLLBACK_UNIT["minor"]))
    minor_cleaned = w.add("cx", "minor_cleaned", "minor", precompact=True, cleaned=True, group="minor_cleanup",
                          expect={"": "fwd"})
    bad = []
    for variant, _what, _status, _code in BAD_INPUT:
        bad.append(w.add("bi", variant, f"bad:{variant}", group="bad"))
    w.setup()
    for full, items in w.expect.get("appended_to_old", {}).items():
        w.extras.setdefault(full, []).extend(items)

    late_env = w.pause_env(late_pause)
    # (the quiet period: this run is a compact too; its other tables are older than that)
    w.engine("kill_compact", "compact", [quiet] + crash + auto + late + cleaned[1:],
             env=dict(late_env, LAKEKEEPER_FAULT_AT=";".join(kill_specs),
                      LAKEKEEPER_FAULT_RESULTS=str(work / "kill_compact.finished.json")),
             extra=["--quiet-period", "10m"], on_poll=w.pause_handler(late_actions))
    finished = work / "kill_compact.finished.json"
    if finished.exists():
        w.stages["kill_compact"]["results"] = {r["table"]: r for r in json.loads(finished.read_text())}
    w.engine("kill_rollback", "rollback", rb, env={"LAKEKEEPER_FAULT_AT": ";".join(rb_specs)})
    w.engine("recover", "recover", crash + late + rb[1:])
    w.engine("cleanup", "cleanup", cleaned + [minor_cleaned], extra=["--older-than", "all"])
    with free_writer(w, free, "compact"):
        w.engine("compact", "compact", free + auto + errs + writers + [owned] + ["nodb.t", "bi.nope"] + bad,
                 env=dict(w.pause_env(pause_specs), LAKEKEEPER_FAULT_AT=";".join(raise_specs)),
                 on_poll=w.pause_handler(actions))
    w.verify()
    return w


class free_writer:  # pylint: disable=invalid-name
    """Context manager: a separate writer process appends files to every
    compacted unit of ``tables`` while the block runs (no pause points:
    whatever the timing); what it wrote becomes those tables' extras."""

    def __init__(self, w: World, tables: list[str], stage: str):
        self.w, self.tables, self.stage = w, tables, stage

    def __enter__(self):
        w = self.w
        targets = []
        for t in self.tables:
            kind = w.table_spec(t)["kind"]
            for unit in COMPACTED[kind]:
                targets.append({"table": t, "unit": unit, "dir": local(w.unit_dir(t, unit))})
        self.cfg = {"targets": targets, "templates": [local(u) for u in w.expect["late_templates"]],
                    "interval": 1.5, "stop": str(w.work / "writer.stop"), "out": str(w.work / "writer.json")}
        cfg_p = w.work / "writer.cfg.json"
        cfg_p.write_text(json.dumps(self.cfg))
        self.proc = subprocess.Popen([PY, str(APPS / "writer.py"), str(cfg_p)], start_new_session=True)
        return self

    def __exit__(self, *exc):
        Path(self.cfg["stop"]).write_text("stop")
        self.proc.wait(timeout=60)
        written = json.loads(Path(self.cfg["out"]).read_text())
        self.w.writer = {"written": len(written["written"]), "failed_renames": written["failed"],
                         "stage": self.stage}
        for item in written["written"]:
            self.w.extras.setdefault(item["table"], []).append(item)
        return False


# ---------------------------------------------------------------- the HDFS world

HDFS_STEPS = ["moving_aside:after", "moving_in", "moving_in:after"]
HDFS_ROLLBACK = [("rollback_moved_compacted:after", k) for k in ("flat", "part", "outside")] + [
    ("rollback_restored:after", "flat")]
# minor mode's moves of the kept files by rename, on HDFS's rename: killed with the kept files moved into the
# staging (not swapped), between the swap's renames, after the move in; a rollback killed after each of its renames
HDFS_MINOR_STEPS = ["moving_kept:after", "moving_aside:after", "moving_in:after"]
HDFS_MINOR_ROLLBACK = ["rollback_moved_compacted:after", "rollback_restored:after"]


def hdfs_client_java(testbed) -> list[str]:
    from testbed.confs import JAVA17_OPENS

    jars = testbed.info["hadoop_jars"]
    return [testbed.info["java"], *JAVA17_OPENS, "-cp", f"{jars}/*"]


def build_hdfs_world(work: Path, testbed) -> World:
    from testbed.bed import _clean_env

    work.mkdir(parents=True, exist_ok=True)
    tag = uuid.uuid4().hex[:6]
    env = testbed.env(base=_clean_env())
    env.update(JAVA_TOOL_OPTIONS=QUICK_JAVA, PYTHONUNBUFFERED="1")
    w = World(work, f"{testbed.hdfs_uri}/crash-{tag}", "hdfs", env,
              ["--master", "local[2]", "--conf", "spark.ui.enabled=false", "--conf", "spark.sql.shuffle.partitions=2"],
              {"state_dir": None, "master": "local[2]"})
    crash, specs = [], []
    for step in HDFS_STEPS:
        for kind in ("flat", "part", "outside"):
            t = w.add(f"hcm_{tag}", f"{kind}_{code(step)}", kind, step=step, group="crash", recover_by="recover",
                      expect=expected_units(kind, step))
            crash.append(t)
            specs.append(hook(step, t, CRASH_UNIT[kind]))
    for step in HDFS_MINOR_STEPS:
        t = w.add(f"hcm_{tag}", f"minor_{code(step)}", "minor", step=step, group="crash", recover_by="recover",
                  expect=expected_units("minor", step))
        crash.append(t)
        specs.append(hook(step, t, CRASH_UNIT["minor"]))
    rb, rb_specs = [], []
    for step, kind in HDFS_ROLLBACK + [(step, "minor") for step in HDFS_MINOR_ROLLBACK]:
        t = w.add(f"hcr_{tag}", f"{kind}_{code(step)}", kind, step=step, group="rollback", recover_by="recover",
                  precompact=True, append=[{"unit": APPEND_UNIT[kind], "template": 0}],
                  expect={u: "back" for u in COMPACTED[kind]})
        rb.append(t)
        rb_specs.append(hook(step, t, ROLLBACK_UNIT[kind]))
    sec = f"hsec_{tag}"
    owned = w.add(sec, "owned", "flat", owner={"user": "alice", "group": "analysts", "dir_mode": 0o750,
                                               "file_mode": 0o640}, group="owner", expect={"": "fwd"})
    denied = w.add(sec, "denied", "bad:permission_denied", group="bad")
    quota = w.add(sec, "quota", "bad:quota", group="bad", root=f"{w.base}/data/{sec}_quota/quota")
    # one run per table: while a compaction of this table waits right before its swap (backup made),
    # a second compact and a cleanup of the same table run as separate processes (test_leases.py)
    leased = w.add(f"hls_{tag}", "pair", "flat", group="lease", expect={"": "fwd"})
    # ... and while a rollback of another table waits right before its first unit's swap, a compact and
    # a cleanup of that table find it locked too (the same two second runs, one process each, cover both)
    leased_rb = w.add(f"hls_{tag}", "rb_pair", "flat", group="lease_rb", precompact=True, expect={"": "back"})
    w.setup()
    w.engine("kill_compact", "compact", [owned] + crash, env={"LAKEKEEPER_FAULT_AT": ";".join(specs)})
    w.engine("kill_rollback", "rollback", rb, env={"LAKEKEEPER_FAULT_AT": ";".join(rb_specs)})
    w.engine("recover", "recover", crash + rb)
    # as user bob: a table of alice's (700); then a table whose directory gets
    # a space quota while the compacted copy is being written
    qinfo = w.expect["tables"][quota]
    java = hdfs_client_java(testbed)

    def set_quota() -> None:
        parent = w.table_spec(quota)["root"].rsplit("/", 1)[0]
        size = qinfo["quota"]["consumed"] + 3 * testbed.block_size // 2
        res = subprocess.run([*java, "org.apache.hadoop.hdfs.tools.DFSAdmin", "-fs", testbed.hdfs_uri,
                              "-setSpaceQuota", str(size), parent], capture_output=True, text=True, timeout=120,
                             env=_clean_env(), check=False)
        w.notes["setSpaceQuota"] = {"rc": res.returncode, "bytes": size, "out": (res.stdout + res.stderr)[-500:]}
        if res.returncode != 0:
            raise RuntimeError(res.stdout + res.stderr)
    w.engine("as_bob", "compact", [denied], env={"HADOOP_USER_NAME": "bob"})
    # (as root: the space pre-flight reads quotas of every ancestor up to /, which a plain user may not)

    def second_runs() -> None:  # both first runs wait before a swap: the compaction, then the rollback
        w.engine("lease_compact", "compact", [leased, leased_rb])
        w.engine("lease_cleanup", "cleanup", [leased, leased_rb], extra=["--older-than", "all"])
        w.engine("lease_rollback", "rollback", [leased])

    outer = pause_tag(leased, "moving_aside")

    def first_rollback() -> None:
        w.engine("lease_first_rollback", "rollback", [leased_rb],
                 env=dict(w.pause_env([hook("rolling_back", leased_rb, 0)]), LAKEKEEPER_PAUSE_TIMEOUT="1200"),
                 on_poll=w.pause_handler({pause_tag(leased_rb, "rolling_back"): second_runs}, ignore={outer},
                                         clear=False))
    # (the table of the lease pair rides along: this run is its first compaction)
    w.engine("quota", "compact", [quota, leased],
             env=dict(w.pause_env([hook("writing_staging", quota, 0), hook("moving_aside", leased, 0)]),
                      LAKEKEEPER_PAUSE_TIMEOUT="1200"),
             on_poll=w.pause_handler({pause_tag(quota, "writing_staging"): set_quota,
                                      outer: first_rollback}))
    w.verify()
    return w


LANE_KIND = "part"


def build_lane_world(work: Path) -> World:
    """The older-Spark lanes' crash matrix (scripts/spark-lanes): one table
    shape (a partitioned table, interrupted at its first unit) killed at every
    compaction step and every rollback step, recovered by ``recover``, checked
    by the same invariants as the full file world."""
    w = local_world(work)
    kind = LANE_KIND
    crash, specs = [], []
    for step in COMPACT_STEPS:
        t = w.add("lm", f"{kind}_{code(step)}", kind, step=step, group="crash", recover_by="recover",
                  expect=expected_units(kind, step))
        crash.append(t)
        specs.append(hook(step, t, CRASH_UNIT[kind]))
    rb, rb_specs = [], []
    for step in ROLLBACK_STEPS:
        t = w.add("lr", f"{kind}_{code(step)}", kind, step=step, group="rollback", recover_by="recover",
                  precompact=True, append=[{"unit": APPEND_UNIT[kind], "template": 0}],
                  expect={u: "back" for u in COMPACTED[kind]})
        rb.append(t)
        rb_specs.append(hook(step, t, ROLLBACK_UNIT[kind]))
    w.setup()
    w.engine("kill_compact", "compact", crash, env={"LAKEKEEPER_FAULT_AT": ";".join(specs)})
    w.engine("kill_rollback", "rollback", rb, env={"LAKEKEEPER_FAULT_AT": ";".join(rb_specs)})
    w.engine("recover", "recover", crash + rb)
    w.verify()
    return w


# ---------------------------------------------------------------- the merge world

# Merge mode (``compact --table t --merge-from <batch>``, one table a process): the batch
# (world_common.MERGE_BATCH) touches dt=a (unit 0) and dt=c (unit 1) of a "merge" table, not dt=b.
# (step, unit, recovered by): killed there, then `recover`, or a plain re-run of the merge (`compact`).
MERGE_KILLS = [
    ("verifying", 0, "recover"),  # the first partition staged, nothing swapped
    ("moving_aside:after", 0, "recover"),  # between the renames of the first partition
    ("moving_in:after", 1, "recover"),  # the second partition swapped in, its backup not repointed
    ("done", 0, "recover"),  # the first partition merged, the second untouched; re-run after `recover`
    ("merge_recording", None, "compact"),  # every partition swapped, the batch not recorded; a re-run recovers
]
# the partitions that end merged after the kill and the recovery (before any re-run)
MERGED_AFTER_KILL = {"verifying": [], "moving_aside:after": ["dt=a"], "moving_in:after": ["dt=a", "dt=c"],
                     "done": ["dt=a"], "merge_recording": ["dt=a", "dt=c"]}
MERGE_RERUN = ("done", "merge_recording")  # re-run with the same batch (one process each)


def merge_args(w: World, full: str) -> list[str]:
    return ["--merge-from", w.table_spec(full)["batch"], *MERGE_DEDUPE]


def build_merge_world(work: Path) -> World:
    """Tables of kind "merge", each with its batch (one setup process); one
    SIGKILLed merge per step of MERGE_KILLS; one `recover`; the re-runs of
    MERGE_RERUN (the one not given to `recover` recovers automatically);
    one verify process (apps/merge_verify.py)."""
    w = local_world(work)
    for step, unit, by in MERGE_KILLS:
        name = f"m_{code(step)}"
        merged = MERGED_AFTER_KILL[step] if step not in MERGE_RERUN else COMPACTED["merge"]
        w.add("mm", name, "merge", batch=f"{w.base}/batches/{name}", step=step, unit=unit, group="merge_crash",
              recover_by=by, recover_stage=f"rerun_{code(step)}" if by == "compact" else "recover",
              expect={u: "fwd" if u in merged else "back" for u in COMPACTED["merge"]})
    w.setup()
    for full, case in w.cases.items():
        w.engine(f"kill_{code(case['step'])}", "compact", [full], flag="--table", extra=merge_args(w, full),
                 env={"LAKEKEEPER_FAULT_AT": hook(case["step"], full, case["unit"])})
    w.engine("recover", "recover", [t for t, c in w.cases.items() if c["recover_by"] == "recover"])
    for full, case in w.cases.items():
        if case["step"] in MERGE_RERUN:
            w.engine(f"rerun_{code(case['step'])}", "compact", [full], flag="--table", extra=merge_args(w, full))
    w.verify(script="merge_verify.py")
    return w


# ---------------------------------------------------------------- reporting


def terminal(config, lines: list[str]) -> None:
    """Write to the terminal whatever pytest's capture setting is."""
    tr = config.pluginmanager.get_plugin("terminalreporter") if config else None
    capman = config.pluginmanager.get_plugin("capturemanager") if config else None
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


def save_json(name: str, doc: Any) -> Path:
    OUTPUT.mkdir(parents=True, exist_ok=True)
    p = OUTPUT / name
    p.write_text(json.dumps(doc, indent=1, sort_keys=True, default=str))
    return p


def table_lines(headers: list[str], rows: list[list[Any]]) -> list[str]:
    cells = [[str(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return [fmt.format(*headers), fmt.format(*("-" * w for w in widths))] + [fmt.format(*r) for r in cells]


def stage_lines(w: World) -> list[str]:
    rows = [[n, s.get("tables", ""), s["seconds"], "" if s.get("cpu_seconds") is None else s["cpu_seconds"],
             "SIGKILL" if s.get("killed") else s["rc"]] for n, s in w.stages.items() if "seconds" in s]
    return table_lines(["process", "tables", "seconds", "CPU s", "exit"], rows)


def units_outcome(facts: dict[str, Any]) -> str:
    units = facts.get("units", {})
    return " ".join(f"{(spec or 'table')}={'fwd' if u.get('state') == 'compacted' else 'back' if u.get('state') == 'original' else u.get('state')}"
                    for spec, u in units.items() if spec in _compacted_specs(facts))


def _compacted_specs(facts: dict[str, Any]) -> set[str]:
    return {s for k in COMPACTED.values() for s in k}


def crash_rows(w: World, groups: tuple[str, ...]) -> list[dict[str, Any]]:
    """One row per crash case: step, kind, kill, recovery actions and
    seconds, outcome per unit, problems."""
    rows = []
    for full, case in w.cases.items():
        if case.get("group") not in groups:
            continue
        f = w.facts.get(full, {})
        by = case.get("recover_by")
        rec_stage = w.stages.get(case.get("recover_stage") or (by if by in ("compact", "cleanup") else "recover"), {})
        res = rec_stage.get("results", {}).get(full, {})
        actions = res.get("recovered") if by in ("compact", "cleanup") else res.get("actions")
        outcome = {s: ("fwd" if u.get("state") == "compacted" else "back" if u.get("state") == "original"
                       else u.get("state")) for s, u in f.get("units", {}).items() if s in COMPACTED[case["kind"]]}
        rows.append({
            "table": full, "group": case["group"], "kind": case["kind"], "step": case.get("step"),
            "recover_by": case.get("recover_by"), "recovery_status": res.get("status"),
            "actions": [a.get("action") for a in (actions or [])],
            "recovery_seconds": res.get("seconds"), "outcome": outcome, "expected": case.get("expect"),
            "backups": len(f.get("backups", [])), "second_recovery": f.get("second_recovery"),
            "problems": f.get("problems", ["not verified"]),
        })
    return rows


def report(config, w: World, rows: list[dict[str, Any]], title: str, json_name: str) -> None:
    """The crash rows as a table on the terminal and as tests/output/<json_name>."""
    lines = [f"{title} ({len(rows)} cases; whole world {w.total_seconds()} s, "
             f"load average {w.load.get('start')} -> {w.load.get('end')})", *matrix_lines(rows)]
    terminal(config, lines)
    save_json(json_name, {"rows": rows, "stages": {k: {kk: vv for kk, vv in v.items() if kk != "results"}
                                                   for k, v in w.stages.items()},
                          "world_seconds": w.total_seconds(), "load": w.load, "errors": w.errors})


def failures(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows whose invariants failed or whose outcome is not the expected one."""
    return [r for r in rows if r["problems"] or r["outcome"] != r["expected"]]


def matrix_lines(rows: list[dict[str, Any]]) -> list[str]:
    def fmt_out(o: dict[str, str]) -> str:
        return " ".join(f"{k or 'table'}:{v}" for k, v in o.items())
    body = [[r["step"], r["kind"], r["recover_by"], r["recovery_status"], fmt_out(r["outcome"]),
             "ok" if r["outcome"] == r["expected"] else "EXPECTED " + fmt_out(r["expected"] or {}),
             r["backups"], r["recovery_seconds"], "ok" if not r["problems"] else "; ".join(r["problems"])[:80]]
            for r in rows]
    return table_lines(["step", "kind", "by", "recovery", "outcome (per unit)", "vs expected", "backups", "s",
                        "invariants"], body)
