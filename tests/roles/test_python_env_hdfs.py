"""Role lakekeeper.hive.python_env with an hdfs:// destination: the real
HDFS of the test bed (testbed.Testbed: Hadoop 3.5 by default, 2.7.3 with
LAKEKEEPER_TESTBED_HADOOP=2.7) and an ``hdfs`` stand-in that runs Hadoop's
own FsShell (what ``hdfs dfs`` runs) from the bed's jars.

Opt-in (starts HDFS and several client JVMs, about 40-60 s):
``LAKEKEEPER_ROLE_HDFS_TESTS=1``. Skipped when the bed's Hadoop jars are not
cached (``scripts/testbed fetch``)."""
from __future__ import annotations

import os
import subprocess
import tarfile

import pytest
from _role_helpers import make_runner
from test_python_env import env_play, facts

pytestmark = [
    pytest.mark.timeout(600),
    pytest.mark.skipif(os.environ.get("LAKEKEEPER_ROLE_HDFS_TESTS") != "1",
                       reason="set LAKEKEEPER_ROLE_HDFS_TESTS=1 (starts HDFS)"),
]


@pytest.fixture(scope="module")
def hdfs(tmp_path_factory):
    from testbed import hadoop3, hadoop_jars, maven
    from testbed.bed import Testbed, find_java, hadoop_line
    from testbed.confs import JAVA17_OPENS

    if hadoop_line() == "2.7" and hadoop_jars.missing_jars(hadoop_jars.jars_dir()):
        pytest.skip("Hadoop 2.7.3 jars not cached: scripts/testbed fetch --hadoop 2.7")
    if hadoop_line() != "2.7" and not maven.fetched(hadoop3.MODULE):
        pytest.skip("Hadoop 3 jars not cached: scripts/testbed fetch --hadoop 3.5")
    run_dir = tmp_path_factory.mktemp("hdfs_bed")
    bed = Testbed.start(run_dir / "bed", hdfs=True, yarn=False, metastore=False, spark=False, watchdog=True)
    # `hdfs dfs ARGS` == `java ... org.apache.hadoop.fs.FsShell ARGS`
    cp = os.pathsep.join(bed.hadoop_classpath())
    wrapper = run_dir / "hdfs"
    opens = " ".join(JAVA17_OPENS)
    wrapper.write_text(f"""#!/bin/sh
[ "$1" = dfs ] || {{ echo "hdfs stand-in: only 'hdfs dfs' is supported" >&2; exit 2; }}
shift
exec {find_java()} {opens} -Xmx128m -XX:TieredStopAtLevel=1 -Dhadoop.root.logger=WARN,console \\
  -cp '{cp}' org.apache.hadoop.fs.FsShell "$@"
""")
    wrapper.chmod(0o755)
    try:
        yield {"bed": bed, "hdfs": str(wrapper), "uri": bed.hdfs_uri.rstrip("/")}
    finally:
        bed.stop()


def test_publish_to_hdfs(hdfs, tmp_path, collections_dir):
    run = make_runner(tmp_path, collections_dir)
    dest = f"{hdfs['uri']}/apps/lakekeeper"
    play = env_play(dest, python_env_hdfs_executable=hdfs["hdfs"])

    first = run(play)
    assert first.rc == 0 and first.changed > 0, first
    got = facts(first.output)
    assert got["archives"] == f"{dest}/lakekeeper_env.tar.gz#lakekeeper_env"
    assert got["python"] == "./lakekeeper_env/bin/python"

    again = run(play)
    assert again.rc == 0 and again.changed == 0, again

    def dfs(*args):
        return subprocess.run([hdfs["hdfs"], "dfs", *args], capture_output=True, check=True,
                              timeout=120).stdout

    assert dfs("-cat", f"{dest}/lakekeeper_env.tar.gz.content-sha256").decode().strip() == got["checksum"]
    local = tmp_path / "copy.tar.gz"
    dfs("-get", f"{dest}/lakekeeper_env.tar.gz", str(local))
    target = tmp_path / "lakekeeper_env"
    with tarfile.open(local) as tar:
        tar.extractall(target, filter="fully_trusted")
    out = subprocess.run([str(target / "bin" / "python"), "-c", "import yaml; print(yaml.__version__)"],
                         capture_output=True, text=True, check=True).stdout.strip()
    assert out == "6.0.3"
