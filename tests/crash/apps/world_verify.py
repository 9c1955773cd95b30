"""Checks every table of a crash-test world in ONE Spark process and writes
the facts as JSON (the tests assert on them):

    python world_verify.py SPEC.json EXPECT.json EXTRAS.json OUT.json

For each table, first a second recovery in-process (its actions must be
empty), then: rows against the originals plus every file written later
(exceptAll both ways), Metastore location and partitions, SHOW PARTITIONS
before and after MSCK REPAIR TABLE, hidden Lakekeeper directories
(staging, trash, originals not referenced by a backup), visible
directories, the backup tables (each unit a .lk_old sibling holding exactly
the original files), each unit's state (original files, compacted, or
mixed), journal runs, owners and modes; for bad-input tables an exact
snapshot of every entry (hidden included).
"""
from __future__ import annotations

import collections
import json
import os
import re
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.abspath(os.path.join(HERE, "..", "..", "..", "spark_app")))
sys.path.insert(0, HERE)

from world_common import (COLUMNS, KINDS, PARTITION_COLUMNS, kept_template_dir, local_fs_confs, run_app,  # noqa: E402
                          template_dir, units_of)

KEPT_PREFIX = "kept-"  # kind "minor": the files minor mode keeps (world_setup.create_table)
from world_setup import FS, perms, tree  # noqa: E402

LK_TAGS = ("lk_staging", "lk_old", "lk_trash")
# The table's run history (<journal dir>/history) outlives every run by design: not a change, not a leftover.
HISTORY_ENTRY = re.compile(r"^\.lakekeeper(/history(/.*)?)?$")


def history_only(fs, uri):
    """A non-partitioned table's journal directory that holds nothing but its history."""
    return uri.endswith(".lakekeeper") and [n for n, _d, _s in fs.ls(uri) if not n.endswith(".crc")] == ["history"]


def normalized(df, full, pcols):
    """(t, id, name, amount, ts, part): one shape for every kind of table."""
    from pyspark.sql import functions as F

    part = F.concat_ws("/", *[F.concat(F.lit(f"{c}="), F.col(c).cast("string")) for c in pcols]) if pcols \
        else F.lit("")
    return df.select(F.lit(full).alias("t"), *COLUMNS, part.alias("part"))


def scan_hidden(fs, roots, unit_dirs):
    """Hidden Lakekeeper entries (``.<dir>.lk_<tag>_<run>``) of this table: in
    its roots and their visible subdirectories, and next to each root and
    each unit directory (a flat table's or an outside partition's siblings)."""
    from lakekeeper_spark.storage.layout import parse_hidden_name

    found = {}

    def look(u, names=None):
        for n, is_dir, _size in fs.ls(u):
            parsed = parse_hidden_name(n)
            if parsed and (names is None or parsed[0] in names):
                found[f"{u}/{n}"] = {"path": f"{u}/{n}", "tag": parsed[1], "run": parsed[2], "is_dir": is_dir}

    def walk(u, depth):
        look(u)
        if depth < 4:
            for n, is_dir, _size in fs.ls(u):
                if is_dir and not n.startswith((".", "_")):
                    walk(f"{u}/{n}", depth + 1)
    for r in roots:
        walk(r, 0)
    for d in set(roots) | set(unit_dirs):
        parent, name = d.rstrip("/").rsplit("/", 1)
        look(parent, {name})
    return sorted(found.values(), key=lambda h: h["path"])


def visible_dirs(fs, root):
    out = set()

    def walk(u, rel):
        for n, is_dir, _size in fs.ls(u):
            if n.startswith((".", "_")):
                continue
            if is_dir:
                r = f"{rel}/{n}" if rel else n
                out.add(r)
                walk(f"{u}/{n}", r)
    if fs.exists(root):
        walk(root, "")
    return sorted(out)


def expected_visible_dirs(tree_):
    return sorted(p for p, v in tree_.items() if v == "dir" and not any(x.startswith((".", "_")) for x in p.split("/")))


