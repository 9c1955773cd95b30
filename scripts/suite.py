"""The whole test suite as measured parts (what ``scripts/test`` runs).

Every part is one process tree: a pytest session, an older-Spark lane, a
static check. Each runs in a cgroup of its own where the machine allows it
(cgroup v1 ``cpuacct`` or cgroup v2), so its CPU seconds count every process
it started, JVMs and daemons included; elsewhere they come from ``wait4``
(the processes it waited for). At the end a table gives each part's start,
end, wall and CPU seconds and its result, and the machine's busy share.

The two cores are the limit: the suite is CPU-bound from start to end, so
running more parts at once only time-shares the JVMs (timeouts, pause
points and memory all stretch). At most ``--slots`` parts run at once, the
longest and the ones that mostly wait first (``parts`` is in that order, from
the measured table): five, since three in-process Spark sessions (the engine,
the lanes) use about 0.6 of a core each while the test-bed sessions wait on
their processes (0.3 of a core) and the YARN and cancelled-job parts mostly
wait on YARN and on timers (0.2 and 0.3): five of them fill the two cores.
With four, the cancelled job waited for a slot until the YARN part ended and
the playbook scenarios ran alone for the last 340 s of a run; with three, the
two long waiting sessions held two slots and the engine and the oldest lane
ran one after the other in the third.

One test bed (HDFS, the Metastore service, Spark standalone of the main
line) is started once for the run and shared: the main line's test-bed
session uses it as it is; each older-Spark lane brings only its own Spark
master and worker against its HDFS and Metastore (``LAKEKEEPER_TESTBED_SHARED``,
tests/testbed/testbed/pytest_plugin.py).

    scripts/suite.py                 every part
    scripts/suite.py --list          the parts and their commands
    scripts/suite.py --only engine,lane-spark-3.3
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "testbed"))
sys.path.insert(0, str(ROOT / "scripts"))

import spark_lanes  # noqa: E402  pylint: disable=wrong-import-position
import ansible_lanes  # noqa: E402  pylint: disable=wrong-import-position

PY = sys.executable

# The JVMs a part starts outside spark-submit (spark-class with another main
# class: FsShell for a cluster-mode result, the YARN client's kill; the hdfs,
# yarn and hadoop commands; distcp's local job runner; small Java helpers)
# compile with C1 only and collect with the serial collector, like the drivers,
# which scripts/test already gives the same through SPARK_SUBMIT_OPTS (a
# driver's own command-line flags win over these). The test bed's daemons
# have options of their own. LAKEKEEPER_SUITE_JAVA_OPTIONS="" keeps the JVMs'
# defaults; the benchmark never runs under the suite.
QUICK_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m -XX:+UseSerialGC"  # code cache: scripts/test
PYTEST = [PY, "-m", "pytest", "--timeout=1800"]
# tests/unit runs once, under ``ansible-test units`` (the module and
# controller contexts a collection's unit tests are held to), not again here.
NOT_ENGINE = ["tests", "--ignore=tests/engine", "--ignore=tests/unit"]


@dataclasses.dataclass
class Part:
    name: str
    argv: list[str]
    bed: str = ""  # "" | "use" (the shared bed as it is) | "own-spark" (a lane: its own Spark on the shared bed)
    env: dict[str, str] = dataclasses.field(default_factory=dict)
    # filled in as it runs
    start: float = 0.0
    end: float = 0.0
    cpu: float | None = None
    rc: int | None = None
    log: str = ""
    summary: str = ""


# The playbook scenarios (tests/playbooks, and tests/e2e, whose lifecycle runs
# inside them) are a part of their own: a chain of ansible-playbook and driver
# processes that mostly waits, about 450 s of wall time beside the rest.
PLAYBOOKS = ["tests/playbooks", "tests/e2e"]
# The cancelled AWX job waits for its async limit and its guard's expiry (timers: about 330 of
# its 500 s): a part of its own, started with the first ones, so that its waiting overlaps them.
CANCEL = ["tests/playbooks/test_cancel.py"]
# The crash worlds outside the test bed (the file world: the crash matrix and the concurrent
# writers, about 200 CPU s) apart from the rest of the main line's integration tests, so that
# neither is a long part alone at the end; with tests/security, whose bad-input and ownership
# tests read the same world (in another part they built it a second time: 180 CPU s).
CRASH = ["tests/crash", "tests/security"]


# The test bed's newer services each get a test of their own (DistCp, HiveServer2 reading
# every table shape, YARN in client and cluster mode, erasure coding): a second part on the
# same shared bed, beside the first, so that neither holds the critical path alone.
TESTBED_2 = ["tests/testbed/test_distcp.py", "tests/testbed/test_hive_reader.py", "tests/testbed/test_erasure_coding.py"]
TESTBED_3 = ["tests/testbed/test_yarn_playbooks.py"]


def parts() -> list[Part]:
    """Every part, in the order slots are given (the longest and the ones that
    mostly wait first; wall and CPU seconds of the 2026-11-29 runs in the
    comments, measured among the others)."""
    lanes = [Part(f"lane-{lane['name']}", [PY, str(ROOT / "scripts" / "spark_lanes.py"), lane["name"]],
                  bed="own-spark") for lane in spark_lanes.lanes() if lane["default"]]
    not_bed = ["-m", "not crash_lane and not testbed"]
    out = [
        Part("engine", PYTEST + ["tests/engine", "--durations=15"]),  # 1,520 / 754
        Part("testbed", PYTEST + NOT_ENGINE + [f"--ignore={p}" for p in TESTBED_2 + TESTBED_3]  # 1,540 / 470
             + ["-m", "not crash_lane and testbed", "--durations=30"], bed="use"),
        *lanes[:1],  # the oldest line: 1,250 / 541
        # YARN through ansible-playbook: client and cluster lifecycles, a stopped and a killed run: 790 / 168
        Part("testbed-yarn", PYTEST + ["--timeout=3600"] + TESTBED_3 + ["-m", "not crash_lane and testbed", "--durations=15"], bed="use"),
        Part("cancel", PYTEST + CANCEL + not_bed + ["--durations=5"]),  # 500 / 167
        Part("playbooks", PYTEST + PLAYBOOKS + [f"--ignore={p}" for p in CANCEL]  # 475 / 446
             + not_bed + ["--durations=15"]),
        Part("crash", PYTEST + CRASH + not_bed + ["--durations=15"]),  # about 300 / 200
        Part("testbed-2", PYTEST + TESTBED_2 + ["-m", "not crash_lane and testbed", "--durations=15"], bed="use"),  # 536 / 165
        Part("main", PYTEST + NOT_ENGINE + [f"--ignore={p}" for p in PLAYBOOKS + CRASH]  # about 400 / 335
             + not_bed + ["--durations=30"]),
        *lanes[1:],  # 53 / 36
        *[Part(f"lane-{lane['name']}", [PY, str(ROOT / "scripts" / "ansible_lanes.py"), lane["name"]])
          for lane in ansible_lanes.lanes() if lane["default"]],
    ]
    out += [
        Part("sanity", [str(ROOT / "scripts" / "sanity")]),
        Part("units", [str(ROOT / "scripts" / "sanity"), "units"]),
        Part("lint", [str(ROOT / "scripts" / "lint")]),
        Part("ruff", [str(Path(PY).parent / "ruff"), "check", "."]),
    ]
    return out


# ------------------------------------------------------------------ CPU meters

class Cgroups:
    """One cgroup a part, under a parent for the run; None where none can be made."""

    def __init__(self) -> None:
        self.base: Path | None = None
        self.v2 = False
        for root, v2 in ((Path("/sys/fs/cgroup/cpuacct"), False), (Path("/sys/fs/cgroup/unified"), True),
                         (Path("/sys/fs/cgroup"), True)):
            if v2 and not (root / "cgroup.procs").exists():
                continue
            if not v2 and not (root / "cpuacct.usage").exists():
                continue
            base = root / f"lakekeeper-suite-{os.getpid()}"
            try:
                base.mkdir(exist_ok=True)
                probe = base / "probe"
                probe.mkdir(exist_ok=True)
                probe.rmdir()
            except OSError:
                continue
            self.base, self.v2 = base, v2
            break

    def make(self, name: str) -> Path | None:
        if self.base is None:
            return None
        d = self.base / name
        try:
            d.mkdir(exist_ok=True)
            return d
        except OSError:
            return None

    def cpu_seconds(self, group: Path | None) -> float | None:
        if group is None:
            return None
        try:
            if self.v2:
                for line in (group / "cpu.stat").read_text().splitlines():
                    if line.startswith("usage_usec "):
                        return int(line.split()[1]) / 1e6
                return None
            return int((group / "cpuacct.usage").read_text()) / 1e9
        except (OSError, ValueError):
            return None

    def cleanup(self) -> None:
        if self.base is None:
            return
        for d in sorted(self.base.glob("*"), reverse=True):
            try:
                d.rmdir()
            except OSError:
                pass
        try:
            self.base.rmdir()
        except OSError:
            pass


def busy_ticks() -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs since boot (/proc/stat)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields) - idle, sum(fields)


# ------------------------------------------------------------------ running

class Runner:
    def __init__(self, chosen: list[Part], slots: int, log_dir: Path) -> None:
        self.chosen = chosen
        self.slots = threading.Semaphore(slots)
        self.log_dir = log_dir
        self.groups = Cgroups()
        self.t0 = time.monotonic()
        self.bed = None
        self.bed_json = ""
        self.bed_ready = threading.Event()
        self.bed_error = ""
        self.bed_row: Part | None = None
        self._bed_group: Path | None = None
        self.print_lock = threading.Lock()

    def stamp(self) -> float:
        return time.monotonic() - self.t0

    def say(self, text: str) -> None:
        with self.print_lock:
            print(f"[suite {self.stamp():6.0f} s] {text}", flush=True)

    # -------------------------------------------------- the shared test bed
    def start_bed(self) -> None:
        from testbed.bed import Testbed  # pylint: disable=import-outside-toplevel
        row = Part("testbed start", [])
        self.bed_row = row
        group = self.groups.make("testbed-services")
        row.start = self.stamp()
        try:
            run_dir = Path(tempfile.mkdtemp(prefix="lakekeeper-suite-bed-"))
            # the services' daemons go to their own cgroup: their CPU over the run is a row of its own
            self._enter(group)
            try:
                self.bed = Testbed.start(run_dir, watchdog=True, hiveserver2=True)  # test_hive_reader.py
            finally:
                self._enter(self.groups.base)
            self.bed_json = str(self.bed.json_path)
            t = self.bed.info["timings"]
            row.summary = (f"up in {t['total_start_s']} s (" + ", ".join(f"{k} {v} s" for k, v in t["ready_after_s"].items())
                           + ")")
            row.rc = 0
        except Exception as e:  # noqa: BLE001 - reported, and every part that needs it fails
            self.bed_error = f"{type(e).__name__}: {e}"
            row.summary, row.rc = f"FAILED: {self.bed_error}"[:300], 1
        row.end = self.stamp()
        row.cpu = None  # the services' JVMs start in their own cgroup: their CPU is the services row
        self._bed_group = group
        self.say(f"test bed: {row.summary}")
        self.bed_ready.set()

    def stop_bed(self) -> Part | None:
        if self.bed is None:
            return None
        services = Part("testbed services", [])
        services.start, services.end = self.bed_row.start, self.stamp()
        notes = self.bed.stop()
        services.cpu = self.groups.cpu_seconds(self._bed_group)
        services.rc = 0
        services.summary = (f"{', '.join(self.bed.procs)} (Hadoop {self.bed.hadoop_version}) over the run" + (
            f"; {'; '.join(notes)}" if notes else ""))
        if all(p.rc == 0 for p in self.chosen):
            shutil.rmtree(self.bed.run_dir, ignore_errors=True)
        else:
            services.summary += f"; logs kept in {self.bed.log_dir}"
        return services

    def _enter(self, group: Path | None) -> None:
        """Move this process (so the children it starts next) into ``group``."""
        if group is None:
            return
        try:
            (group / "cgroup.procs").write_text(str(os.getpid()))
        except OSError:
            pass

    # -------------------------------------------------- one part
    def run_part(self, part: Part) -> None:
        with self.slots:
            env = dict(os.environ, **part.env)
            java_options = os.environ.get("LAKEKEEPER_SUITE_JAVA_OPTIONS", QUICK_JAVA_OPTIONS)
            if java_options and "JAVA_TOOL_OPTIONS" not in env:
                env["JAVA_TOOL_OPTIONS"] = java_options
            if part.bed:
                self.bed_ready.wait()
                if not self.bed_json:
                    part.rc, part.summary = 1, f"not run: the shared test bed did not start ({self.bed_error})"
                    part.start = part.end = self.stamp()
                    return
                key = "LAKEKEEPER_TESTBED_JSON" if part.bed == "use" else "LAKEKEEPER_TESTBED_SHARED"
                env[key] = self.bed_json
            group = self.groups.make(re.sub(r"[^\w.-]", "_", part.name))
            log_path = self.log_dir / f"{part.name}.log"
            part.start = self.stamp()
            self.say(f"start {part.name}: {' '.join(part.argv[1:] if part.argv[0] == PY else part.argv)}")

            argv = part.argv
            if group is not None:  # the shell joins the part's cgroup, then becomes the part
                argv = ["sh", "-c", 'echo $$ > "$0/cgroup.procs" 2>/dev/null; exec "$@"', str(group), *argv]
            with open(log_path, "w") as log:
                proc = subprocess.Popen(argv, cwd=str(ROOT), env=env, stdout=log,  # pylint: disable=consider-using-with
                                        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
                _pid, status, usage = os.wait4(proc.pid, 0)
                proc.returncode = os.waitstatus_to_exitcode(status)
            part.end = self.stamp()
            part.rc = proc.returncode
            part.cpu = self.groups.cpu_seconds(group)
            if part.cpu is None:
                part.cpu = usage.ru_utime + usage.ru_stime
            part.log = str(log_path)
            part.summary = result_line(log_path.read_text(errors="replace"))
            self.say(f"end {part.name}: exit {part.rc} after {part.end - part.start:.0f} s, "
                     f"{part.cpu:.0f} CPU s: {part.summary}")

    def run(self) -> int:
        busy0 = busy_ticks()
        threads = []
        if any(p.bed for p in self.chosen):
            threading.Thread(target=self.start_bed, daemon=True).start()
        else:
            self.bed_ready.set()
        for part in self.chosen:
            t = threading.Thread(target=self.run_part, args=(part,), daemon=True)
            t.start()
            threads.append(t)
            time.sleep(0.05)  # the semaphore is taken in PARTS order
        for t in threads:
            t.join()
        self.bed_ready.wait()
        services = self.stop_bed()
        busy1 = busy_ticks()
        wall = self.stamp()
        status = 0
        for part in self.chosen:
            with self.print_lock:
                print(f"\n========== {part.name} (exit {part.rc})", flush=True)
                if part.log:
                    sys.stdout.write(Path(part.log).read_text(errors="replace"))
                elif part.summary:
                    print(part.summary)
            if part.rc != 0:
                status = part.rc or 1
        rows = [r for r in (self.bed_row, services) if r is not None] + self.chosen
        share = (busy1[0] - busy0[0]) / max(1, busy1[1] - busy0[1])
        print_table(rows, wall, share, self.groups.base is not None)
        self.groups.cleanup()
        totals = count_results(self.chosen)
        if status != 0 and totals["failed"] == 0:
            totals["failed"] = 1  # a part that failed without a pytest count (a static check, a crash)
        tail = f"{totals['passed']} passed, {totals['failed']} failed"
        if totals["skipped"]:
            tail += f", {totals['skipped']} skipped"
        print(f"test suite finished in {wall:.0f} s with status {status}")
        print(f"suite: {tail}")
        return status


_RESULT = re.compile(r"^=*\s*(?P<body>(?:\d+ (?:passed|failed|skipped|deselected|error|errors|xfailed|xpassed|"
                     r"warnings?)(?:, )?)+).* in [\d.]+s", re.M)


def result_line(text: str) -> str:
    """The part's closing pytest line(s) (several for a lane), else its last line."""
    found = [m.group(0).strip("= ") for m in _RESULT.finditer(text)]
    if found:
        return "; ".join(found)
    lines = [x for x in text.splitlines() if x.strip()]
    return lines[-1][:200] if lines else "(no output)"


