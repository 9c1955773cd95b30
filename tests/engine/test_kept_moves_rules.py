"""Minor mode's kept files moved by rename (issue 49): ``swap.move_kept``,
``swap.move_back_kept``, ``swap.finish_trash`` with the kept files and
``recovery.settle_unit`` of a unit killed after ``moving_kept``, on an
in-memory filesystem (pure: no Spark). The real runs, killed at
``moving_kept`` and ``moving_kept:after``, are in the crash file world
(tests/crash/test_crash_matrix.py)."""

from __future__ import annotations

import types

import pytest

from lakekeeper_spark.protocol import swap
from lakekeeper_spark.protocol.recovery import settle_unit
from lakekeeper_spark.report.errors import LakekeeperError
from lakekeeper_spark.report.model import Decision, FileEntry, Listing, Unit
from lakekeeper_spark.policy import planner

L, S, O = "file:/wh/t/dt=a", "file:/wh/t/.dt=a.lk_staging_r", "file:/wh/t/.dt=a.lk_old_r"  # noqa: E741 - live, staging, old (as recovery names them)


class MemFS:
    """Directories of name -> bytes; renames of files and directories as HadoopFS.rename (never onto a target)."""

    def __init__(self, dirs):
        self.dirs = {d: dict(files) for d, files in dirs.items()}
        self.renames = []

    def exists(self, uri):
        if uri in self.dirs:
            return True
        d, n = uri.rsplit("/", 1)
        return n in self.dirs.get(d, {})

    def list_dir(self, uri):
        if uri not in self.dirs:
            return Listing(uri, exists=False)
        return Listing(uri, files=[FileEntry(n, len(b), 1) for n, b in sorted(self.dirs[uri].items())])

    def list_names(self, uri):
        return [(n, False) for n in self.dirs.get(uri, {})]

    def rename(self, src, dst):
        if self.exists(dst):
            raise LakekeeperError("fs_error", f"rename target {dst} already exists")
        self.renames.append((src, dst))
        if src in self.dirs:
            self.dirs[dst] = self.dirs.pop(src)
            return
        sd, sn = src.rsplit("/", 1)
        dd, dn = dst.rsplit("/", 1)
        if dd not in self.dirs:
            raise LakekeeperError("fs_error", f"rename target's parent {dd} does not exist")
        self.dirs[dd][dn] = self.dirs[sd].pop(sn)

    def delete(self, uri, recursive=True):
        return self.dirs.pop(uri, None) is not None


class Journal:
    table_name = "db.t"
    run_id = "r"

    def __init__(self):
        self.steps = []

    def unit_step(self, idx, step, **extra):
        self.steps.append((step, extra))

    def fault(self, step, idx=None):
        self.steps.append((step + ":after", {}))


ORIGINAL = {**{f"frag-{i}": b"f" * (10 + i) for i in range(3)}, "big-1": b"B" * 500, "big-2": b"b" * 400}


def _unit():
    lst = Listing(L, files=[FileEntry(n, len(b), 1) for n, b in sorted(ORIGINAL.items())])
    return Unit("dt=a", {"dt": "a"}, L, lst, planner.file_stats(lst),
                Decision("compact", "minor", 3, "minor", rewrite=("frag-0", "frag-1", "frag-2")), S, O)


def _moved_world():
    """Staging written and verified (one new file), the kept files moved into it: killed at moving_kept:after."""
    fs = MemFS({L: ORIGINAL, S: {"part-new": b"N" * 40}})
    j = Journal()
    u = _unit()
    moves = swap.move_kept(fs, j, 0, u, fs.list_dir(S))
    return fs, j, u, moves


def test_move_kept_journals_before_any_rename_and_moves_only_the_kept_files():
    fs, j, _u, moves = _moved_world()
    assert [s for s, _extra in j.steps] == ["moving_kept", "moving_kept:after"]
    assert j.steps[0][1]["kept_moves"] == moves
    assert [(m["name"], m["length"]) for m in moves] == [("big-1", 500), ("big-2", 400)]
    assert sorted(fs.dirs[L]) == ["frag-0", "frag-1", "frag-2"]
    assert fs.dirs[S] == {"part-new": b"N" * 40, "big-1": ORIGINAL["big-1"], "big-2": ORIGINAL["big-2"]}


def test_move_kept_refuses_a_name_clash_before_journaling_anything():
    fs = MemFS({L: ORIGINAL, S: {"big-1": b"x"}})
    j = Journal()
    with pytest.raises(LakekeeperError, match="has the name of a file to keep"):
        swap.move_kept(fs, j, 0, _unit(), fs.list_dir(S))
    assert not j.steps and not fs.renames


