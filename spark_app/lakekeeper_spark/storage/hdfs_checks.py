"""HDFS pre-flight: what a unit directory holds that its compacted copy (a new
directory inode written next to it, then renamed into its place) would lose,
or that makes the swap unsafe. Decided per unit before anything is written:

* a file still open for write (Flume's ``FlumeData.<n>.tmp``, ``hdfs dfs
  -put``'s ``._COPYING_``, a hidden ``.x.tmp``): its length and time are not
  final, so the listing checks see nothing change, and the writer would go on
  writing into the moved-aside original: the unit is skipped (``open_files``),
  and checked again right before its swap (swap.check_unchanged); a unit the
  planner refused for an ``x._COPYING_`` file (``unreadable_file``, see
  ``readers``) is skipped so too while that file is open: a copy in progress;
* the root of an encryption zone: the copy would be written outside the zone,
  unencrypted, and the zone moved aside (``encryption_zone``; a unit inside a
  zone has its copy in the same zone and compacts normally);
* erasure coding (Hadoop 3): a directory with another policy than its
  parent's has its staging created with its own policy (``prepare_staging``;
  the replication policy for a replicated one under an erasure coded
  parent), since the copy, written next to it, would take the parent's;
  refused (``erasure_coding``) only where that cannot be done: a policy not
  enabled on the NameNode (it cannot be given to a new directory), a text or
  Avro unit (its copy is written by Hive's ``INSERT OVERWRITE DIRECTORY``,
  not made to write into a prepared directory here). Wherever the directory
  or its parent is erasure coded, verification checks each new file's policy
  against the directory's (``verify_erasure_coding``);
* a snapshottable directory (``snapshottable``: HDFS refuses to rename one
  with snapshots, and the new directory would not be snapshottable);
* files or directory of another owner or group than this run can give its
  copy (not the HDFS superuser, tried for real on a probe file):
  ``ownership``, unless ``allow_owner_change`` (then a warning);
* carried onto the copy before the swap (``HdfsCarry``): the directory's own
  storage policy, its extended attributes, the replication the rewritten
  files shared; its ACL and quotas (fs.copy_dir_attributes), owner, group
  and mode (fs.copy_permissions) as before.

Only units on ``hdfs://`` that are to be compacted are looked at: a few
NameNode calls per unit directory (status, ``.snapshot``, extended
attributes; the zone and erasure coding policy only where the status flags
them) plus the open-file check: one located listing of the directory (its
files' under-construction state; ``isFileClosed`` per file only where the
listing does not say it), the directories on a few threads. Nothing on other
filesystems. The rules are pure functions; ``check_units`` feeds them.
"""

from __future__ import annotations

import logging
from typing import Any

from ..report.errors import LakekeeperError
from .attributes import REPLICATION_POLICY
from .fs import HadoopFS
from .threads import threaded
from .layout import split_path
from .readers import UNREADABLE_FILE, unreadable_files
from ..report.model import Decision, FileEntry, HdfsCarry, TablePlan, Unit

log = logging.getLogger(__name__)

OPEN_FILES = "open_files"
ENCRYPTION_ZONE = "encryption_zone"
ERASURE_CODING = "erasure_coding"
SNAPSHOTTABLE = "snapshottable"
OWNERSHIP = "ownership"
CARRIED_XATTR_NAMESPACES = ("user.", "trusted.")


def uri_path(uri: str) -> str:
    """``hdfs://nn:8020/a/b/`` -> ``/a/b``."""
    rest = uri.split("://", 1)[1] if "://" in uri else uri
    path = "/" + rest.split("/", 1)[1] if "/" in rest else "/"
    return path.rstrip("/") or "/"


# ---------------------------------------------------------------- pure rules


