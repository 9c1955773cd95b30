"""Session fixtures ``file_world``, ``hdfs_world``, ``lane_world`` and ``merge_world``, cached per pytest
process so that several conftests (tests/crash, tests/security) can export
them and the worlds are still built once. A world whose build failed is
not rebuilt: every test that needs it fails with the same error."""
from __future__ import annotations

import traceback

import pytest

import world as W

_CACHE: dict[str, object] = {}


def _get(name: str, build, request):
    if name not in _CACHE:
        try:
            _CACHE[name] = build()
        except Exception:  # noqa: BLE001
            _CACHE[name] = RuntimeError(traceback.format_exc())
        w = _CACHE[name]
        if isinstance(w, W.World):
            W.terminal(request.config, [f"crash world {name}: {w.total_seconds()} s in {w.work} "
                                        f"(load average {w.load.get('start')} -> {w.load.get('end')})",
                                        *W.stage_lines(w)])
    w = _CACHE[name]
    if isinstance(w, Exception):
        pytest.fail(f"the {name} world could not be built:\n{w}", pytrace=False)
    return w


@pytest.fixture(scope="session")
def file_world(request, tmp_path_factory) -> W.World:
    return _get("file", lambda: W.build_file_world(tmp_path_factory.mktemp("crash-file")), request)


@pytest.fixture(scope="session")
def hdfs_world(request, tmp_path_factory, testbed) -> W.World:
    return _get("hdfs", lambda: W.build_hdfs_world(tmp_path_factory.mktemp("crash-hdfs"), testbed), request)


@pytest.fixture(scope="session")
def lane_world(request, tmp_path_factory) -> W.World:
    return _get("lane", lambda: W.build_lane_world(tmp_path_factory.mktemp("crash-lane")), request)


@pytest.fixture(scope="session")
def merge_world(request, tmp_path_factory) -> W.World:
    return _get("merge", lambda: W.build_merge_world(tmp_path_factory.mktemp("crash-merge")), request)
