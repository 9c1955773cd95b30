# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Issue 48 item 2, "Mixed fleets do not turn the job red": compact.yml run
for real with ``ansible-playbook`` (the embedded default: local Spark, Derby
Metastore in a state dir) over a table list named explicitly that mixes a
table to compact, one that needs nothing and the tables Lakekeeper must
leave alone, as Hive, Spark and a replication tool leave them (MANAGED,
Hive ACID, excluded by ``lakekeeper.exclude``, a replica with
``repl.last.id``, a Parquet table whose owner asks for a Z-order with
``lakekeeper.sort_by=zorder(a, b)`` (issue 50 item 4) and an Avro one that
asks for the same; tests/e2e/create_tables.py ``mixed:``):

* by default the job is green (rc 0): the table is compacted, the others are
  reported with their own status (docs/statuses.md) - ``not_needed``, and
  ``refused`` with their code - in the summary and the set_stats totals, a
  warning per refused table, nothing of them touched;
  with ``lakekeeper_order=files-desc`` (issue 50 item 3) the order reaches
  the engine and the summary says it of the table compacted; a refused
  connection injected as the table's copy is verified (issue 50 item 2,
  ``lakekeeper_retries=1``) is tried again and the table still compacted;
  the Z-ordered table's files (their own Parquet footers) cover narrower
  ranges of both columns than its small files did, its summary says
  ``sort: zorder``, the Avro table is refused (``unsupported_format``);
  with ``lakekeeper_max_file_size_mb=512`` (issue 50 item 1) the bound reaches
  the engine, and a partitioned table whose owner set ``lakekeeper.mode=minor``
  and ``lakekeeper.max_file_size_mb`` has its two large files split into files
  within the bound, its two files in the band kept byte for byte, every row
  kept (read with pyarrow), and is not split again by the strict run;
  the Z-ordered table also names its Amoro optimizer group, mapped by
  ``lakekeeper_queues`` to a YARN queue (issue 50 item 5): it is compacted by
  an application of its own in that queue (on local master the queue is only
  recorded), the other in the run's own, and the summary lists both with
  their queues; with ``lakekeeper_verify=sample`` each table's one partition
  is the sample (issue 49), and the quota it sets is reported as not read;
* with ``lakekeeper_fail_on_refused=true`` (and lakekeeper's own backup table
  named too) the same list fails the job, still saying what each table is.

