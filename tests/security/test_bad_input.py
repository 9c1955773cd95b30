"""Bad input: every case gives a clear error and changes nothing.

Four layers, each as cheap as it can be:
* the engine's command line (usage errors, injection-shaped names): no JVM
  starts, so the state directory must not even be created;
* tables in the Metastore (views, managed/ACID/bucketed tables, unsupported
  formats, missing directories, files that are not parquet...): ONE
  ``compact --tables ...`` run of the file:// crash world; its verification
  process compares every entry under each table (hidden included), the
  Metastore and the backup tables with the snapshot taken before;
* the collection's modules through a real ansible-playbook (conflicting
  selectors, spark-submit not found, keytabs, a Metastore nobody runs,
  expired Kerberos tickets): one playbook run, one host per case;
* HDFS (test bed): permission denied on the table directory (run as another
  user), a space quota set while the compacted copy is being written.
The last test prints the whole table (and writes tests/output/bad-input.json).
"""
from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import world as W

REPO = Path(__file__).resolve().parents[2]
APP = REPO / "spark_app" / "run_lakekeeper.py"
TABLE: list[dict] = []  # every case checked, for the final report

pytestmark = pytest.mark.timeout(5400)


def record(layer, case, what, outcome, message, ok):
    TABLE.append({"layer": layer, "case": case, "input": what, "outcome": outcome,
                  "message": " ".join(str(message).split())[:160], "ok": ok if ok == "finding" else bool(ok)})


# ------------------------------------------------------------------ command line

CLI = [
    # (case, argv after the command, fragment of the message)
    ("sql_injection_semicolon", ["compact", "--table", "lk.t;DROP"], "only letters, digits and underscore"),
    ("sql_injection_quote", ["compact", "--table", "lk.t' OR '1'='1"], "only letters, digits and underscore"),
    ("backticks", ["compact", "--table", "lk.`t`"], "only letters, digits and underscore"),
    ("statement_in_name", ["compact", "--table", "lk.t; DROP TABLE lk.x"], "expected <database>.<table>"),
    ("no_database", ["compact", "--table", "events"], "expected <database>.<table>"),
    ("three_parts", ["compact", "--table", "a.b.c"], "expected <database>.<table>"),
    ("empty_table_part", ["compact", "--table", "lk."], "invalid table name"),
    ("unicode_name", ["compact", "--table", "lk.tä"], "only letters, digits and underscore"),
    ("space_in_name", ["compact", "--table", "lk.t x"], "only letters, digits and underscore"),
    ("name_too_long", ["compact", "--table", "lk." + "t" * 129], "max 128"),
    ("database_injection", ["analyze", "--database", "lk;drop"], "invalid database name"),
    ("list_injection", ["compact", "--tables", "lk.a,lk.b;x"], "only letters, digits and underscore"),
    ("conflicting_selectors", ["compact", "--table", "lk.a", "--database", "lk"], "not allowed with argument"),
    ("no_selector", ["compact"], "one of the arguments --table --tables --database is required"),
    ("older_than_garbage", ["cleanup", "--database", "lk", "--older-than", "abc"], "invalid duration"),
    ("older_than_negative", ["cleanup", "--database", "lk", "--older-than=-3d"], "invalid duration"),
    ("cleanup_without_policy", ["cleanup", "--database", "lk"], "cleanup needs a retention policy"),
    ("run_id_on_compact", ["compact", "--table", "lk.t", "--run-id", "20261122T013000-3f9a1c"],
     "--run-id only applies to rollback"),
    ("older_than_on_compact", ["compact", "--table", "lk.t", "--older-than", "7d"], "only applies to cleanup"),
    ("quiet_period_garbage", ["compact", "--table", "lk.t", "--quiet-period", "soon"], "invalid duration"),
    ("quiet_period_on_analyze", ["analyze", "--table", "lk.t", "--quiet-period", "10m"], "only applies to compact"),
    ("block_size_zero", ["compact", "--table", "lk.t", "--block-size", "0"], "block_size_mb must be > 0"),
    ("block_size_not_a_number", ["compact", "--table", "lk.t", "--block-size", "big"], "invalid float value"),
    ("ratio_negative", ["compact", "--table", "lk.t", "--ratio-threshold=-1"], "must be > 0"),
    ("backup_prefix_injection", ["compact", "--table", "lk.t", "--backup-prefix", "x;drop"], "invalid backup_prefix"),
    ("conf_without_value", ["compact", "--table", "lk.t", "--conf", "novalue"], "--conf expects K=V"),
    ("log_level_unknown", ["compact", "--table", "lk.t", "--log-level", "LOUD"], "invalid log_level"),
    ("config_file_missing", ["compact", "--table", "lk.t", "--config-file", "/nonexistent/lk.yaml"],
     "cannot read config file"),
    ("config_unknown_key", ["compact", "--table", "lk.t", "--config-file", "{unknown}"], "unknown key(s) block_size"),
    ("config_not_yaml", ["compact", "--table", "lk.t", "--config-file", "{notyaml}"], "is not valid YAML"),
    ("config_not_a_mapping", ["compact", "--table", "lk.t", "--config-file", "{notmapping}"], "must hold a mapping"),
]


