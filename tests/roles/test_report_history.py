"""The report role's per-table history timeline (roles/report/templates/
report.html.j2), rendered by the real ansible-playbook from analyze results
that carry ``history`` records as the engine writes them (history.py): one
file per table, oldest run first, files and bytes before and after, a
cleanup's freed bytes and dropped backups; inline SVG, nothing fetched, no
script. No Spark."""

from __future__ import annotations

import json
import re

RUN_C1, RUN_RB, RUN_C2, RUN_CL = ("20261121T013000-aaaaaa", "20261122T013000-bbbbbb", "20261123T013000-cccccc",
                                  "20261124T013000-dddddd")


def _record(run_id, command, outcome, ended_at, totals=None, **extra):
    base = {"version": 1, "run_id": run_id, "command": command, "table": "shop.events", "outcome": outcome,
            "code": None, "reason": "x", "changed": True, "ended_at": ended_at, "user": "etl", "host": "edge1",
            "totals": totals or {"units": 0, "units_changed": 0, "files_before": None, "files_after": None,
                                 "bytes_before": None, "bytes_after": None}}
    base.update(extra)
    return base


def _totals(fb, fa, bb, ba):
    return {"units": 2, "units_changed": 2, "files_before": fb, "files_after": fa, "bytes_before": bb,
            "bytes_after": ba}


HISTORY = [  # newest first, as analyze returns it
    _record(RUN_CL, "cleanup", "cleaned", "2026-11-24T01:30:05.000Z", freed_bytes=2048,
            backups_dropped=[{"backup_table": "shop.__bkp_events_20261123_013000_cccccc", "rule": "all",
                              "reason": "not pinned, outside the grace period of 0s, older_than all"}],
            backups_kept=[{"backup_table": "shop.__bkp_events_20261120_013000_eeeeee", "rule": "pinned",
                           "reason": "pinned"}]),
    _record(RUN_C2, "compact", "compacted", "2026-11-23T01:31:00.000Z", dict(_totals(10, 2, 4096, 2048), retries=2),
            backup_table="shop.__bkp_events_20261123_013000_cccccc", retry_causes={"metastore": 1, "namenode": 1},
            verification={"units": 2, "content": 1, "rows": 1}, verify_sample={"fraction": 0.5, "sampled": ["dt=a"]},
            queue="maintenance"),
    _record(RUN_RB, "rollback", "rolled_back", "2026-11-22T01:30:30.000Z", _totals(2, 10, 2048, 4096),
            backup_run_id=RUN_C1),
    _record(RUN_C1, "compact", "compacted", "2026-11-21T01:31:00.000Z",
            dict(_totals(10, 2, 4096, 2048), files_split=1, tiered=2, tier_space_saved=1536),
            verification={"units": 2, "content": 2, "rows": 0}),  # no verify_sample, no queue
    _record("20261120T013000-ffffff", "compact", "failed", "2026-11-20T01:30:10.000Z", code="write_failed",
            reason="1 of 1 unit(s) failed: disk full"),
]

TABLES = [
    {"table": "shop.events", "status": "analyzed", "needs_compaction": False, "files": 2, "bytes": 2048,
     "files_after_estimate": 2, "files_saved_estimate": 0, "partitions": [], "backups": [],
     "history": HISTORY, "history_summary": {"runs": 5}},
    {"table": "shop.orders", "status": "analyzed", "needs_compaction": False, "files": 1, "bytes": 10,
     "files_after_estimate": 1, "files_saved_estimate": 0, "partitions": [], "backups": [], "history": []},
]

PLAY = """
- name: Render the report of analyze results with history
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Report
      ansible.builtin.include_role:
        name: lakekeeper.hive.report
      vars:
        report_tables: "{{{{ lookup('ansible.builtin.file', '{tables}') | from_json }}}}"
        report_dir: "{reports}"
        report_cluster: c1
"""


def test_the_report_draws_each_tables_history(playbook, tmp_path):
    tables = tmp_path / "tables.json"
    tables.write_text(json.dumps(TABLES))
    run = playbook(PLAY.format(tables=tables, reports=tmp_path / "reports"))
    assert run.rc == 0, run
    html = (tmp_path / "reports" / "lakekeeper-c1.html").read_text()
    assert "<script" not in html and not re.search(r"""(src|href)=["']?https?:""", html)

    section = html[html.index('<h2 id="history">'):]
    # one timeline: the table with records (the other has none)
    assert re.findall(r'<h3 class="history-table">([^<]+)</h3>', section) == ["shop.events"]
    svg = section[section.index("<svg"):section.index("</svg>")]
    # oldest run first
    runs = re.findall(r'<circle class="outcome"[^>]*><title>(\w+) ([0-9a-fT-]+): (\w+)</title>', svg)
    assert runs == [("compact", "20261120T013000-ffffff", "failed"), ("compact", RUN_C1, "compacted"),
                    ("rollback", RUN_RB, "rolled_back"), ("compact", RUN_C2, "compacted"),
                    ("cleanup", RUN_CL, "cleaned")]
    # files before and after each run that changed units, scaled to the table's largest count (10 files: 100 px)
    heights = {cls: re.findall(r'<rect class="%s" x="[\d.]+" y="[\d.]+" width="20" height="([\d.]+)"' % cls, svg)
               for cls in ("files-before", "files-after", "bytes-before", "bytes-after")}
    assert heights["files-before"] == ["100.0", "20.0", "100.0"] and heights["files-after"] == ["20.0", "100.0", "20.0"]
    assert heights["bytes-before"] == ["100.0", "50.0", "100.0"] and heights["bytes-after"] == ["50.0", "100.0", "50.0"]
    # a cleanup has no file counts: the bytes it freed (2 KB of 4 KB), in the cleanup's colour
    assert re.search(r'<rect class="freed" [^>]*height="50.0" fill="none" stroke="#2f8132"', svg)
    assert 'fill="#e12d39"><title>compact 20261120T013000-ffffff: failed' in svg

    # the runs, newest first, with who, what went and why
    table = section[section.index('<table class="history-runs">'):section.index("</table>")]
    rows = re.findall(r"<tr><td>([^<]*)</td><td>(\w+)</td>", table)
    assert [r[1] for r in rows] == ["cleanup", "compact", "rollback", "compact", "compact"]
    assert rows[0][0] == "2026-11-24 01:30:05.000"
    assert "dropped shop.__bkp_events_20261123_013000_cccccc (all); kept shop.__bkp_events_20261120_013000_eeeeee " \
           "(pinned)" in table
    assert "freed 2.00 KB" in table and "undid run " + RUN_C1 in table and "etl@edge1" in table
    assert "failed</span> (write_failed)" in table and "disk full" in table
    assert "10 &rarr; 2" in table and "4.00 KB &rarr; 2.00 KB" in table
    # a compaction whose units were tried again (issue 50 item 2): how many times, and why
    assert "shop.__bkp_events_20261123_013000_cccccc; 2 retries (metastore 1, namenode 1); verified 1 by content, " \
           "1 by rows (sample 0.5); queue maintenance</td>" in table, table
    # a split and tiering (issue 50 items 1 and 7): files split, units tiered and the space saved
    assert "; verified 2 by content, 0 by rows; 1 large file(s) split; 2 unit(s) tiered, 1.50 KB saved</td>" in table, table