def unit_state(live, originals, extra_shas, kept=()):
    """original | compacted | mixed, comparing file contents (names may
    change when a late file is adopted). ``kept``: the names of the original
    files a compaction keeps as they are (minor mode): live in either state,
    byte for byte (else mixed)."""
    live_c = collections.Counter(live.values())
    extra_c = collections.Counter(extra_shas)
    missing_extras = sum((extra_c - live_c).values())
    rest = live_c - extra_c
    orig_c = collections.Counter(originals.values())
    kept_c = collections.Counter(originals[n] for n in kept)
    if kept_c:
        if any(live.get(n) != originals[n] for n in kept):  # a kept file is not live, byte for byte, by its name
            return "mixed", missing_extras, sum(rest.values())
        rest, orig_c = rest - kept_c, orig_c - kept_c
    if rest == orig_c:
        state = "original"
    elif rest and not (set(rest) & set(orig_c)):
        state = "compacted"
    else:
        state = "mixed"
    return state, missing_extras, sum(rest.values())


def check_table(spark, ctx, fs, full, exp, extras, late, templates, prefix):
    from lakekeeper_spark.catalog.backup import find_backups
    from lakekeeper_spark.protocol.journal import Journal
    from lakekeeper_spark.storage.layout import journal_dir
    from lakekeeper_spark.protocol.recovery import backup_units, recover_table
    from lakekeeper_spark.catalog.tables import load_table

    db, name = full.split(".")
    t = exp["spec"]
    kind = t["kind"]
    f = {"table": full}
    problems = f.setdefault("problems", [])
    # 1. second recovery
    info = None
    try:
        info = load_table(ctx, full)
        t0 = time.time()
        f["second_recovery"] = recover_table(ctx, info)
        f["second_recovery_seconds"] = round(time.time() - t0, 3)
    except Exception as exc:  # noqa: BLE001
        f["second_recovery_error"] = str(exc).splitlines()[0][:300]
    try:
        spark.sql(f"REFRESH TABLE {full}")
    except Exception:  # noqa: BLE001
        pass
    cat = ctx.catalog
    # 2. Metastore
    try:
        now = cat.get_table(db, name)
        f["location_ok"] = now.location == exp["location"]
        if exp.get("partitions") is not None:
            parts = {p.spec_str: p.location for p in cat.list_partitions(now)}
            f["partitions_ok"] = parts == exp["partitions"]
            if not f["partitions_ok"]:
                problems.append(f"partitions {parts} != {exp['partitions']}")
            shown = sorted(r[0] for r in spark.sql(f"SHOW PARTITIONS {full}").collect())
            f["show_partitions_ok"] = shown == exp["show_partitions"]
            if kind in KINDS:
                spark.sql(f"MSCK REPAIR TABLE {full}")
                after = sorted(r[0] for r in spark.sql(f"SHOW PARTITIONS {full}").collect())
                f["msck_ok"] = after == exp["show_partitions"]
                if not f["msck_ok"]:
                    problems.append(f"MSCK REPAIR TABLE changed the partitions: {after}")
        if not f["location_ok"]:
            problems.append(f"location {now.location} != {exp['location']}")
    except Exception as exc:  # noqa: BLE001
        f["metastore_error"] = str(exc).splitlines()[0][:300]
    f["backups"] = []
    backups = find_backups(cat, db, name, prefix) if cat.database_exists(db) and cat.table_exists(db, name) else []
    roots = [t["root"]] + ([t["outside"]] if t.get("outside") else [])
    if kind not in KINDS:  # bad input: nothing may have changed at all
        trees = {r: {k: v for k, v in tree(fs, r).items() if not HISTORY_ENTRY.match(k)} for r in roots}
        f["tree_unchanged"] = trees == exp["trees"]
        if not f["tree_unchanged"]:
            diff = []
            for r in roots:
                a, b = exp["trees"].get(r, {}), trees.get(r, {})
                diff += [f"-{k}" for k in sorted(set(a) - set(b))] + [f"+{k}" for k in sorted(set(b) - set(a))]
                diff += [f"~{k}" for k in sorted(set(a) & set(b)) if a[k] != b[k]]
            f["tree_diff"] = diff[:20]
            problems.append(f"files changed: {diff[:5]}")
        f["backups"] = [b.full_name for b in backups]
        if backups:
            problems.append(f"backup tables created: {f['backups']}")
        parents = {r.rstrip("/").rsplit("/", 1)[0] for r in roots}
        base = {r.rstrip("/").rsplit("/", 1)[1] for r in roots}
        left = [n for p in parents for n, _d, _s in fs.ls(p)
                if any(n.startswith(f".{b}.") for b in base) and not history_only(fs, f"{p}/{n}")]
        if left:
            problems.append(f"hidden entries next to the table: {left}")
        return f
    # 3. rows: compared for all tables at once (compare_rows)
    ex = (extras or [])
    try:
        f["_frames"] = (expected_rows(spark, full, kind, templates, ex, late),
                        normalized(spark.table(full), full, PARTITION_COLUMNS[kind]))
    except Exception as exc:  # noqa: BLE001
        f["rows_error"] = str(exc).splitlines()[0][:300]
        problems.append(f"rows not readable: {f['rows_error']}")
    # 4. units, backups
    layout = units_of(kind, t["root"], t.get("outside"))
    loc_to_spec = {fs.fs(loc).makeQualified(fs.P(loc)).toString(): spec for spec, loc in layout["units"].items()}
    backed = {}
    late_shas = collections.Counter(fs.sha(late[e["template"]]) for e in ex)
    writer_files_in_backup = collections.Counter()
    for b in backups:
        entry = {"name": b.full_name, "run_id": b.run_id, "units": {}}
        try:
            bdoc, _bunits = Journal.load(fs_engine(ctx), b.journal_dir or journal_dir(info), b.run_id)
            planned = {ctx.fs.qualify(x["location"]): {f_[0] for f_ in x.get("files") or []}
                       for x in bdoc.get("units", [])}
            for u in backup_units(ctx, info, b):
                spec = loc_to_spec.get(u["location"], u["location"])
                old_files = {n: fs.sha(f"{u['old']}/{n}") for n in fs.data_files(u["old"])} if fs.exists(u["old"]) else {}
                orig = exp["units"].get(spec, {}).get("files", {})
                if kind == "minor":  # the files it keeps were moved live: the original directory lacks them
                    orig = {n: v for n, v in orig.items() if not n.startswith(KEPT_PREFIX)}
                    planned = {k: {n for n in v if not n.startswith(KEPT_PREFIX)} for k, v in planned.items()}
                # every original, byte for byte; anything else only a file a writer added before the
                # run planned (it was compacted with the rest); exactly what that run planned
                others = collections.Counter(v for n, v in old_files.items() if orig.get(n) != v)
                same = (all(old_files.get(n) == v for n, v in orig.items()) and not (others - late_shas)
                        and set(old_files) == planned.get(u["location"], set(old_files)))
                writer_files_in_backup[spec] += sum(others.values())
                entry["units"][spec] = {"old": u["old"], "matches_original": same,
                                        "writer_files": sum(others.values())}
                if not same:
                    problems.append(f"backup {b.full_name} unit {spec!r} does not hold exactly the original files "
                                    f"(as planned by its run)")
                if spec in backed:
                    problems.append(f"unit {spec!r} is in two backups")
                backed[spec] = b.full_name
        except Exception as exc:  # noqa: BLE001
            entry["error"] = str(exc).splitlines()[0][:300]
            problems.append(f"backup {b.full_name}: {entry['error']}")
        f["backups"].append(entry)
    extra_shas = collections.defaultdict(list)
    for e in ex:
        extra_shas[e["unit"]].append(fs.sha(late[e["template"]]))
    f["units"] = {}
    for spec, loc in layout["units"].items():
        live = {n: fs.sha(f"{loc}/{n}") for n in fs.data_files(loc)} if fs.exists(loc) else None
        if live is None:
            f["units"][spec] = {"state": "missing"}
            problems.append(f"unit {spec!r}: {loc} is missing")
            continue
        kept = [n for n in exp["units"][spec]["files"] if n.startswith(KEPT_PREFIX)] if kind == "minor" else []
        state, missing_extras, other = unit_state(live, exp["units"][spec]["files"], extra_shas.get(spec, []), kept)
        u = {"state": state, "files": len(live), "backed_up": spec in backed, "missing_extras": missing_extras}
        f["units"][spec] = u
        if state == "mixed":
            problems.append(f"unit {spec!r}: neither the original nor a compacted copy: {sorted(live)[:4]}")
        # files a writer added before a run planned were compacted (rows checked) and sit in its backup
        if missing_extras > writer_files_in_backup[spec]:
            problems.append(f"unit {spec!r}: {missing_extras} file(s) written later are neither in the live "
                            f"directory nor compacted with the originals")
        if state == "compacted" and spec not in backed and not t.get("cleaned"):
            problems.append(f"unit {spec!r} is compacted but no backup holds its originals")
        if state == "original" and spec in backed:
            problems.append(f"unit {spec!r} holds its originals and is also in a backup")
        if exp["units"][spec].get("dir_perms") and state == "compacted":
            first = sorted(n for n in live)[0]
            u["dir_perms"] = perms(fs, loc)
            u["file_perms"] = [perms(fs, f"{loc}/{n}") for n in sorted(live)]
            if u["dir_perms"] != exp["units"][spec]["dir_perms"]:
                problems.append(f"unit {spec!r}: directory owner/mode {u['dir_perms']} != "
                                f"{exp['units'][spec]['dir_perms']}")
            bad = [p for p in u["file_perms"] if p != exp["units"][spec]["file_perms"]]
            if bad:
                problems.append(f"unit {spec!r}: file owner/mode {bad[0]} != {exp['units'][spec]['file_perms']} "
                                f"(first file {first})")
    # 5. hidden entries and visible directories
    hidden = scan_hidden(fs, [t["root"]], list(layout["units"].values()))
    referenced = {u["old"] for b in f["backups"] for u in b["units"].values()}
    f["hidden"] = hidden
    for h in hidden:
        q = fs.fs(h["path"]).makeQualified(fs.P(h["path"])).toString()
        if h["tag"] != "lk_old" or q not in referenced:
            problems.append(f"stray hidden entry {h['path']}")
    vis = visible_dirs(fs, t["root"])
    want_vis = expected_visible_dirs(exp["trees"][t["root"]])
    f["visible_dirs_ok"] = vis == want_vis
    if vis != want_vis:
        problems.append(f"visible directories {vis} != {want_vis}")
    # 6. journal runs: exactly those kept for a backup
    jdir = journal_dir(info)
    runs = Journal.run_ids(fs_engine(ctx), jdir)
    f["journal_runs"] = runs
    if sorted(runs) != sorted(b.run_id for b in backups):
        problems.append(f"journal runs {runs} != backups' runs {[b.run_id for b in backups]}")
    if f.get("second_recovery"):
        problems.append(f"second recovery was not a no-op: {f['second_recovery']}")
    if f.get("second_recovery_error"):
        problems.append(f"second recovery failed: {f['second_recovery_error']}")
    return f


