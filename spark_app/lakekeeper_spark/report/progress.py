"""Progress records of a run, for whoever watches a long one.

``--progress-file PATH`` appends one JSON object per line to a local file
on the driver's host (the edge node in client mode), flushed at once:

``start``     the run began (before the Spark application starts)
``tables``    the tables it will work on (known once a database is listed)
``started``   a table's work began (so a run stopped before its ``table``
              record shows which tables it had begun)
``table``     a table finished: its status, reason and seconds
``working``   every ``interval`` seconds while tables are in progress: which,
              for how long, and how many are done
``end``       the run is over: the counts per status, or why it failed

Each record has ``time`` (UTC, ISO 8601), ``elapsed`` (seconds since the
start), ``event``, ``command`` and ``run_id``. The maintenance role prints
the new records while it polls an ``async`` compaction. Writing progress
never fails a run: an unwritable file is logged once and ignored.
"""

from __future__ import annotations

import datetime
import json
import logging
import threading
import time
from typing import Any

log = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 30.0


class Progress:
    def __init__(self, path: str | None, command: str, run_id: str, interval: float = HEARTBEAT_SECONDS):
        self.path = path
        self.command = command
        self.run_id = run_id
        self.interval = interval
        self.started = time.monotonic()
        self._lock = threading.Lock()
        self._running: dict[str, float] = {}
        self._done = 0
        self._total: int | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._broken = False

    def _write(self, event: str, **fields: Any) -> None:
        if not self.path or self._broken:
            return
        record = {"time": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                  "elapsed": round(time.monotonic() - self.started, 1), "event": event,
                  "command": self.command, "run_id": self.run_id, **fields}
        try:
            with self._lock, open(self.path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(record, default=str) + "\n")
                fh.flush()
        except OSError as exc:
            self._broken = True
            log.warning("cannot write progress to %s: %s (the run goes on)", self.path, exc)

    def start(self) -> None:
        self._write("start")

    def tables(self, names: list[str]) -> None:
        self._total = len(names)
        self._write("tables", tables=list(names), of=len(names))
        if self.path and self._thread is None:
            self._thread = threading.Thread(target=self._beat, name="lakekeeper-progress", daemon=True)
            self._thread.start()

    def table_started(self, name: str) -> None:
        with self._lock:
            self._running[name] = time.monotonic()
            done = self._done
        self._write("started", table=name, done=done, of=self._total)

    def table_finished(self, result: dict[str, Any]) -> None:
        with self._lock:
            self._running.pop(result.get("table"), None)
            self._done += 1
            done = self._done
        self._write("table", table=result.get("table"), status=result.get("status"), reason=result.get("reason"),
                    seconds=result.get("seconds"), done=done, of=self._total)

    def _beat(self) -> None:
        while not self._stop.wait(self.interval):
            with self._lock:
                now = time.monotonic()
                running = [{"table": t, "seconds": round(now - s)} for t, s in sorted(self._running.items())]
                done = self._done
            if running:
                self._write("working", tables=running, done=done, of=self._total)

    def end(self, doc: dict[str, Any]) -> None:
        self._stop.set()
        counts: dict[str, int] = {}
        for t in doc.get("tables") or []:
            counts[t.get("status")] = counts.get(t.get("status"), 0) + 1
        self._write("end", failed=bool(doc.get("failed")), changed=bool(doc.get("changed")), counts=counts,
                    msg=doc.get("msg"))