def test_command_line_refuses_bad_input_before_starting_anything(tmp_path):
    files = {"unknown": "block_size: 64\n", "notyaml": "a: [1, 2\n", "notmapping": "- a\n- b\n"}
    paths = {}
    for k, text in files.items():
        paths[k] = tmp_path / f"{k}.yaml"
        paths[k].write_text(text)

    def run(case):
        name, argv, fragment = case
        argv = [a.format(**paths) if "{" in a and a.strip("{}") in paths else a for a in argv]
        state = tmp_path / f"state-{name}"
        proc = subprocess.run([sys.executable, str(APP), *argv, "--state-dir", str(state)], capture_output=True,
                              text=True, timeout=120, check=False)
        msg = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ""
        try:
            msg = json.loads(proc.stdout)["msg"]
        except ValueError:
            pass
        return name, argv, proc.returncode, msg, fragment, state.exists()

    with ThreadPoolExecutor(max_workers=4) as pool:
        outcomes = list(pool.map(run, CLI))
    bad = []
    for name, argv, rc, msg, fragment, created in outcomes:
        ok = rc == 2 and fragment in msg and not created
        record("command line", name, " ".join(argv[1:])[:60], f"exit {rc}", msg, ok)
        if not ok:
            bad.append((name, rc, msg, created))
    assert not bad, bad


# ------------------------------------------------------------------ tables

def test_engine_refuses_skips_or_fails_bad_tables_without_changing_them(file_world):
    w = file_world
    results = w.stages["compact"]["results"]
    bad = []
    for full, what, status, code in [("nodb.t", "a database that does not exist", "failed", "not_found"),
                                     ("bi.nope", "a table that does not exist", "failed", "not_found")] + \
            [(f"bi.{v}", what, status, code) for v, what, status, code in W.BAD_INPUT]:
        res = results.get(full, {})
        facts = w.facts.get(full, {"problems": []})
        spec = w.expect["tables"].get(full, {}).get("spec", {})
        if spec.get("not_created"):
            record("table", full, what, "NOT CREATED", w.expect["notes"].get(full), False)
            bad.append((full, "setup could not create this case", w.expect["notes"].get(full)))
            continue
        reasons = [res.get("reason", "")] + [p.get("reason", "") for p in res.get("partitions", [])
                                             if p.get("status") in ("failed", "skipped", "not_needed")]
        message = "; ".join(r for r in reasons if r)
        if full == "bi.empty_file":  # a zero-byte file is no data: compacting is fine if no row changes
            ok = res.get("status") in ("compacted", "failed", "not_needed")
        else:
            ok = (res.get("status") == status and (code is None or res.get("code") == code) and bool(message)
                  and not facts.get("problems"))
        note = w.expect.get("notes", {}).get(full)
        record("table", full, what + (f" [{note}]" if note else ""),
               f"{res.get('status')}/{res.get('code') or '-'}", message or res, ok)
        if not ok:
            bad.append((full, res.get("status"), res.get("code"), message[:300], facts.get("problems")))
    assert not bad, bad