def dir_refusal(location: str, unit: dict[str, Any], parent: dict[str, Any], enabled_ec: set[str] | None = None,
                fmt: str | None = None) -> tuple[str, str] | None:
    """(code, reason) when the unit directory itself carries what a swap by
    rename cannot keep. ``unit``/``parent``: the facts ``check_units``
    gathers (``zone``: root path of the encryption zone or None; ``ec``:
    erasure coding policy name or None; ``snapshottable``). ``enabled_ec``:
    the erasure coding policies enabled on the NameNode (None: unknown, as
    none); ``fmt``: the table's format."""
    if unit.get("zone") is not None and unit["zone"] == uri_path(location):
        return (ENCRYPTION_ZONE,
                f"{location} is the root of an HDFS encryption zone: its compacted copy would be written next to "
                f"it, outside the zone (unencrypted), and the swap would move the zone aside; nothing was written "
                f"(directories inside a zone compact normally)")
    mine, theirs = unit.get("ec"), parent.get("ec")
    if mine != theirs:
        facts = (f"{location} has the erasure coding policy {mine or '(none: replicated)'}, its parent "
                 f"{theirs or '(none: replicated)'}: the compacted copy, written next to it, would take the parent's")
        if fmt is not None and fmt not in ("parquet", "orc"):
            return (ERASURE_CODING,
                    f"{facts}, and a {fmt} copy is written by Hive's INSERT OVERWRITE DIRECTORY, which is not made "
                    f"to write under the directory's own policy; nothing was written")
        if mine is not None and mine not in (enabled_ec or set()):
            return (ERASURE_CODING,
                    f"{facts}, and {mine} is not enabled on the NameNode, so no new directory can be given it "
                    f"(hdfs ec -enablePolicy -policy {mine}); nothing was written")
    if unit.get("snapshottable"):
        return (SNAPSHOTTABLE,
                f"{location} is snapshottable (hdfs dfsadmin -allowSnapshot): HDFS does not rename a snapshottable "
                f"directory that has snapshots, and the compacted directory would not be snapshottable; nothing "
                f"was written")
    return None


def open_files_reason(held: list[str]) -> str:
    shown = ", ".join(held[:3]) + (f" and {len(held) - 3} more" if len(held) > 3 else "")
    return (f"{len(held)} file(s) still open for write on HDFS ({shown}): a writer has not closed them, their "
            f"length is not final and the writer would go on writing into the moved-aside original; compacted "
            f"once they are closed")


def carry_plan(unit: dict[str, Any], parent: dict[str, Any], policy_names: dict[int, str],
               files: list[FileEntry]) -> HdfsCarry:
    """What the copy must be given: the directory's own storage policy (its
    effective one when it differs from its parent's, which the copy would
    inherit), its extended attributes, and the replication factor the
    rewritten files share (none when they differ)."""
    carry = HdfsCarry()
    mine, theirs = unit.get("storage_policy"), parent.get("storage_policy")
    if mine is not None and theirs is not None and mine != theirs and mine in policy_names:
        carry.storage_policy = policy_names[mine]
    carry.xattrs = {k: v for k, v in sorted((unit.get("xattrs") or {}).items())
                    if k.startswith(CARRIED_XATTR_NAMESPACES)}
    factors = {f.replication for f in files}
    if len(factors) == 1 and None not in factors:
        carry.replication = factors.pop()
    return carry


def owner_targets(dir_owner: str, dir_group: str, files: list[FileEntry]) -> list[tuple[str, str]]:
    """The (owner, group) pairs the copy is to be given (the directory's and
    its files')."""
    found = {(dir_owner, dir_group)} | {(f.owner, f.group) for f in files if f.owner is not None and f.group is not None}
    return sorted(found)


def ownership_outcome(location: str, targets: list[tuple[str, str]], refused: dict[tuple[str, str], str],
                      user: str, new_group: str, allow: bool) -> tuple[str | None, str | None]:
    """(refusal reason, warning): the targets this run may not give its copy
    (``refused``: the NameNode's answer per target) make the unit refused, or
    with ``allow`` compacted with a warning naming the change."""
    failed = [t for t in targets if refused.get(t)]
    if not failed:
        return None, None
    whose = ", ".join(f"{o}:{g}" for o, g in failed)
    why = refused[failed[0]]
    if allow:
        return None, (f"owner change (allow_owner_change): {location} and its files belonged to {whose}, the "
                      f"compacted copy belongs to {user}:{new_group} ({why}); check that their writers can "
                      f"still write there")
    return (f"{location}: its directory or files belong to {whose}; this run ({user}) cannot give its compacted "
            f"copy that owner ({why}), so they would belong to {user}:{new_group} and their writer could lose "
            f"write access; nothing was written. Run as the HDFS superuser or the owner, or set "
            f"allow_owner_change"), None


# ---------------------------------------------------------------- the NameNode's facts


def _dir_facts(fs: HadoopFS, uri: str, unit: bool) -> dict[str, Any]:
    facts = fs.dir_facts(uri)
    facts["ec"] = None
    if unit:
        facts["snapshottable"] = fs.is_snapshottable(uri)
        facts["xattrs"] = fs.xattrs(uri)
        facts["zone"] = fs.encryption_zone(uri) if facts["encrypted"] else None
    return facts


