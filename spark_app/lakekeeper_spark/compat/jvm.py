"""Java classes by their full name, without py4j's walk through packages.

py4j resolves ``jvm.org.apache.hadoop.fs.Path`` one dotted name at a time:
it asks the driver whether ``org``, ``org.apache``, ``org.apache.hadoop``
and ``org.apache.hadoop.fs`` are classes before it finds ``Path``, a round
trip each, and every answer "no" is a failed class lookup that searches
every jar on the driver's class path (a few hundred under Spark). The
engine makes a ``Path`` for every file system call, so those failures
were about an eighth of a driver's CPU. ``java_class`` names the class
whole and keeps py4j's class object per gateway: nothing is looked up
until the class is used, and then only the class itself.
"""

from __future__ import annotations

import threading
from typing import Any

_CLASSES: dict[tuple[int, str], Any] = {}
_LOCK = threading.Lock()


def java_class(jvm: Any, name: str) -> Any:
    """The class (or Scala object) ``name`` (``pkg.Outer$Inner`` for a nested
    one) of the JVM behind ``jvm`` (``spark._jvm``): call it to construct,
    take attributes for static members. A static method or nested class,
    once looked up, is kept on the class object (py4j asks the JVM what a
    name is at every access, a round trip before the call's own; it keeps
    an object's methods, not a class's); a static field is read each time."""
    client = jvm._gateway_client  # pylint: disable=protected-access
    key = (id(client), name)
    found = _CLASSES.get(key)
    if found is None or found._gateway_client is not client:  # pylint: disable=protected-access
        with _LOCK:
            found = _CLASSES[key] = _class_keeping_members()(name, client)
    return found


_KEEPING: list[Any] = []


def _class_keeping_members() -> Any:
    """py4j's ``JavaClass`` that keeps the static methods and nested classes
    it has looked up (made once: py4j is imported on first use)."""
    if not _KEEPING:
        from py4j.java_gateway import JavaClass, JavaMember

        class KeepingClass(JavaClass):
            def __getattr__(self, name: str) -> Any:
                member = JavaClass.__getattr__(self, name)
                if isinstance(member, (JavaMember, JavaClass)):
                    self.__dict__[name] = member  # found by plain attribute lookup from now on
                return member

        _KEEPING.append(KeepingClass)
    return _KEEPING[0]


def string_list(jvm: Any, strings: Any) -> list[str]:
    """A Java ``String[]`` as a Python list in one gateway call: py4j would
    fetch an array an element at a time, two round trips each (its length,
    then the element), which for a unit's 2,000 file names took 0.4-0.9 s.
    The strings come over joined by NUL (Hadoop's ``StringUtils.join``: py4j
    passes no array as varargs), which no path or name holds."""
    joined = java_class(jvm, "org.apache.hadoop.util.StringUtils").join("\u0000", strings)
    return joined.split("\u0000") if joined else []


class BatchedReleases:
    """py4j's releases of JVM objects, a batch at a time.

    Every JVM object the Python driver holds (a ``Path``, a file status, a
    footer, an option) is pinned in the gateway's table of objects until its
    Python wrapper is dropped; then py4j's finalizer queues its release for
    its finalizer thread, which sends one command a release (``m d <id>``), a
    round trip each, the JVM and the Python side busy for it. A partition's
    protocol drops about a hundred such objects (the embedded default: 108 of
    its 292 gateway calls, ``benchmarks/unit_profile.py``).

    Here the release queues the object's id, and once ``BATCH`` ids are
    queued py4j's finalizer thread is asked (a task in its own queue, where
    the releases went) to take them out of the gateway's table in two calls:
    the ids joined into one string and split in the JVM (Hadoop's
    ``StringUtils.getStringCollection``), and removed from the table's key
    set at once, which is what ``Gateway.deleteObject`` does for one. A JVM
    object stays pinned a little longer, never shorter: its id is queued
    only once its Python wrapper is gone, as py4j's own release. A batch that
    cannot be removed so is released one id at a time, as py4j does.

    Only for py4j's pinned-thread client (PySpark's default since 3.2, the
    ``JavaClient`` of ``ClientServer``), whose releases already go through its
    finalizer thread: a command sent from a finalizer on the thread that
    dropped the object could land in the middle of that thread's own command.
    Anywhere else ``install`` leaves py4j as it is.
    """

    BATCH = 256
    FLUSH = "lakekeeper-flush-releases"  # the finalizer thread's task that removes a batch (no object id)

    def __init__(self, client: Any, keys: Any, split: Any, release_one: Any, fixed: frozenset[str] = frozenset()) -> None:
        import collections

        self._client = client
        self._keys = keys  # the key set of the gateway's table of objects (a live view: removing removes)
        self._split = split
        self._release_one = release_one
        self._pending: Any = collections.deque()
        self._asked = False  # a FLUSH is in the finalizer thread's queue
        self.batches = 0  # batches removed (for tests and profiles)
        self._fixed = fixed  # the gateway's own objects (its entry point, its server): py4j keeps them

    @classmethod
    def install(cls, spark: Any) -> "BatchedReleases | None":
        """Batch the releases of ``spark``'s gateway client (once per client);
        None where py4j is not as expected (its own release stays)."""
        try:
            import functools

            from py4j import protocol
            from py4j.clientserver import JavaClient
            from py4j.java_gateway import GatewayClient

            gateway = spark.sparkContext._gateway  # pylint: disable=protected-access
            client = gateway._gateway_client  # pylint: disable=protected-access
            if not isinstance(client, JavaClient) or not hasattr(client, "finalizer_deque"):
                return None
            current = client.__dict__.get("garbage_collect_object")
            if isinstance(getattr(current, "__self__", None), cls):
                return current.__self__
            keys = gateway.java_gateway_server.getGateway().getBindings().keySet()
            split = java_class(spark.sparkContext._jvm,  # pylint: disable=protected-access
                               "org.apache.hadoop.util.StringUtils").getStringCollection
            batched = cls(client, keys, split, functools.partial(GatewayClient.garbage_collect_object, client),
                          frozenset({protocol.ENTRY_POINT_OBJECT_ID, protocol.GATEWAY_SERVER_OBJECT_ID}))
            client.garbage_collect_object = batched.release
            return batched
        except Exception:  # pylint: disable=broad-except
            return None

    def release(self, target_id: str, enqueue: bool = True) -> None:
        """``JavaClient.garbage_collect_object``: a finalizer's release (queued
        here), or py4j's finalizer thread sending one (``enqueue`` false: an id
        it had queued before ``install``) or a batch (``FLUSH``)."""
        if target_id == self.FLUSH:
            self._flush()
        elif not enqueue or target_id in self._fixed:
            self._release_one(target_id)  # py4j's own (it keeps the gateway's own objects)
        else:
            self._pending.append(target_id)
            if len(self._pending) >= self.BATCH and not self._asked:
                self._asked = True
                self._client.finalizer_deque.appendleft((self._client, self.FLUSH))

    def _flush(self) -> None:
        """On py4j's finalizer thread: every full batch queued (the JVM
        objects made here are released through the queue too)."""
        self._asked = False
        while len(self._pending) >= self.BATCH:
            ids = [self._pending.popleft() for _count in range(self.BATCH)]
            try:
                self._keys.removeAll(self._split(",".join(ids)))
                self.batches += 1
            except Exception:  # pylint: disable=broad-except
                for target_id in ids:
                    self._release_one(target_id)

    @property
    def pending(self) -> int:
        return len(self._pending)
