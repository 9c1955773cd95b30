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
    take attributes for static members."""
    from py4j.java_gateway import JavaClass

    client = jvm._gateway_client  # pylint: disable=protected-access
    key = (id(client), name)
    found = _CLASSES.get(key)
    if found is None or found._gateway_client is not client:  # pylint: disable=protected-access
        with _LOCK:
            found = _CLASSES[key] = JavaClass(name, client)
    return found


def string_list(jvm: Any, strings: Any) -> list[str]:
    """A Java ``String[]`` as a Python list in one gateway call: py4j would
    fetch an array an element at a time, two round trips each (its length,
    then the element), which for a unit's 2,000 file names took 0.4-0.9 s.
    The strings come over joined by NUL (Hadoop's ``StringUtils.join``: py4j
    passes no array as varargs), which no path or name holds."""
    joined = java_class(jvm, "org.apache.hadoop.util.StringUtils").join("\u0000", strings)
    return joined.split("\u0000") if joined else []