def check_units(fs: HadoopFS, p: TablePlan, settings: Any, probe: str | None) -> None:
    """Decide each ``hdfs://`` unit to compact: refused, skipped or given an
    ``HdfsCarry`` (see the module). ``probe``: a path for the ownership probe
    file in a directory this run holds (the table's journal directory under
    its lease); None (dry runs) leaves ownership unchecked."""
    _copies_in_progress(fs, p)
    units = [u for u in p.to_compact if fs.is_hdfs(u.location)]
    if not units:
        return
    parents = sorted({split_path(u.location)[0] for u in units})
    parent_facts = dict(zip(parents, threaded(lambda d: _dir_facts(fs, d, False), parents)))
    unit_facts = threaded(lambda u: _dir_facts(fs, u.location, True), units)
    policies: dict[int, str] = {}
    if any(f["storage_policy"] != parent_facts[split_path(u.location)[0]]["storage_policy"]
           for u, f in zip(units, unit_facts)):
        policies = fs.storage_policy_names(units[0].location)
    kept: list[tuple[Unit, dict[str, Any]]] = []
    for u, facts in zip(units, unit_facts):
        parent = parent_facts[split_path(u.location)[0]]
        coded = facts["erasure_coded"] or parent["erasure_coded"]  # Hadoop 3 only; a 2.7 NameNode never flags it
        enabled: set[str] | None = None
        if coded:
            facts["ec"] = fs.erasure_coding_policy(u.location)
            if "ec_known" not in parent:
                parent["ec"], parent["ec_known"] = fs.erasure_coding_policy(split_path(u.location)[0]), True
            if facts["ec"] != parent["ec"]:
                enabled = fs.enabled_erasure_coding_policies(u.location)
        refusal = dir_refusal(u.location, facts, parent, enabled, p.format)
        if refusal:
            u.decision = Decision("refuse", refusal[1], u.stats.files, u.decision.rule, code=refusal[0])
            continue
        u.hdfs = carry_plan(facts, parent, policies, u.rewrite_files)
        if coded:
            u.hdfs.ec_check, u.hdfs.ec_expected = True, facts["ec"]
            if facts["ec"] != parent["ec"]:
                u.hdfs.erasure_coding = facts["ec"] or REPLICATION_POLICY
        kept.append((u, facts))

    held = fs.open_files({u.location: [f.name for f in u.listing.files] + list(u.listing.hidden_files)
                          for u, _f in kept})
    owned = []
    for u, facts in kept:
        if held[u.location]:
            u.decision = Decision("skip", open_files_reason(held[u.location]), u.decision.target_files,
                                  u.decision.rule, code=OPEN_FILES)
            u.hdfs = None
        else:
            owned.append((u, facts))
    if probe is None or not owned:
        return
    user = fs.current_user()
    need: dict[str, list[tuple[str, str]]] = {}
    for u, facts in owned:  # what differs from what this run's copy gets anyway: its user, the parent's group
        group = parent_facts[split_path(u.location)[0]]["group"]
        need[u.location] = [t for t in owner_targets(facts["owner"], facts["group"], u.listing.files)
                            if t != (user, group)]
    targets = sorted({t for ts in need.values() for t in ts})
    if not targets:
        return
    try:
        answers = fs.owner_probe(probe, targets)
    except Exception as exc:  # noqa: BLE001
        raise LakekeeperError("error", f"could not check which owners this run may give its files ({exc})") from exc
    for u, _facts in owned:
        group = parent_facts[split_path(u.location)[0]]["group"]
        refusal, note = ownership_outcome(u.location, need[u.location], {t: a for t, a in answers.items() if a},
                                          user, group, settings.allow_owner_change)
        if refusal:
            u.decision = Decision("refuse", refusal, u.stats.files, u.decision.rule, code=OWNERSHIP)
            u.hdfs = None
        elif note and u.hdfs is not None:
            u.hdfs.keep_owner, u.hdfs.owner_note = False, note


def _copies_in_progress(fs: HadoopFS, p: TablePlan) -> None:
    """A unit the planner refused for a file Hive reads and Spark skips
    (``readers``: ``x._COPYING_``) while such a file is still open for write
    is a copy in progress, not a file left behind: skipped (``open_files``),
    as any unit with an open file, instead of refused."""
    refused = [u for u in p.units if u.decision.code == UNREADABLE_FILE and fs.is_hdfs(u.location)]
    if not refused:
        return
    held = fs.open_files({u.location: unreadable_files([f.name for f in u.listing.files]) for u in refused})
    for u in refused:
        if held[u.location]:
            u.decision = Decision("skip", open_files_reason(held[u.location]), u.decision.target_files,
                                  u.decision.rule, code=OPEN_FILES)


