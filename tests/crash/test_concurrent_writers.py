"""Writers are never stopped for a compaction: no row they write may be lost.

* At exact moments (LAKEKEEPER_PAUSE_AT): a file added before the write or
  before the re-check makes the unit fail with ``concurrent_write`` (staging
  removed, original and the new file kept); added just before the move
  aside, between the two renames (the directory re-created, as Hive and
  Spark do for a missing partition) or after the move in, it ends up in the
  compacted table.
* Whatever the timing: a separate writer process appends files to every
  compacted unit of three tables while a compact run goes.
* Rollback after files were appended to the compacted table keeps them.
* ``--quiet-period``: a partition with a file younger than that is skipped.
Every table's rows are then the original rows plus every file written
(exceptAll both ways, see apps/world_verify.py).
"""
from __future__ import annotations

import pytest

import world as W

pytestmark = [pytest.mark.integration, pytest.mark.timeout(5400)]


def _unit_result(res, unit):
    return next(p for p in res["partitions"] if p["spec"] == unit)


def test_writer_at_exact_moments(file_world, request):
    w = file_world
    rows = W.crash_rows(w, ("writer",))
    results = w.stages["compact"]["results"]
    lines = []
    for r in rows:
        case = w.cases[r["table"]]
        part = _unit_result(results[r["table"]], case["unit"])
        r["unit_status"], r["code"], r["late_files"] = part["status"], part.get("code"), part.get("late_files")
        lines.append([case["pause"], r["kind"], part["status"], part.get("code") or "",
                      ",".join(part.get("late_files") or []) or "-", W.units_outcome(w.facts.get(r["table"], {})),
                      (w.facts.get(r["table"], {}).get("rows") or {}).get("count"),
                      "ok" if not r["problems"] else "; ".join(r["problems"])[:80]])
    W.terminal(request.config, ["a writer adds one file at a pause point during `compact`",
                                *W.table_lines(["pause at", "kind", "unit status", "code", "adopted",
                                                "outcome", "rows", "invariants"], lines)])
    W.save_json("concurrent-writers-pause.json", rows)
    for r in rows:
        assert len(w.extras.get(r["table"], [])) == 1, f"the writer did not run for {r['table']}"
        if w.cases[r["table"]]["pause"] in ("writing_staging", "verifying"):
            assert (r["unit_status"], r["code"]) == ("failed", "concurrent_write"), r
        else:
            assert r["unit_status"] == "compacted", r
        if w.cases[r["table"]]["pause"] in ("moving_aside", "moving_aside:after"):
            assert r["late_files"], r  # moved from the original directory into the compacted one
        assert r["outcome"] == r["expected"] and not r["problems"], r
    assert not w.errors, w.errors


def test_free_running_writer_loses_nothing(file_world, request):
    w = file_world
    st = w.stages[w.writer["stage"]]
    lines, failures = [], []
    for full, case in w.cases.items():
        if case["group"] != "free_writer":
            continue
        res = st["results"].get(full, {})
        f = w.facts.get(full, {})
        written = len(w.extras.get(full, []))
        rows = f.get("rows") or {}
        per_unit = {p["spec"] or "table": (p["status"], p.get("code"), len(p.get("late_files") or []))
                    for p in res.get("partitions", []) if p["status"] not in ("skipped", "not_needed")}
        lines.append([full, res.get("status"), per_unit, written, rows.get("count"), rows.get("expected"),
                      "ok" if not f.get("problems") else "; ".join(f["problems"])[:90]])
        if f.get("problems") or res.get("status") not in ("compacted", "failed"):
            failures.append((full, res.get("status"), res.get("reason"), f.get("problems")))
        for p in res.get("partitions", []):
            if p["status"] == "failed":
                assert p.get("code") == "concurrent_write", p
    W.terminal(request.config, [f"free-running writer during `compact`: {w.writer}",
                                *W.table_lines(["table", "status", "units (status, code, adopted)",
                                                "files written", "rows", "expected", "invariants"], lines)])
    W.save_json("concurrent-writers-free.json", {"writer": w.writer, "rows": lines})
    assert w.writer.get("written", 0) > 0, w.writer
    assert not failures, failures


def test_rollback_keeps_files_appended_after_the_compaction(file_world):
    w = file_world
    full = "cr.append_no_crash"
    f = w.facts[full]
    assert w.expect["appended"][full], "setup appended nothing"
    assert f["units"][""]["state"] == "original" and f["units"][""]["missing_extras"] == 0, f
    assert not f["backups"] and not f["problems"], f


def test_quiet_period_skips_partitions_with_recent_files(file_world):
    w = file_world
    res = w.stages["kill_compact"]["results"]["cq.events"]  # a compact run with --quiet-period 10m
    by = {p["spec"]: p for p in res["partitions"]}
    assert by["dt=old"]["status"] == "compacted", by["dt=old"]
    assert by["dt=new"]["status"] == "skipped", by["dt=new"]
    assert "quiet period" in by["dt=new"]["reason"], by["dt=new"]
    f = w.facts["cq.events"]
    assert f["units"]["dt=new"]["state"] == "original" and f["units"]["dt=old"]["state"] == "compacted", f
    assert not f["problems"], f["problems"]
