"""Bounded retries of a unit that failed for a reason that passes (issue
50, item 2; Amoro's ``self-optimizing.num-retries``).

``transient_cause`` classifies an error as the engine sees it (a Py4J
error with its Java exception chain, or its rendered text): one of
``CAUSES`` when a second attempt may succeed, else None. Transient:

- ``metastore``: the Hive Metastore did not answer (Thrift's
  ``TTransportException``, a socket timeout, "Could not connect to meta
  store", "Failed to connect to the MetaStore Server");
- ``namenode``: a NameNode failover or a NameNode that is down for a while
  (``StandbyException``, ``RetriableException``, ``ConnectException`` /
  "Connection refused", ``NoRouteToHostException``,
  "Operation category READ/WRITE is not supported in state standby");
- ``executor_lost``: Spark lost the executors a job ran on
  (``ExecutorLostFailure``, ``FetchFailedException``, "Lost executor",
  "Container killed by YARN", ``MetadataFetchFailedException``);
- ``io_timeout``: a read or write that timed out
  (``SocketTimeoutException``, "timed out", "Connection reset by peer",
  ``EOFException`` ending a connection, "Broken pipe").

Never transient, whatever the text holds: every error lakekeeper itself
classified (``LakekeeperError``: a verification or content mismatch, a
refusal, a lost lease or fencing, a concurrent writer, schema drift, no
space...), except the two codes that wrap a filesystem or write failure as
the JVM reported it (``fs_error``, ``write_failed``), which are classified
by that text; and any text that names a mismatch, a checksum or lease
error, a permission or quota, or a missing file (``NEVER``), even inside a
retried-looking wrapper: a second attempt would write the same wrong copy
or hit the same wall. A retry starts from the state the journal's recovery
left (commands/compact.py): never a blind re-run.

``backoff_seconds``: the wait before attempt n (exponential, capped). Pure.
"""

from __future__ import annotations

import re
from typing import Any

# The causes a retry is counted under (results, history).
METASTORE, NAMENODE, EXECUTOR_LOST, IO_TIMEOUT = "metastore", "namenode", "executor_lost", "io_timeout"
CAUSES = (METASTORE, NAMENODE, EXECUTOR_LOST, IO_TIMEOUT)

DEFAULT_RETRIES = 2
DEFAULT_BACKOFF_SECONDS = 10.0
MAX_RETRIES = 10
MAX_BACKOFF_SECONDS = 300.0

# LakekeeperError codes that carry the JVM's own failure text (classified by it); every other code is final.
WRAPPING_CODES = ("fs_error", "write_failed")

# Texts that are never retried, checked first.
NEVER = re.compile(
    r"mismatch|checksum|verification|LeaseExpiredException|lease_lost|fenc(e|ing)|"
    r"AccessControlException|Permission denied|QuotaExceededException|FileNotFoundException|"
    r"FileAlreadyExistsException|SchemaColumnConvertNotSupportedException|"
    r"ParseException|is not a Parquet file|OutOfMemoryError|InjectedFault",
    re.IGNORECASE,
)
# (cause, pattern), the first that matches wins: the more specific first.
TRANSIENT = (
    (METASTORE, re.compile(r"TTransportException|Could not connect to meta ?store|"
                           r"Failed to connect to the MetaStore Server|MetaException.*timed out|"
                           r"Unable to instantiate org\.apache\.hadoop\.hive\.(ql\.)?metadata\.SessionHiveMetaStoreClient",
                           re.IGNORECASE)),
    (EXECUTOR_LOST, re.compile(r"ExecutorLostFailure|FetchFailedException|MetadataFetchFailedException|"
                               r"Lost executor|Container killed by YARN|Container marked as failed|"
                               r"Executor heartbeat timed out|SparkException: Job \d+ cancelled because "
                               r"SparkContext was shut down", re.IGNORECASE)),
    (NAMENODE, re.compile(r"StandbyException|RetriableException|ConnectException|Connection refused|"
                          r"NoRouteToHostException|is not supported in state standby|"
                          r"Failed on local exception|ObserverRetryOnActiveException|"
                          r"SafeModeException: .*safe mode", re.IGNORECASE)),
    (IO_TIMEOUT, re.compile(r"SocketTimeoutException|ConnectTimeoutException|timed out|"
                            r"Connection reset|Broken pipe|Premature EOF|EOFException: End of File Exception between",
                            re.IGNORECASE)),
)


def error_text(exc: BaseException) -> str:
    """Everything the error says: the Python text (a Py4J error renders the
    whole Java stack trace with its ``Caused by:`` lines) and, where Py4J
    can follow it, each Java exception of the chain, ``<class>: <message>``."""
    lines = [type(exc).__name__, str(exc)]
    cur = getattr(exc, "java_exception", None)
    seen = 0
    try:
        while cur is not None and seen < 20:
            lines.append(f"{cur.getClass().getName()}: {cur.getMessage()}")
            cur, seen = cur.getCause(), seen + 1
    except Exception:  # noqa: BLE001 - py4j could not follow the chain: the text above has it
        pass
    cause = exc.__cause__
    if cause is not None and cause is not exc:
        lines.append(f"{type(cause).__name__}: {cause}")
    return "\n".join(lines)


def classify_text(text: str) -> str | None:
    """The transient cause a failure's text names (``CAUSES``), or None
    (``NEVER`` first)."""
    if not text or NEVER.search(text):
        return None
    for cause, pattern in TRANSIENT:
        if pattern.search(text):
            return cause
    return None


def transient_cause(exc: BaseException) -> str | None:
    """One of ``CAUSES`` when ``exc`` is a failure that passes, else None."""
    code = getattr(exc, "code", None)
    if code is not None and hasattr(exc, "message"):  # a LakekeeperError: lakekeeper's own verdict
        if code not in WRAPPING_CODES:
            return None
        return classify_text(f"{exc.message}\n{error_text(exc.__cause__) if exc.__cause__ else ''}")
    return classify_text(error_text(exc))


def backoff_seconds(retry: int, base: float) -> float:
    """The wait before retry ``retry`` (1, 2, ...): ``base`` doubled each
    time, at most ``MAX_BACKOFF_SECONDS``."""
    if base <= 0:
        return 0.0
    return min(MAX_BACKOFF_SECONDS, base * (2 ** max(0, retry - 1)))


def retry_summary(units: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The retries of a table's units (their ``retries`` and
    ``retry_causes``): ``{"count": n, "causes": {cause: n}}``, None when none."""
    count, causes = 0, {}
    for u in units:
        n = int(u.get("retries") or 0)
        count += n
        for cause in u.get("retry_causes") or []:
            causes[cause] = causes.get(cause, 0) + 1
    if not count:
        return None
    return {"count": count, "causes": dict(sorted(causes.items()))}
