"""The run journal: one hidden directory per table run, on the table's own
filesystem, with one small JSON file for the table and one per unit.

A step is recorded *before* it is performed; recovery then looks at the
filesystem to see whether the step happened. Files are replaced so that a
reader finds the previous or the new record, never a torn one
(``HadoopFS.replace_text``).
"""

from __future__ import annotations

import json
import os
import signal
import time
from typing import Any

from .fs import HadoopFS
from .planner import is_run_id

# Unit steps, in protocol order.
UNIT_STEPS = (
    "writing_staging",
    "verifying",
    "moving_aside",
    "moving_in",
    "repointing_backup",
    "done",
)
# Terminal unit states besides "done".
UNIT_ABORTED = "aborted"
UNIT_ROLLING_BACK = "rolling_back"
UNIT_ROLLED_BACK = "rolled_back"

TABLE_STEPS = ("planned", "creating_backup", "compacting", "finished")


def fault_point(step: str, when: str) -> None:
    """Test hook for the fault-injection harness: ``LAKEKEEPER_FAULT_AT=step``
    (or ``step:after``) kills this process with SIGKILL at that point, so
    tests can prove recovery from a crash at every step. Unset in production."""
    want = os.environ.get("LAKEKEEPER_FAULT_AT")
    if not want:
        return
    name, _, phase = want.partition(":")
    if name == step and (phase or "before") == when:
        os.kill(os.getpid(), signal.SIGKILL)


class Journal:
    def __init__(self, fs: HadoopFS, journal_dir: str, run_id: str):
        self.fs = fs
        self.dir = journal_dir.rstrip("/")
        self.run_id = run_id
        self.run_dir = f"{self.dir}/{run_id}"
        self._table: dict[str, Any] = {}

    # ------------------------------------------------------------ writing
    def start(self, doc: dict[str, Any]) -> None:
        self.fs.mkdirs(self.run_dir)
        self._table = dict(doc, run_id=self.run_id, step="planned", updated=time.time())
        self.fs.write_text(f"{self.run_dir}/table.json", json.dumps(self._table, indent=1, sort_keys=True))

    def table_step(self, step: str, **extra: Any) -> None:
        self._table.update(extra, step=step, updated=time.time())
        self.fs.replace_text(f"{self.run_dir}/table.json", json.dumps(self._table, indent=1, sort_keys=True))
        fault_point(f"table:{step}", "before")

    def unit_step(self, idx: int, step: str, **extra: Any) -> None:
        doc = {"index": idx, "step": step, "updated": time.time()}
        doc.update(extra)
        self.fs.replace_text(f"{self.run_dir}/unit-{idx:06d}.json", json.dumps(doc, sort_keys=True))
        fault_point(step, "before")

    # ------------------------------------------------------------ reading
    @staticmethod
    def run_ids(fs: HadoopFS, journal_dir: str) -> list[str]:
        return sorted(n for n, is_dir in fs.list_names(journal_dir) if is_dir and is_run_id(n))

    @staticmethod
    def load(fs: HadoopFS, journal_dir: str, run_id: str) -> tuple[dict[str, Any], dict[int, dict[str, Any]]]:
        run_dir = f"{journal_dir.rstrip('/')}/{run_id}"
        raw = fs.read_replaced(f"{run_dir}/table.json")
        table = json.loads(raw) if raw else {}
        units: dict[int, dict[str, Any]] = {}
        names = {n for n, is_dir in fs.list_names(run_dir) if not is_dir}
        for n in sorted(names):
            if n.startswith("unit-") and n.endswith(".json"):
                idx = int(n[5:11])
                text = fs.read_replaced(f"{run_dir}/{n}")
                if text:
                    units[idx] = json.loads(text)
            elif n.startswith("unit-") and ".json.new." in n:
                base = n.split(".new.")[0]
                if base not in names:
                    idx = int(base[5:11])
                    text = fs.read_replaced(f"{run_dir}/{base}")
                    if text:
                        units[idx] = json.loads(text)
        return table, units

    def remove(self) -> None:
        """Drop this run's records, and the journal directory once empty."""
        self.fs.delete(self.run_dir)
        if self.fs.exists(self.dir) and not self.fs.list_names(self.dir):
            self.fs.delete(self.dir)
