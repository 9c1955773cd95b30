"""Errors with a machine-readable reason code and a message for a person."""

from __future__ import annotations


class LakekeeperError(Exception):
    """A table-level problem: reported in the JSON with ``reason``, not a crash."""

    status = "failed"

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message

    def __str__(self) -> str:  # pragma: no cover - trivial
        return f"{self.code}: {self.message}"


class Refused(LakekeeperError):
    """The table is not one we may touch (managed, ACID, view, bucketed...)."""

    status = "refused"


class UsageError(Exception):
    """Bad command line or config file (exit code 2)."""


# ---------------------------------------------------------------- error text


def java_message(exc: Exception) -> str:
    """``<Java class>: <message>`` of a Py4J error, else the exception's
    first line (or its type's name)."""
    java = getattr(exc, "java_exception", None)
    if java is not None:
        try:
            return f"{java.getClass().getName()}: {java.getMessage()}"
        except Exception:  # noqa: BLE001
            pass
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def root_cause(exc: Exception) -> str:
    """The top and the innermost message of a (Java) exception chain, one
    line each: Spark wraps e.g. "... is not a Parquet file" or a
    DSQuotaExceededException in generic read/write errors."""
    top = java_message(exc).splitlines()[0] if java_message(exc) else type(exc).__name__
    deepest = innermost_cause(exc)
    if not deepest or deepest in top:
        return top
    return f"{top} (cause: {deepest})"


def innermost_cause(exc: Exception) -> str | None:
    """The last ``Caused by:`` of the Java stack trace (or of the cause
    chain), first line only; None for a plain Python exception."""
    deepest = None
    cur = getattr(exc, "java_exception", None)
    try:
        while cur is not None:
            msg = cur.getMessage()
            deepest = f"{cur.getClass().getName()}: {str(msg).splitlines()[0] if msg else ''}".rstrip(": ")
            cur = cur.getCause()
    except Exception:  # noqa: BLE001 - py4j could not follow the chain: the trace text below
        pass
    caused = [ln.strip()[len("Caused by:"):].strip() for ln in str(exc).splitlines()
              if ln.strip().startswith("Caused by:")]
    if caused:
        deepest = caused[-1]
    return deepest