Then, on database ``pl`` (``create_tables.py pipeline:``, made by the same
JVM), issue 50 items 6 and 8 (docs/reconcile.md): a table as its pipelines
leave it beside a tidy one, analyzed by ``lakekeeper_analyze`` (its
``reconcile`` and ``sources``, and the report role's HTML), the killed run's
staging copy listed by ``lakekeeper_cleanup`` with ``orphans`` in check mode
(one playbook run, two engine runs), then removed by cleanup.yml with
``lakekeeper_orphans=true`` - and nothing else touched.

Four playbook runs, six JVMs in all (the tables, two analyses, one
compaction, an analysis, two cleanups); each run checks many things.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from test_playbooks import CREATE_TABLES, PLAYBOOKS, TIMINGS, data_files, listing, run_playbook  # pylint: disable=import-error

MIXED = ["e2e.events", "mx.single", "mx.excluded", "mx.replica", "mx.managed", "mx.acid", "mx.zorder", "mx.zavro",
         "mx.bigfile"]
KB = 1024


def _parts(top):
    """{partition dir: {file: (size, sha256)}} of a partitioned table's visible data files."""
    import hashlib  # pylint: disable=import-outside-toplevel

    out = {}
    for d in sorted(os.listdir(top)):
        if d.startswith((".", "_")):
            continue
        out[d] = {}
        for f in data_files(os.path.join(top, d)):
            with open(os.path.join(top, d, f), "rb") as fh:
                data = fh.read()
            out[d][f] = (len(data), hashlib.sha256(data).hexdigest())
    return out


def _ids(top):
    """Every (dt, id, payload) row of the table's files, read with pyarrow (no JVM)."""
    import pyarrow.parquet as pq  # pylint: disable=import-outside-toplevel

    rows = []
    for d, files in _parts(top).items():
        for f in files:
            t = pq.read_table(os.path.join(top, d, f))
            rows += [(d, i, p) for i, p in zip(t.column("id").to_pylist(), t.column("payload").to_pylist())]
    return sorted(rows)


def _footer_ranges(path):
    """Each data file's max - min of columns a and b, from its Parquet footer."""
    import pyarrow.parquet as pq  # pylint: disable=import-outside-toplevel

    out = []
    for f in sorted(data_files(path)):
        meta = pq.ParquetFile(os.path.join(path, f)).metadata
        span = []
        for col in ("a", "b"):
            idx = meta.schema.names.index(col)
            stats = [meta.row_group(g).column(idx).statistics for g in range(meta.num_row_groups)]
            span.append(max(st.max for st in stats) - min(st.min for st in stats))
        out.append(tuple(span))
    return out


@pytest.mark.e2e
def test_a_mixed_list_is_green_with_refusals_reported_and_red_on_request(collections_dir, tmp_path):
    state_dir, data_dir = tmp_path / "state", tmp_path / "data"
    started = time.time()
    res = subprocess.run([sys.executable, CREATE_TABLES, str(state_dir), str(data_dir), "mixed:mx", "pipeline:pl"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900, check=False,
                         env=dict(os.environ, SPARK_LOCAL_IP="127.0.0.1"))
    assert res.returncode == 0, res.stdout[-5000:]
    made = json.loads(res.stdout.strip().splitlines()[-1])["more"]["pl"]
    TIMINGS.append("create_tables.py mixed: %.0fs" % (time.time() - started))
    inventory = tmp_path / "inventory.json"
    inventory.write_text(json.dumps({"all": {
        "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable},
        "children": {"lakekeeper_edge": {"hosts": {"edge": {
            "lakekeeper_state_dir": str(state_dir),
            "lakekeeper_app_cache_dir": str(tmp_path / "app-cache"),
            "lakekeeper_run_record_dir": str(tmp_path / "runs"),  # not the shared ~/.lakekeeper/runs
            "lakekeeper_spark_submit": {"master": "local[2]", "extra_conf": {
                "spark.sql.shuffle.partitions": "4", "spark.ui.showConsoleProgress": "false"}},
            "lakekeeper_environment": {"SPARK_LOCAL_IP": "127.0.0.1"},
            "lakekeeper_pause_ingestion": False}}},  # no ingestion hosts here
            "mixed": {"hosts": {"edge": {}}, "vars": {"lakekeeper_cluster": "mixed"}}}}}))
    untouched = {t: data_files(str(data_dir / "mx" / t)) for t in ("single", "excluded", "replica")}
    untouched["zavro"] = listing(str(data_dir / "mx" / "zavro"))  # Avro: no .parquet names
    assert [len(untouched[t]) for t in ("single", "excluded", "replica", "zavro")] == [1, 20, 20, 5], untouched
    small = _footer_ranges(str(data_dir / "mx" / "zorder"))
    assert len(small) == 30, small
    # issue 50 item 1: 12 fragments, 2 files in the band (48 KB .. 192 KB) and one above it; a lone large file
    bigfile = str(data_dir / "mx" / "bigfile")
    big_before, big_rows = _parts(bigfile), _ids(bigfile)
    sizes = sorted(s for s, _h in big_before["dt=mixed"].values())
    assert len(sizes) == 15 and sizes[11] < 8 * KB and 48 * KB <= sizes[12] <= sizes[13] <= 192 * KB < sizes[14], sizes
    assert [s for s, _h in big_before["dt=single"].values()][0] > 192 * KB, big_before["dt=single"]
    in_band = {f: v for f, v in big_before["dt=mixed"].items() if 48 * KB <= v[0] <= 192 * KB}
    assert len(in_band) == 2 and len(big_rows) == 9544, in_band

    # -- the mixed list, named explicitly (an AWX survey's string), the most files first: green -----------
    # (issue 50 item 2: a genuine refused connection - java.net.ConnectException from the driver's JVM, the
    # engine's =transient fault - as e2e.events' copy is verified: settled, tried again, compacted)
    fault = {"SPARK_LOCAL_IP": "127.0.0.1", "LAKEKEEPER_FAULT_AT": "verifying@e2e.events#0=transient"}
    run = run_playbook(os.path.join(PLAYBOOKS, "compact.yml"), inventory, collections_dir, tmp_path,
                       [json.dumps({"lakekeeper_tables": ", ".join(MIXED), "lakekeeper_order": "files-desc",
                                    "lakekeeper_environment": fault, "lakekeeper_retries": 1,
                                    "lakekeeper_max_file_size_mb": 512,
                                    "lakekeeper_queues": {"nightly": "root.etl.nightly"},
                                    "lakekeeper_verify": "sample", "lakekeeper_verify_sample": 0.5})])
    assert run.rc == 0, run
    s = run.summary("edge")
    assert s["ok"] and not s["error"], s
    # one application a YARN queue (lakekeeper_queues -> maintenance_queues -> queues -> --queues; the table's
    # self-optimizing.group=nightly): the run's own (default queue) analyzed and compacted e2e.events (and
    # refused mx.zavro, whose zorder the analysis cannot judge, and compacted mx.bigfile), a second in
    # root.etl.nightly compacted mx.zorder
    apps = [(a["queue"], a["what"], sorted(a["tables"])) for a in s["application_list"]]
    expected = [("", "analysis and compaction", ["e2e.events", "mx.bigfile", "mx.zavro"]),
                ("root.etl.nightly", "compaction", ["mx.zorder"])]
    assert s["applications"] == 2 and apps == expected, s["application_list"]
    assert "in queue root.etl.nightly: compaction of mx.zorder" in run.output, run
    # verify sample (lakekeeper_verify[_sample] -> ... -> --verify sample --verify-sample 0.5): one unit of each
    # (mx.bigfile: one of its two partitions)
    sampled = {t["table"]: t.get("verify_sample") for t in s["tables"] if t["status"] == "compacted"}
    assert sampled["e2e.events"] == sampled["mx.zorder"] == [""], s["tables"]
    assert len(sampled["mx.bigfile"]) == 1 and sampled["mx.bigfile"][0] in ("dt=mixed", "dt=single"), sampled
    # the retry reached the module's result and the summary (lakekeeper_retries -> maintenance_retries -> retries)
    retried = {t["table"]: (t.get("retries"), t.get("retry_causes")) for t in s["tables"] if t.get("retries")}
    assert retried == {"e2e.events": (1, {"namenode": 1})}, s["tables"]
    got = {t["table"]: (t["status"], t.get("code")) for t in s["tables"]}
    assert got == {"e2e.events": ("compacted", None), "mx.single": ("not_needed", None),
                   "mx.excluded": ("refused", "excluded"), "mx.replica": ("refused", "replicated"),
                   "mx.managed": ("refused", "managed_table"), "mx.acid": ("refused", "transactional_table"),
                   "mx.zorder": ("compacted", None), "mx.zavro": ("refused", "unsupported_format"),
                   "mx.bigfile": ("compacted", None)}, got
    # the owner's Z-order (lakekeeper.sort_by=zorder(a, b)): a few files covering, on average, a far narrower
    # range of a and of b than the narrowest small file did (each of those spans nearly the whole range of both;
    # a file whose z-range crosses a quadrant's edge still spans one column's range, hence the mean)
    tables = {t["table"]: t for t in s["tables"]}
    assert tables["mx.zorder"]["sort"] == {"strategy": "zorder", "columns": ["a", "b"]}, tables["mx.zorder"]
    zfiles = _footer_ranges(str(data_dir / "mx" / "zorder"))
    assert 2 <= len(zfiles) == tables["mx.zorder"]["files_after"] < 30, zfiles
    for col in (0, 1):
        assert sum(z[col] for z in zfiles) / len(zfiles) < 0.7 * min(f[col] for f in small), (col, zfiles, small)
    assert "zorder(...) is supported for parquet and orc tables, not avro" in tables["mx.zavro"]["reason"], tables
    # the split bound: the run's (lakekeeper_max_file_size_mb -> maintenance_max_file_size_mb -> max_file_size_mb ->
    # --max-file-size-mb) on e2e.events, the table's own lakekeeper.max_file_size_mb on mx.bigfile, which split its
    # two large files (minor mode: the fragments rewritten with them, the two files in the band kept byte for byte)
    assert (tables["e2e.events"]["max_file_size_mb"], tables["e2e.events"]["files_split"]) == (512, 0), tables
    assert (tables["mx.bigfile"]["max_file_size_mb"], tables["mx.bigfile"]["files_split"]) == (0.1875, 2), tables
    big_after = _parts(bigfile)
    assert all(big_after["dt=mixed"][f] == v for f, v in in_band.items()), (in_band, big_after)
    for part, got_files in big_after.items():
        written = [s for f, (s, _h) in got_files.items() if f not in in_band]
        assert len(written) >= 2 and max(written) <= 192 * KB, (part, written)  # split, about the target each
    assert _ids(bigfile) == big_rows
    assert {t["table"]: t.get("order") for t in s["tables"]}["e2e.events"] == "files-desc", s["tables"]
    reasons = {t["table"]: t["reason"] for t in s["tables"]}
    assert "lakekeeper.exclude" in reasons["mx.excluded"] and "repl.last.id=4711" in reasons["mx.replica"], reasons
    assert "MANAGED" in reasons["mx.managed"] and "transactional" in reasons["mx.acid"], reasons
    # set_stats, as AWX shows them: the statuses counted apart, none of them a failure
    stats = {k: run.stats["lakekeeper_tables_%s" % k]
             for k in ("compacted", "not_needed", "skipped", "refused", "failed")}
    assert stats == {"compacted": 3, "not_needed": 1, "skipped": 0, "refused": 5, "failed": 0}, run.stats
    assert run.stats["lakekeeper_hosts_failed"] == 0, run.stats
    assert sorted(run.stats["lakekeeper_refused_tables"]) == [
        "edge:mx.acid", "edge:mx.excluded", "edge:mx.managed", "edge:mx.replica", "edge:mx.zavro"], run.stats
    assert "compact on edge (cluster mixed): 3 compacted, 1 not needed, 0 skipped, 5 refused, 0 failed" in run.output, run
    assert "mx.managed was refused (managed_table)" in run.output, run  # the module's warning
    assert run.recap["edge"]["failed"] == 0, run
    assert len(data_files(str(data_dir / "events"))) == 1
    assert {t: (listing if t == "zavro" else data_files)(str(data_dir / "mx" / t)) for t in untouched} == untouched
    backups = sorted(b.split(":", 1)[1] for b in run.stats["lakekeeper_backup_tables"])
    assert len(backups) == 3 and backups[1].startswith("mx.__bkp_bigfile_"), backups
    assert backups[2].startswith("mx.__bkp_zorder_"), backups
    backup = backups[0]
    assert backup.startswith("e2e.__bkp_events_"), backup

    # -- the same list and the backup table, strict: red, and still says what each table is ---------------
    run = run_playbook(os.path.join(PLAYBOOKS, "compact.yml"), inventory, collections_dir, tmp_path,
                       ["lakekeeper_tables=%s" % ",".join([t for t in MIXED if t != "mx.zavro"] + [backup]),
                        "lakekeeper_fail_on_refused=true"])
    assert run.rc != 0 and run.recap["edge"]["failed"] == 1, run
    s = run.summary("edge")
    assert not s["ok"] and run.stats["lakekeeper_hosts_failed"] == 1, run.stats
    got = {t["table"]: (t["status"], t.get("code")) for t in s["tables"]}
    assert got == {"e2e.events": ("not_needed", None), "mx.single": ("not_needed", None),
                   "mx.excluded": ("refused", "excluded"), "mx.replica": ("refused", "replicated"),
                   "mx.managed": ("refused", "managed_table"), "mx.acid": ("refused", "transactional_table"),
                   "mx.zorder": ("not_needed", None), backup: ("refused", "backup_table"),
                   "mx.bigfile": ("not_needed", None)}, got  # split once: the files written are within the bound
    assert run.stats["lakekeeper_tables_refused"] == 5 and run.stats["lakekeeper_tables_failed"] == 0, run.stats
    assert "mx.managed: refused: " in s["error"] and "lakekeeper analyze failed (rc=1)" in s["error"], s["error"]
    assert {t: (listing if t == "zavro" else data_files)(str(data_dir / "mx" / t)) for t in untouched} == untouched

    pipelines(inventory, collections_dir, tmp_path, state_dir, made)


RECONCILE_PLAY = """
- name: Analyze a table as its pipelines leave it, report it, and list its orphans
  hosts: lakekeeper_edge
  gather_facts: false
  module_defaults:
    group/lakekeeper.hive.lakekeeper:
      state_dir: {state_dir}
      app_cache_dir: {app_cache}
      spark_submit: {{master: "local[2]", extra_conf: {{spark.sql.shuffle.partitions: "4",
                     spark.ui.showConsoleProgress: "false"}}}}
      environment: {{SPARK_LOCAL_IP: 127.0.0.1}}
  tasks:
    - name: Analyze
      lakekeeper.hive.lakekeeper_analyze:
        database: pl
      register: analysis

    - name: Report
      ansible.builtin.include_role:
        name: lakekeeper.hive.report
      vars:
        report_tables: "{{{{ analysis.tables }}}}"
        report_dir: {reports}
        report_cluster: pl

    - name: The orphans a cleanup would remove (check mode)
      lakekeeper.hive.lakekeeper_cleanup:
        database: pl
        orphans: true
      check_mode: true
      register: dry

    - name: Keep both results
      ansible.builtin.copy:
        content: "{{{{ {{'analysis': analysis, 'dry': dry}} | to_json }}}}"
        dest: {results}
        mode: "0600"
      delegate_to: localhost
"""


def pipelines(inventory, collections_dir, tmp_path, state_dir, made):
    """Issue 50 items 6 and 8 on database pl (create_tables.py ``pipeline:``): each reconcile finding and
    each writer of the messy table where it is there, none on the tidy one; the killed run's staging copy
    removed by cleanup.yml with lakekeeper_orphans, the rest (someone's data) untouched."""
    messy, tidy = made["messy"], made["tidy"]
    loc = messy["location"]
    play = tmp_path / "reconcile.yml"
    results = tmp_path / "reconcile.json"
    play.write_text(RECONCILE_PLAY.format(state_dir=state_dir, app_cache=tmp_path / "app-cache",
                                          reports=tmp_path / "pl-reports", results=results))
    before = listing_of(loc)
    run = run_playbook(str(play), inventory, collections_dir, tmp_path)
    assert run.rc == 0, run
    got = json.loads(results.read_text())
    by = {t["table"]: t for t in got["analysis"]["tables"]}
    rec, clean = by["pl.messy"]["reconcile"], by["pl.tidy"]["reconcile"]
    q = by["pl.messy"]["location"].rstrip("/")
    # each check fires on the messy table ...
    assert [(d["path"], d["looks_like_partition"], d["files"], d["bytes"]) for d in rec["unregistered_dirs"]] == [
        (q + "/dt=2026-11-03", True, 1, messy["sample_bytes"])], rec
    assert [m["spec"] for m in rec["missing_dirs"]] == ["dt=2026-10-31"], rec
    assert rec["root_files"]["names"] == ["000000_0"] and rec["root_files"]["bytes"] == messy["sample_bytes"], rec
    (stale,) = rec["stale"]
    assert (stale["path"], stale["kind"], stale["state"], stale["removable"], stale["run_id"]) == (
        q + "/.dt=2026-11-01.lk_staging_" + messy["killed_run"], "staging", "orphaned", True, messy["killed_run"])
    assert rec["summary"]["findings"] == 4 and rec["summary"]["removable"] == 1, rec["summary"]
    # ... and none on the tidy one
    assert clean["summary"]["consistent"] and clean["summary"]["findings"] == 0, clean
    # where the small files come from: three Spark jobs 5 minutes apart, three Hive INSERTs, a put file
    writers = {w["writer"]: w for w in by["pl.messy"]["sources"]["writers"]}
    assert sorted(writers) == ["hive", "other", "spark"], writers
    spark = writers["spark"]
    assert (spark["files"], spark["jobs"], spark["where"]) == (12, 3, ["dt=2026-11-01"]), spark
    owner = spark["owner"]
    assert owner and spark["cadence"]["text"] == "4 files every 5 minutes since 2026-11-01 by %s" % owner, spark
    assert spark["cadence"]["regular"] and spark["cadence"]["interval_seconds"] == 300.0
    assert (writers["hive"]["files"], writers["hive"]["where"]) == (3, ["dt=2026-11-02"]), writers["hive"]
    assert writers["other"]["examples"] == ["events_export.parquet"], writers["other"]
    assert [w["writer"] for w in by["pl.tidy"]["sources"]["writers"]] == ["spark"]
    # the report: the findings, the removable one marked, each writer's cadence
    html = (tmp_path / "pl-reports" / "lakekeeper-pl.html").read_text()
    section = html[html.index('<h2 id="reconcile">'):html.index('<h2 id="sources">')]
    assert '<b id="reconcile-findings">4</b>' in section and section.count("<tr><td>pl.messy</td>") == 4, section
    assert "pl.tidy" not in section and '<td class="delete">lakekeeper staging (orphaned)</td>' in section
    sources = html[html.index('<h2 id="sources">'):html.index('<h2 id="history">')]
    assert "4 files every 5 minutes since 2026-11-01 by %s" % owner in sources, sources
    # check mode lists the staging copy and removes nothing
    dry = {t["table"]: t for t in got["dry"]["tables"]}
    assert [o["path"] for o in dry["pl.messy"]["orphans_removed"]] == [stale["path"]], dry
    assert dry["pl.tidy"]["orphans_removed"] == [] and dry["pl.messy"]["status"] == "planned", got["dry"]
    assert listing_of(loc) == before

    # -- cleanup.yml with lakekeeper_orphans: the staging copy goes, nothing else -------------------------------
    run = run_playbook(os.path.join(PLAYBOOKS, "cleanup.yml"), inventory, collections_dir, tmp_path,
                       ["lakekeeper_database=pl", "lakekeeper_orphans=true"])
    assert run.rc == 0, run
    assert run.stats["lakekeeper_tables_cleaned"] == 1 and run.stats["lakekeeper_freed_bytes"] > 0, run.stats
    records = {t["table"]: t for t in run.summary("edge")["tables"]}
    assert records["pl.messy"]["orphans_removed"] == [stale["path"]], records
    assert records["pl.tidy"]["status"] == "skipped" and records["pl.tidy"]["orphans_removed"] == [], records
    after = listing_of(loc)
    gone = {k for k in before if k.startswith(".dt=2026-11-01.lk_staging_")}
    assert gone and set(before) - set(after) == gone and all(after[k] == before[k] for k in after), (before, after)
    assert listing_of(tidy["location"]) and not os.path.exists(messy["staging"])


def listing_of(top):
    """{relative path: size} of every file under top, hidden ones included (the journal's history aside)."""
    out = {}
    for d, _dirs, names in os.walk(top):
        for n in names:
            rel = os.path.relpath(os.path.join(d, n), top)
            if not rel.startswith(".lakekeeper") and not n.endswith(".crc"):
                out[rel] = os.path.getsize(os.path.join(d, n))
    return out
