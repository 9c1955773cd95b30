"""Which failures compact tries a unit again for (policy/retries.py, issue
50 item 2): the pure classifier over errors as Spark and Py4J render them,
the backoff, the settings, the table property and Amoro's. No Spark."""

from __future__ import annotations

import pytest

from lakekeeper_spark.policy.config import build_settings
from lakekeeper_spark.policy.retries import (
    EXECUTOR_LOST, IO_TIMEOUT, METASTORE, NAMENODE, backoff_seconds, retry_summary, transient_cause,
)
from lakekeeper_spark.policy.table_policy import apply_policy, policy_sources, table_policy
from lakekeeper_spark.protocol.faults import InjectedConnectionRefused, InjectedFault
from lakekeeper_spark.report.errors import LakekeeperError, Refused, UsageError

PY4J = "An error occurred while calling {call}.\n: {java}\n\tat org.apache.hadoop.Foo.bar(Foo.java:1)\n"


class Py4JJavaError(Exception):
    """What py4j raises, rendered as it renders (the Java trace in the text)."""


def py4j(call: str, java: str) -> Exception:
    return Py4JJavaError(PY4J.format(call=call, java=java))


TRANSIENT = [
    (METASTORE, py4j("o41.sql", "org.apache.spark.sql.AnalysisException: "
                     "org.apache.hadoop.hive.ql.metadata.HiveException: java.lang.RuntimeException: Unable to "
                     "instantiate org.apache.hadoop.hive.ql.metadata.SessionHiveMetaStoreClient")),
    (METASTORE, py4j("o77.alterPartitions", "org.apache.thrift.transport.TTransportException: "
                     "java.net.SocketTimeoutException: Read timed out")),
    (METASTORE, RuntimeError("MetaException(message:Could not connect to meta store using any of "
                             "the URIs provided. Most recent failure: "
                             "org.apache.thrift.transport.TTransportException)")),
    (NAMENODE, py4j("o102.rename", "org.apache.hadoop.ipc.RemoteException(org.apache.hadoop.ipc.StandbyException): "
                    "Operation category WRITE is not supported in state standby. Visit "
                    "https://s.apache.org/sbnn-error")),
    (NAMENODE, py4j("None.java.net.Socket", "java.net.ConnectException: Connection refused (Connection refused)")),
    (NAMENODE, py4j("o12.listStatus", "java.net.ConnectException: Call From host1/10.0.0.1 to nn1:8020 failed on "
                    "connection exception: java.net.ConnectException: Connection refused; For more details see:  "
                    "http://wiki.apache.org/hadoop/ConnectionRefused")),
    (NAMENODE, py4j("o88.mkdirs", "org.apache.hadoop.ipc.RemoteException(org.apache.hadoop.ipc.RetriableException): "
                    "org.apache.hadoop.hdfs.server.namenode.SafeModeException: Cannot create directory. Name node "
                    "is in safe mode.")),
    (EXECUTOR_LOST, py4j("o230.save", "org.apache.spark.SparkException: Job aborted due to stage failure: Task 3 in "
                         "stage 7.0 failed 4 times, most recent failure: Lost task 3.3 in stage 7.0 (TID 41) "
                         "(worker-2 executor 5): ExecutorLostFailure (executor 5 exited caused by one of the running "
                         "tasks) Reason: Container killed by YARN for exceeding physical memory limits.")),
    (EXECUTOR_LOST, py4j("o230.save", "org.apache.spark.SparkException: Job aborted due to stage failure: "
                         "ShuffleMapStage 4 (save at NativeMethodAccessorImpl.java:0) has failed the maximum "
                         "allowable number of times: 4. Most recent failure reason: "
                         "org.apache.spark.shuffle.FetchFailedException: Failed to connect to worker-3/10.0.0.3:7337")),
    (IO_TIMEOUT, py4j("o61.open", "java.net.SocketTimeoutException: 60000 millis timeout while waiting for channel "
                      "to be ready for read. ch : java.nio.channels.SocketChannel[connected local=/10.0.0.1:50010]")),
    (IO_TIMEOUT, OSError("java.io.IOException: Connection reset by peer")),
    (NAMENODE, InjectedConnectionRefused("java.net.ConnectException: Connection refused (at writing_staging)")),
]