_ROWS_CACHE: dict = {}
ROW_SCHEMA = "id BIGINT, name STRING, amount DECIMAL(12,2), ts TIMESTAMP"


def _uri_path(uri):
    from urllib.parse import urlparse

    return urlparse(str(uri)).path.rstrip("/")


def preload_templates(spark, fs, templates, late):
    """The rows of every template (each unit's directory, the kept files, each late file) in
    ONE Spark job, by the file each row came from, into the cache _template_rows reads (a
    template missing here is read on its own there)."""
    from pyspark.sql import functions as F

    dirs = [d for d in {template_dir(templates, kind, spec) for kind, units in KINDS.items() for spec in units}
            | {kept_template_dir(templates)} if fs.exists(d)]
    files = sorted(set(late or []))
    if not dirs and not files:
        return
    by_file = collections.defaultdict(list)
    df = spark.read.schema(ROW_SCHEMA).parquet(*dirs, *files)
    for r in df.select(F.input_file_name().alias("f"), *COLUMNS).collect():
        by_file[_uri_path(r[0])].append(tuple(r[1:]))
    for d in dirs:
        key = _uri_path(d)
        _ROWS_CACHE[d] = [row for f, rows in sorted(by_file.items()) if f.rsplit("/", 1)[0] == key for row in rows]
    for f in files:
        _ROWS_CACHE[f] = by_file[_uri_path(f)]


