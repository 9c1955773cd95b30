"""The report role's "Metastore and filesystem" and "Where the small files
come from" sections (roles/report/templates/report.html.j2), rendered by the
real ansible-playbook from analyze results that carry ``reconcile`` and
``sources`` as the engine returns them (policy/reconcile.py,
policy/provenance.py): each finding a row, the removable one marked, each
writer with its cadence; and the sections of a table where nothing fires.
No Spark."""

from __future__ import annotations

from test_report_history import report_of

ROOT = "hdfs://nn/wh/shop.db/events"
KILLED = "20261101T010000-aaaaaa"

RECONCILE = {
    "unregistered_dirs": [{"path": f"{ROOT}/dt=c", "looks_like_partition": True, "files": 1, "bytes": 2048,
                           "reason": "no Metastore partition of the table points at it"}],
    "missing_dirs": [{"spec": "dt=gone", "location": f"{ROOT}/dt=gone", "reason": "gone"}],
    "root_files": {"files": 1, "bytes": 512, "names": ["000000_0"], "reason": "no reader reads them"},
    "stale": [{"path": f"{ROOT}/.dt=a.lk_staging_{KILLED}", "kind": "staging", "run_id": KILLED, "state": "orphaned",
               "removable": True, "files": 1, "bytes": 4096, "remedy": "cleanup with orphans removes it",
               "reason": "staging copy"},
              {"path": f"{ROOT}/.dt=b.lk_old_{KILLED}", "kind": "original", "run_id": KILLED, "state": "orphaned",
               "removable": False, "files": 3, "bytes": 9000, "remedy": "inspect it", "reason": "original"}],
    "summary": {"findings": 5, "consistent": False, "removable": 1, "removable_bytes": 4096},
}
CLEAN = {"unregistered_dirs": [], "missing_dirs": [], "root_files": {"files": 0, "bytes": 0, "names": []}, "stale": [],
         "summary": {"findings": 0, "consistent": True}}
SOURCES = {"small_file_bytes": 13421772, "small_files": 13, "writers": [
    {"writer": "spark", "who": "Spark (part-<n>-<job uuid>)", "owner": "etl", "files": 12, "bytes": 12000,
     "small_files": 12, "small_bytes": 12000, "jobs": 4, "examples": ["part-00000-x-c000.snappy.parquet"],
     "where": ["dt=a"], "where_count": 1,
     "cadence": {"text": "3 files every 5 minutes since 2026-11-01 by etl", "regular": True}},
    {"writer": "other", "who": "other", "owner": "alice", "files": 1, "bytes": 300, "small_files": 1,
     "small_bytes": 300, "examples": ["events_export.parquet"], "where": ["dt=a"], "where_count": 1,
     "cadence": {"text": "1 file(s) in 1 write(s) on 2026-11-02 by alice"}},
    {"writer": "hive", "who": "Hive", "owner": "hive", "files": 1, "bytes": 10**9, "small_files": 0, "small_bytes": 0,
     "examples": ["000000_0"], "where": ["dt=b"], "where_count": 1, "cadence": None}]}


def table(name, reconcile, sources):
    return {"table": name, "status": "analyzed", "needs_compaction": False, "files": 2, "bytes": 2048,
            "files_after_estimate": 2, "files_saved_estimate": 0, "partitions": [], "backups": [], "history": [],
            "reconcile": reconcile, "sources": sources}


def test_the_report_lists_each_finding_and_each_writer(playbook, tmp_path):
    html = report_of(playbook, tmp_path, [table("shop.events", RECONCILE, SOURCES),
                                          table("shop.orders", CLEAN, {"writers": [], "small_files": 0})])
    rec = html[html.index('<h2 id="reconcile">'):html.index('<h2 id="sources">')]
    assert '<b id="reconcile-findings">5</b>' in rec, rec
    rows = rec[rec.index('<table class="reconcile">'):rec.index("</table>")]
    assert rows.count("<tr><td>shop.events</td>") == 5 and "shop.orders" not in rows, rows
    assert '<td class="delete">lakekeeper staging (orphaned)</td>' in rows  # the one cleanup may remove
    assert '<td class="keep">lakekeeper original (orphaned)</td>' in rows
    assert "partition without directory" in rows and "dt=gone" in rows and "000000_0" in rows
    assert f"{ROOT}/dt=c" in rows and "ADD PARTITION" in rows
    src = html[html.index('<h2 id="sources">'):html.index('<h2 id="history">')]
    cadences = src.split('<td class="cadence">')[1:]
    assert [c.split("</td>")[0] for c in cadences] == ["3 files every 5 minutes since 2026-11-01 by etl",
                                                       "1 file(s) in 1 write(s) on 2026-11-02 by alice"], src
    table_rows = src[:src.index("</table>")]
    assert "spark (4 job(s))" in table_rows and "<td>hive" not in table_rows  # hive's files are not small: not listed


def test_nothing_fires_on_consistent_tables_without_small_files(playbook, tmp_path):
    html = report_of(playbook, tmp_path, [table("shop.orders", CLEAN, {"writers": [], "small_files": 0})])
    assert '<p id="reconcile-clean">' in html and 'class="reconcile"' not in html
    src = html[html.index('<h2 id="sources">'):html.index('<h2 id="history">')]
    assert "No small files." in src and 'class="sources"' not in src