def test_move_back_puts_every_kept_file_back_and_refuses_both_or_neither():
    fs, _j, _u, moves = _moved_world()
    assert swap.move_back_kept(fs, L, S, moves) == ["big-1", "big-2"]
    assert fs.dirs[L] == ORIGINAL and fs.dirs[S] == {"part-new": b"N" * 40}
    assert swap.move_back_kept(fs, L, S, moves) == []  # again: nothing to do
    fs.dirs[S]["big-1"] = b"B" * 500  # in both places
    with pytest.raises(LakekeeperError, match="in both"):
        swap.move_back_kept(fs, L, S, moves)
    del fs.dirs[S]["big-1"]
    del fs.dirs[L]["big-2"]  # in neither
    before = {d: dict(f) for d, f in fs.dirs.items()}
    with pytest.raises(LakekeeperError, match="in neither"):
        swap.move_back_kept(fs, L, S, moves)
    assert fs.dirs == before  # nothing moved or deleted


def _settle(fs, moves, step):
    ctx = types.SimpleNamespace(fs=fs, catalog=None)
    j = Journal()
    entry = {"index": 0, "location": L, "staging": S, "old": O, "spec": "dt=a", "partition": None,
             "files": [[n, len(b), 1] for n, b in ORIGINAL.items()]}
    return settle_unit(ctx, j, entry, {"step": step, "kept_moves": moves}, None), j


@pytest.mark.parametrize("step", ["moving_kept", "moving_aside"])
def test_recovery_of_a_unit_not_swapped_moves_the_kept_files_back_before_deleting_the_staging(step):
    fs, _j, _u, moves = _moved_world()
    (action, swapped), j = _settle(fs, moves, step)
    assert not swapped and action["action"] == "rolled_back_unswapped"
    assert action["kept_moved_back"] == ["big-1", "big-2"]
    assert fs.dirs == {L: ORIGINAL}  # the original byte for byte, the staging gone
    assert j.steps[-1][0] == "aborted"


def test_recovery_killed_right_after_the_moving_kept_record_moves_nothing_back():
    fs = MemFS({L: ORIGINAL, S: {"part-new": b"N" * 40}})
    moves = [{"name": n, "from": f"{L}/{n}", "to": f"{S}/{n}", "length": len(ORIGINAL[n])} for n in ("big-1", "big-2")]
    (action, _swapped), _j = _settle(fs, moves, "moving_kept")
    assert action["kept_moved_back"] == [] and fs.dirs == {L: ORIGINAL}


def test_recovery_refuses_and_keeps_the_staging_when_a_kept_file_is_in_neither_place():
    fs, _j, _u, moves = _moved_world()
    del fs.dirs[S]["big-2"]
    before = {d: dict(f) for d, f in fs.dirs.items()}
    with pytest.raises(LakekeeperError, match="in neither"):
        _settle(fs, moves, "moving_kept")
    assert fs.dirs == before  # the staging (holding big-1) is not deleted


def test_recovery_refuses_when_the_live_directory_vanished_with_kept_files_in_the_staging():
    fs, _j, _u, moves = _moved_world()
    del fs.dirs[L]
    before = {d: dict(f) for d, f in fs.dirs.items()}
    with pytest.raises(LakekeeperError, match="holds kept files"):
        _settle(fs, moves, "moving_kept:after")
    assert fs.dirs == before


def test_after_the_swap_recovery_completes_forward_with_the_kept_files_live():
    fs, j, u, moves = _moved_world()
    fs.rename(L, O)  # moving_aside done, killed before moving_in
    (action, swapped), _j = _settle(fs, moves, "moving_aside")
    assert swapped and action["action"] == "completed_swap"
    assert {"big-1", "big-2", "part-new"} == set(fs.dirs[L]) and sorted(fs.dirs[O]) == ["frag-0", "frag-1", "frag-2"]


def test_rollback_brings_the_kept_files_back_into_the_original_as_kept_not_carried_over():
    fs, j, u, moves = _moved_world()
    fs.rename(L, O)
    fs.rename(S, L)  # swapped
    fs.dirs[L]["late.parquet"] = b"late"  # a writer's file after the compaction
    trash = "file:/wh/t/.dt=a.lk_trash_r2"
    out = swap.swap_back(fs, L, O, trash, ["part-new"], kept=["big-1", "big-2"])
    assert out["carried_over"] == ["late.parquet"] and out["kept_restored"] == ["big-1", "big-2"]
    assert fs.dirs[L] == dict(ORIGINAL, **{"late.parquet": b"late"}) and trash not in fs.dirs