def _template_rows(spark, path):
    if path not in _ROWS_CACHE:
        _ROWS_CACHE[path] = [tuple(r) for r in spark.read.schema(ROW_SCHEMA).parquet(path).collect()]
    return _ROWS_CACHE[path]


def expected_rows(spark, full, kind, templates, extras, late):
    """(t, id, name, amount, ts, part) rows the table must hold: its
    templates (read once per kind) plus every late/appended file."""
    out = []
    for spec in KINDS[kind]:
        out += [(full, *r, spec) for r in _template_rows(spark, template_dir(templates, kind, spec))]
        if kind == "minor":
            out += [(full, *r, spec) for r in _template_rows(spark, kept_template_dir(templates))]
    for e in extras:
        out += [(full, *r, e["unit"]) for r in _template_rows(spark, late[e["template"]])]
    return out


def compare_rows(spark, facts):
    """Rows of every table against its expected rows as multisets, both ways (what exceptAll
    computes: a row missing, duplicated or extra is counted). The tables are read through
    Spark together, in one job, and counted here; one table at a time only if the joint read
    fails."""
    from functools import reduce

    frames = {t: f.pop("_frames") for t, f in facts.items() if "_frames" in f}
    if not frames:
        return

    def per_table(names):
        have = collections.defaultdict(collections.Counter)
        for row in reduce(lambda a, b: a.unionByName(b), [frames[n][1] for n in names]).collect():
            have[row[0]][tuple(row)] += 1
        counts = {}
        for n in names:
            want, got = collections.Counter(frames[n][0]), have.get(n, collections.Counter())
            counts[n] = {"expected": len(frames[n][0]), "count": sum(got.values()),
                         "missing": sum((want - got).values()), "extra": sum((got - want).values())}
        return counts

    try:
        counts = per_table(sorted(frames))
    except Exception:  # noqa: BLE001 - one unreadable table: go table by table
        counts = {}
        for n in sorted(frames):
            try:
                counts.update(per_table([n]))
            except Exception as exc:  # noqa: BLE001
                facts[n]["rows_error"] = str(exc).splitlines()[0][:300]
                facts[n]["problems"].append(f"rows not readable: {facts[n]['rows_error']}")
    for n, c in counts.items():
        rows = {k: c.get(k, 0) for k in ("count", "expected", "missing", "extra")}
        facts[n]["rows"] = rows
        if rows["missing"] or rows["extra"]:
            facts[n]["problems"].append(f"rows differ: {rows['missing']} missing, {rows['extra']} extra")