def prepare_staging(fs: HadoopFS, u: Unit) -> bool:
    """Create the unit's staging directory with the unit's own erasure
    coding policy where it differs from its parent's (``u.hdfs.erasure_coding``;
    or a tier's, rewrite/tiering.py, with its storage policy),
    before anything is written: a file takes its policy when it is created,
    from its nearest ancestor that has one, and keeps it. True when the
    directory was made here (the copy is then written into it); False when
    there is nothing to prepare (the writer makes the directory). A refusal
    by the NameNode fails the unit: nothing was written."""
    c = u.hdfs
    if c is None or (c.erasure_coding is None and c.tier_storage_policy is None):
        return False
    if fs.exists(u.staging):
        raise LakekeeperError("write_failed", f"the staging directory {u.staging} exists already; nothing was written")
    try:
        fs.mkdirs(u.staging)
        if c.erasure_coding is not None:
            fs.set_erasure_coding_policy(u.staging, c.erasure_coding)
        if c.tier_storage_policy is not None:  # tiering: its blocks placed by it as they are written
            fs.set_storage_policy(u.staging, c.tier_storage_policy)
    except Exception as exc:  # noqa: BLE001 - Py4JJavaError: the NameNode's refusal
        from ..report.errors import java_message

        what = " and ".join(x for x in (c.erasure_coding and f"the erasure coding policy {c.erasure_coding}",
                                        c.tier_storage_policy and f"the storage policy {c.tier_storage_policy}") if x)
        raise LakekeeperError("write_failed", f"could not give the staging directory {u.staging} {what} for "
                                              f"{u.location} ({java_message(exc)}); nothing was swapped") from exc
    return True


def verify_erasure_coding(fs: HadoopFS, u: Unit, names: list[str]) -> None:
    """Each staged file has the unit directory's erasure coding policy
    (``u.hdfs.ec_expected``; None: replicated), where the pre-flight found
    the directory or its parent erasure coded (``u.hdfs.ec_check``): one
    NameNode call per file. Else ``verification_failed``."""
    c = u.hdfs
    if c is None or not c.ec_check or not names:
        return
    base = u.staging.rstrip("/")
    got = threaded(lambda n: fs.erasure_coding_policy(f"{base}/{n}"), names)
    wrong = [(n, g) for n, g in zip(names, got) if g != c.ec_expected]
    if wrong:
        shown = ", ".join(f"{n}: {g or 'replicated'}" for n, g in wrong[:3])
        raise LakekeeperError("verification_failed",
                              f"erasure coding policy changed: {c.ec_expected or 'replicated'} on {u.location}, "
                              f"{len(wrong)} compacted file(s) otherwise ({shown})")


def carry_attributes(fs: HadoopFS, u: Unit, copied: set[str]) -> dict[str, Any]:
    """Give the staged copy what the pre-flight found on the original
    directory (``u.hdfs``), before the swap. Returns what was carried (the
    partition result's ``carried``). A refusal by the NameNode fails the
    unit: its original stays as it was."""
    c = u.hdfs
    if c is None:
        return {}
    done: dict[str, Any] = {}
    if c.erasure_coding:  # given to the staging before the write (prepare_staging)
        done["erasure_coding"] = c.erasure_coding
    try:
        if c.storage_policy:
            fs.set_storage_policy(u.staging, c.storage_policy)
            done["storage_policy"] = c.storage_policy
        for name, value in c.xattrs.items():
            fs.set_xattr(u.staging, name, value)
        if c.xattrs:
            done["xattrs"] = sorted(c.xattrs)
        if c.replication is not None:
            changed = [f.name for f in fs.list_dir(u.staging).files
                       if f.name not in copied and f.replication is not None and f.replication != c.replication]
            for name in changed:
                fs.set_replication(f"{u.staging.rstrip('/')}/{name}", c.replication)
            if changed:
                done["replication"] = c.replication
    except LakekeeperError:
        raise
    except Exception as exc:  # noqa: BLE001 - Py4JJavaError: the NameNode's refusal
        from ..report.errors import java_message

        raise LakekeeperError("write_failed", f"could not give the compacted copy {u.staging} the attributes of "
                                              f"{u.location} ({java_message(exc)}); nothing was swapped") from exc
    return done