def report_of(playbook, tmp_path, tables_doc):
    """The HTML report the play writes for these analyzed tables (cluster c1)."""
    tables = tmp_path / "tables.json"
    tables.write_text(json.dumps(tables_doc))
    run = playbook(PLAY.format(tables=tables, reports=tmp_path / "reports"))
    assert run.rc == 0, run
    return (tmp_path / "reports" / "lakekeeper-c1.html").read_text()


def test_a_report_without_history_says_so(playbook, tmp_path):
    # (and of a table whose partitions list the module cut: 24 of its 30 partitions to compact are listed,
    # the report shows those 24 (its top is 25) and says that the other 6 are not shown)
    parts = [{"spec": "dt=%02d" % i, "decision": "compact", "files_before": 40 - i, "bytes_before": 4096,
              "target_files": 1, "avg_file_bytes": 100.0, "status": "analyzed"} for i in range(24)]
    cut = dict(TABLES[1], needs_compaction=True, partitions=parts,
               partitions_not_listed={"partitions": 900, "to_compact": 6, "files": 900, "bytes": 90000})
    html = report_of(playbook, tmp_path, [cut])
    assert "<p>No history: no table analyzed has been compacted" in html and 'class="timeline"' not in html
    assert "6 more partition(s) to compact not shown." in html and "<td>dt=23</td>" in html


def test_partitions_to_compact_all_left_out_are_counted(playbook, tmp_path):
    # a table whose module result listed none of its partitions to compact (max_partitions_listed): the report
    # counts the 3 left out, however few, and does not say that no partition needs compaction
    cut = dict(TABLES[1], needs_compaction=True, partitions=[],
               partitions_not_listed={"partitions": 3, "to_compact": 3, "files": 30, "bytes": 3000})
    html = report_of(playbook, tmp_path, [cut])
    parts = html[html.index('id="partitions"'):html.index('id="histogram"')]
    assert "3 more partition(s) to compact not shown." in parts and "No partition needs compaction" not in parts, parts
    assert "<table>" not in parts, parts


def test_refused_tables_are_listed_apart_from_failed_ones(playbook, tmp_path):
    """docs/statuses.md: a refused table (left alone by design) is not a
    failed one - counted and listed apart, with its code; an excluded table
    is analyzed but marked refused; a refused run is not drawn as a failure."""
    refused_run = _record("20261125T013000-aaaaaa", "compact", "refused", "2026-11-25T01:30:01.000Z",
                          code="excluded", reason="shop.events has the table property lakekeeper.exclude=true")
    html = report_of(playbook, tmp_path, [
        dict(TABLES[0], history=[refused_run], excluded=True),
        dict(TABLES[1]),
        {"table": "shop.raw", "status": "refused", "code": "managed_table", "reason": "shop.raw is a MANAGED table"},
        {"table": "shop.gone", "status": "failed", "code": "not_found", "reason": "table shop.gone does not exist"}])
    assert '<b id="tables-refused">2</b>' in html and '<b id="tables-failed">1</b>' in html
    refused = re.search(r'<p class="note" id="refused">(.*?)</p>', html, re.S).group(1)
    failed = re.search(r'<p class="note" id="failed">(.*?)</p>', html, re.S).group(1)
    assert refused == "Refused (left alone, not a failure): shop.raw (refused, managed_table: shop.raw is a MANAGED " \
                      "table)", refused
    assert failed == "Failed: shop.gone (failed, not_found: table shop.gone does not exist)", failed
    ranked = html[html.index('id="tables"'):html.index('id="partitions"')]
    assert "<td>refused (excluded)</td>" in ranked and "<td>no (not_needed)</td>" in ranked, ranked
    assert "Not analyzed" not in html
    svg = html[html.index('<h2 id="history">'):]
    assert 'fill="#7b8794"><title>compact 20261125T013000-aaaaaa: refused' in svg and "#e12d39" not in svg