def fs_engine(ctx):
    return ctx.fs


def main(adjust=None):
    """``adjust(spark, ctx, fs, full, exp, facts, templates)``: more checks of a table
    after check_table (e.g. other expected rows: apps/merge_verify.py)."""
    spec_path, expect_path, extras_path, out_path = sys.argv[1:5]
    only = sys.argv[5].split(",") if len(sys.argv) > 5 and sys.argv[5] else None
    spec = json.load(open(spec_path))
    expect = json.load(open(expect_path))
    extras = json.load(open(extras_path)) if os.path.exists(extras_path) else {}
    t0 = time.time()
    from lakekeeper_spark.catalog.catalog import Catalog
    from lakekeeper_spark.catalog.context import Context
    from lakekeeper_spark.policy.config import build_settings
    from lakekeeper_spark.storage.fs import HadoopFS
    from lakekeeper_spark.storage.layout import new_run_id
    from lakekeeper_spark.session import build_session

    spark = build_session(spec.get("master", "local[2]"), spec.get("state_dir"),
                          {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2",
                           **local_fs_confs(), **spec.get("confs", {})})
    ctx = Context(spark, HadoopFS(spark), Catalog(spark), build_settings({}, {}), new_run_id())
    fs = FS(spark)
    late = expect["late_templates"]
    out = {"tables": {}, "session_seconds": round(time.time() - t0, 1)}
    t1 = time.time()
    preload_templates(spark, fs, spec["templates"], late)
    out["templates_seconds"] = round(time.time() - t1, 1)

    def one(item):
        full, exp = item
        t1 = time.time()
        ex = list(expect.get("appended", {}).get(full, [])) + list(extras.get(full, []))
        try:
            f = check_table(spark, ctx, fs, full, exp, ex, late, spec["templates"], "__bkp")
            if adjust is not None:
                adjust(spark, ctx, fs, full, exp, f, spec["templates"])
        except Exception:  # noqa: BLE001
            f = {"table": full, "problems": ["verification crashed: " + traceback.format_exc()[-1500:]]}
        f["verify_seconds"] = round(time.time() - t1, 2)
        return full, f

    from concurrent.futures import ThreadPoolExecutor

    items = [(t, e) for t, e in sorted(expect["tables"].items()) if not only or t in only]
    with ThreadPoolExecutor(max_workers=4) as pool:  # tables are independent
        for full, f in pool.map(one, items):
            out["tables"][full] = f
    t1 = time.time()
    compare_rows(spark, out["tables"])
    out["rows_seconds"] = round(time.time() - t1, 1)
    out["seconds"] = round(time.time() - t0, 1)
    with open(out_path, "w") as fh:
        json.dump(out, fh, indent=1, sort_keys=True)
    spark.stop()
    print("RESULT " + json.dumps({"seconds": out["seconds"], "tables": len(out["tables"])}), flush=True)


if __name__ == "__main__":
    run_app(main)
