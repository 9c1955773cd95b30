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