NEVER = [
    # lakekeeper's own verdicts, whatever their text says
    LakekeeperError("content_mismatch", "the staged copy's rows differ: checksum 1a2b != 3c4d"),
    LakekeeperError("verification_failed", "rows 10 != 11 (a ConnectException earlier?)"),
    LakekeeperError("lease_lost", "this run no longer holds the table's lease (timed out)"),
    LakekeeperError("concurrent_write", "files changed during the run"),
    LakekeeperError("schema_drift", "columns differ"),
    LakekeeperError("insufficient_space", "not enough room"),
    LakekeeperError("deadline", "would end after the window"),
    Refused("managed_table", "a managed table"),
    InjectedFault("injected fault at verifying of db.t unit 0"),
    # a wrapped filesystem failure that names a permission, a quota, a missing file
    LakekeeperError("fs_error", "rename a -> b failed: org.apache.hadoop.security.AccessControlException: "
                                "Permission denied: user=etl, access=WRITE"),
    py4j("o230.save", "org.apache.hadoop.hdfs.protocol.DSQuotaExceededException: The DiskSpace quota of /warehouse "
                      "is exceeded"),
    py4j("o230.save", "java.io.FileNotFoundException: File does not exist: /warehouse/db/t/dt=1/part-0"),
    py4j("o12.load", "org.apache.spark.sql.AnalysisException: Column 'x' does not exist"),
    py4j("o15.read", "java.lang.RuntimeException: hdfs://nn/t/a.txt is not a Parquet file. Expected magic number"),
    py4j("o15.read", "org.apache.hadoop.fs.ChecksumException: Checksum error: /t/part-0 at 0"),
    py4j("o15.read", "org.apache.hadoop.hdfs.server.namenode.LeaseExpiredException: No lease on /t/_journal/x"),
    py4j("o230.save", "java.lang.OutOfMemoryError: Java heap space"),
    ValueError("invalid literal for int()"),
]


@pytest.mark.parametrize("cause,exc", TRANSIENT, ids=[f"{c}-{i}" for i, (c, _e) in enumerate(TRANSIENT)])
def test_transient_failures_are_classified_by_cause(cause, exc):
    assert transient_cause(exc) == cause


@pytest.mark.parametrize("exc", NEVER, ids=[type(e).__name__ + str(i) for i, e in enumerate(NEVER)])
def test_verdicts_mismatches_and_walls_are_never_retried(exc):
    assert transient_cause(exc) is None


def test_a_wrapped_filesystem_failure_is_classified_by_the_jvms_text():
    assert transient_cause(LakekeeperError("fs_error", "rename a -> b failed: org.apache.hadoop.ipc.RemoteException"
                                                       "(org.apache.hadoop.ipc.StandbyException): Operation category "
                                                       "WRITE is not supported in state standby")) == NAMENODE
    wrapped = LakekeeperError("write_failed", "could not write")
    wrapped.__cause__ = py4j("o9.save", "java.net.SocketTimeoutException: Read timed out")
    assert transient_cause(wrapped) == IO_TIMEOUT


class _Java:
    """A Java exception as Py4J hands it over (the chain followed by getCause)."""

    def __init__(self, name: str, message: str, cause: "_Java | None" = None):
        self.name, self.message, self.cause = name, message, cause

    def getClass(self):  # noqa: N802 - the Java API
        return self

    def getName(self):  # noqa: N802
        return self.name

    def getMessage(self):  # noqa: N802
        return self.message

    def getCause(self):  # noqa: N802
        return self.cause


def test_the_java_cause_chain_is_read_when_the_text_is_generic():
    exc = Py4JJavaError("An error occurred while calling o230.save.")
    exc.java_exception = _Java("org.apache.spark.SparkException", "Job aborted.",
                               _Java("org.apache.thrift.transport.TTransportException", "Socket is closed"))
    assert transient_cause(exc) == METASTORE


def test_backoff_doubles_and_is_capped():
    assert [backoff_seconds(n, 10) for n in (1, 2, 3)] == [10, 20, 40]
    assert backoff_seconds(20, 10) == 300
    assert backoff_seconds(1, 0) == 0


def test_retry_summary_sums_units():
    assert retry_summary([{"retries": 0}, {}]) is None
    assert retry_summary([{"retries": 2, "retry_causes": [NAMENODE, METASTORE]},
                          {"retries": 1, "retry_causes": [NAMENODE]}]) == {
        "count": 3, "causes": {METASTORE: 1, NAMENODE: 2}}


def test_settings_config_key_and_bounds():
    assert (build_settings({}, {}).retries, build_settings({}, {}).retry_backoff) == (2, 10.0)
    s = build_settings({"retries": 5, "retry_backoff": 1.5}, {"retries": 0})
    assert (s.retries, s.retry_backoff) == (0, 1.5)
    for bad in ({"retries": -1}, {"retries": 11}, {"retry_backoff": 301}):
        with pytest.raises(UsageError):
            build_settings(bad, {})


def test_table_property_and_amoros_num_retries():
    s = apply_policy(build_settings({}, {}), table_policy({"lakekeeper.retries": "0"}))
    assert s.retries == 0
    props = {"self-optimizing.execute.num-retries": "5"}  # Amoro's default
    assert table_policy(props) == {"lakekeeper.retries": "5"}
    assert policy_sources(props) == {"lakekeeper.retries": "self-optimizing.execute.num-retries"}
    assert table_policy({"self-optimizing.execute.num-retries": "50"}) == {"lakekeeper.retries": "10"}  # our most
    ours = {"self-optimizing.execute.num-retries": "5", "lakekeeper.retries": "1"}
    assert apply_policy(build_settings({}, {}), table_policy(ours)).retries == 1
    with pytest.raises(Refused) as err:
        table_policy({"self-optimizing.execute.num-retries": "-1"})
    assert err.value.code == "invalid_policy"
