"""The append log: a file open for appending records, synced after each
(the journal's unit logs, ``HadoopFS.open_log``), and a new local file
written and synced in one go (``create_local``)."""

from __future__ import annotations

import os
from typing import Any


class AppendLog:
    """A file open for appending records (``HadoopFS.open_log``)."""

    def append(self, text: str) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class LocalAppendLog(AppendLog):
    """``file://``: appended with ``write`` and synced with ``fsync``."""

    def __init__(self, path: str, mode: int = 0o666):
        self._fd: int | None = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_APPEND, mode)

    def append(self, text: str) -> None:
        if self._fd is None:
            raise ValueError("append to a closed log")
        data = memoryview(text.encode("utf-8"))
        while data:
            data = data[os.write(self._fd, data):]
        os.fsync(self._fd)

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)


class HadoopAppendLog(AppendLog):
    """A Hadoop output stream: ``write`` then ``hsync``."""

    def __init__(self, out: Any):
        self._out = out

    def append(self, text: str) -> None:
        if self._out is None:
            raise ValueError("append to a closed log")
        self._out.write(bytearray(text.encode("utf-8")))
        self._out.hsync()

    def close(self) -> None:
        if self._out is not None:
            out, self._out = self._out, None
            out.close()


def create_local(path: str, text: str, mode: int) -> None:
    """A new local file (``FileExistsError`` if there is one) with ``text``,
    synced to disk; its parent directories made as needed."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    log_file = LocalAppendLog(path, mode)
    try:
        log_file.append(text)
    finally:
        log_file.close()