def test_hdfs_permission_denied_and_quota_exceeded_during_the_write(hdfs_world):
    w = hdfs_world
    denied = next(t for t in w.cases if t.endswith(".denied"))
    quota = next(t for t in w.cases if t.endswith(".quota"))
    bad = []
    for full, what, fragment in ((denied, "table directory of alice (700), run as bob", "Permission denied"),
                                 (quota, "space quota set on the table's directory while the copy is written",
                                  "Quota")):
        res = w.stages["as_bob" if full == denied else "quota"]["results"].get(full, {})
        message = res.get("reason", "") + " " + " ".join(p.get("reason", "") for p in res.get("partitions", []))
        facts = w.facts.get(full, {})
        ok = res.get("status") == "failed" and fragment.lower() in message.lower() and not facts.get("problems")
        record("HDFS", full.split(".")[1], what, f"{res.get('status')}/{res.get('code') or '-'}", message, ok)
        if not ok:
            bad.append((full, res, facts.get("problems")))
    assert w.notes.get("setSpaceQuota", {}).get("rc") == 0, w.notes
    assert not bad, bad


# ------------------------------------------------------------------ modules

MODULE_CASES = [
    # (case, what, expect failure, fragment of msg)
    ("conflicting_selectors", "table and database in one task", True, "mutually exclusive"),
    ("spark_submit_not_found", "spark_submit.enabled, no spark-submit anywhere", True, "spark-submit not found"),
    ("no_metastore_config", "spark-submit to YARN, hive-site.xml only in HIVE_CONF_DIR and --files", True,
     "no Metastore configuration was found for a client-mode driver on this host"),
    ("metastore_unreachable", "hive.metastore.uris pointing at a closed port", True, "Metastore is unreachable"),
    ("bad_older_than", "lakekeeper_cleanup older_than: soon", True, "invalid duration"),
    ("kinit_expired_kdc_down", "kinit role: expired ticket, KDC down", True, "Cannot contact any KDC"),
    ("missing_keytab", "spark_submit.keytab that does not exist (checked before launching)", True,
     "missing.keytab does not exist"),
]


def test_modules_give_clear_errors(module_run):
    bad = []
    for case, what, fails, fragment in MODULE_CASES:
        res = module_run["results"].get(case) or {}
        msg = str(res.get("msg", ""))
        ok = bool(res.get("failed")) == fails and fragment in msg
        record("module", case, what, "failed" if res.get("failed") else "ok", msg or res, ok)
        if not ok:
            bad.append((case, res.get("failed"), msg[:400]))
    assert not bad, (bad, module_run["stdout"][-3000:])


def test_an_expired_ticket_is_renewed_by_the_kinit_role(module_run):
    case = "kinit_expired_ticket"
    res = module_run["results"].get(case) or {}
    kdc = module_run["kdc"]
    valid_after = subprocess.run(["klist", "-s", "-c", module_run["caches"][case]],
                                 env=kdc._run_env(), check=False).returncode  # pylint: disable=protected-access
    ok = module_run["expired_before"][case] != 0 and not res.get("failed") and valid_after == 0
    record("module", case, "kinit role: the cached ticket expired", "renewed" if ok else str(res),
           "klist -s: expired before, valid after", ok)
    assert ok, (module_run["expired_before"], res, valid_after)


# ------------------------------------------------------------------ the table

def test_print_the_bad_input_table(request):
    rows = [[r["layer"], r["case"], r["input"][:58], r["outcome"], r["message"][:110],
             "ok" if r["ok"] is True else "FINDING" if r["ok"] == "finding" else "FAIL"] for r in TABLE]
    W.terminal(request.config, [f"bad input: {len(TABLE)} cases, {sum(r['ok'] is True for r in TABLE)} as expected, "
                                f"{sum(r['ok'] == 'finding' for r in TABLE)} findings for plugins/",
                                *W.table_lines(["layer", "case", "input", "outcome", "message", "check"], rows)])
    W.save_json("bad-input.json", TABLE)
    assert len(TABLE) >= 30, len(TABLE)