def count_results(chosen: list[Part]) -> dict[str, int]:
    totals = {"passed": 0, "failed": 0, "skipped": 0}
    for part in chosen:
        if not part.log:
            continue
        for m in _RESULT.finditer(Path(part.log).read_text(errors="replace")):
            for n, word in re.findall(r"(\d+) (passed|failed|skipped|errors?)", m.group("body")):
                totals["failed" if word.startswith("error") else word] += int(n)
    return totals


def print_table(rows: list[Part], wall: float, share: float, by_cgroup: bool) -> None:
    print("\n== where the time went (wall seconds from the start of the suite; CPU seconds of the part's "
          f"whole process tree, {'by cgroup' if by_cgroup else 'by wait4: waited-for processes only'})")
    print(f"{'part':<20} {'start':>6} {'end':>6} {'wall':>6} {'CPU':>7}  result")
    cpu_sum = 0.0
    for r in rows:
        cpu = "-" if r.cpu is None else f"{r.cpu:7.0f}"
        cpu_sum += r.cpu or 0.0
        print(f"{r.name:<20} {r.start:6.0f} {r.end:6.0f} {r.end - r.start:6.0f} {cpu:>7}  {r.summary}")
    cores = os.cpu_count() or 1
    print(f"{'total':<20} {0:6.0f} {wall:6.0f} {wall:6.0f} {cpu_sum:7.0f}  "
          f"{cores} cores {share * 100:.0f} % busy over the run "
          f"(CPU seconds available: {wall * cores:.0f})")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="scripts/suite.py", description=__doc__.splitlines()[0])
    ap.add_argument("--list", action="store_true", help="print the parts and their commands")
    ap.add_argument("--only", default="", help="comma-separated part names")
    ap.add_argument("--slots", type=int, default=int(os.environ.get("LAKEKEEPER_SUITE_SLOTS", "5")),
                    help="parts running at once (default 5)")
    args = ap.parse_args(argv)
    every = parts()
    if args.list:
        for p in every:
            print(f"{p.name}{' [shared test bed]' if p.bed else ''}: {' '.join(p.argv)}")
        return 0
    chosen = every
    if args.only:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = sorted(set(names) - {p.name for p in every})
        if unknown:
            print(f"suite: unknown part(s) {', '.join(unknown)}; see --list", file=sys.stderr)
            return 2
        chosen = [p for p in every if p.name in names]
    log_dir = Path(tempfile.mkdtemp(prefix="lakekeeper-suite-"))
    return Runner(chosen, args.slots, log_dir).run()


if __name__ == "__main__":
    sys.exit(main())
