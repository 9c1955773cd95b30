"""Scala collections across Scala 2.12 (Spark 3.x) and 2.13 (Spark 4).

Spark's catalog hands out Scala ``Seq`` and ``Map`` objects. The converters
that turn them into Java collections (which py4j turns into Python ones)
differ: ``scala.jdk.javaapi.CollectionConverters`` exists only in 2.13,
``scala.collection.JavaConverters`` is the 2.12 API (deprecated in 2.13).
``for_spark`` picks the one of the running Scala line.
"""

from __future__ import annotations

import json
from typing import Any

from . import runtime
from .jvm import java_class


class ScalaCollections:
    """Conversions between Scala collections and Python values."""

    def __init__(self, jvm: Any):
        self._jvm = jvm
        self._json: Any = None  # a Jackson ObjectMapper (thread-safe once made), for to_dict

    # Java views of Scala collections (the only methods that differ per line)
    def _java_list(self, seq: Any) -> Any:
        raise NotImplementedError

    def _java_map(self, scala_map: Any) -> Any:
        raise NotImplementedError

    def _scala_buffer(self, java_list: Any) -> Any:
        raise NotImplementedError

    def _without(self, scala_map: Any, key: str) -> Any:
        raise NotImplementedError

    # what callers use
    def to_list(self, seq: Any) -> list[Any]:
        """A Scala ``Seq`` as a Python list (elements stay JVM objects)."""
        jlist = self._java_list(seq)
        return [jlist.get(i) for i in range(int(jlist.size()))]

    def java_list(self, seq: Any) -> Any:
        """A Scala ``Seq`` as a ``java.util.List`` (one gateway object)."""
        return self._java_list(seq)

    def to_dict(self, scala_map: Any) -> dict[str, str]:
        """A Scala ``Map[String, String]`` as a Python dict."""
        if self._json is None:
            self._json = java_class(self._jvm, "com.fasterxml.jackson.databind.ObjectMapper")()
        # as JSON in one gateway call: an entry at a time was a call each (a partition's storage
        # descriptor has two maps, read for every partition a run resolves)
        text = self._json.writeValueAsString(self._java_map(scala_map))
        return {str(k): str(v) for k, v in json.loads(text).items()}

    def to_seq(self, items: list[Any]) -> Any:
        """A Python list of JVM objects as an immutable Scala ``Seq``."""
        jlist = java_class(self._jvm, "java.util.ArrayList")()
        for item in items:
            jlist.add(item)
        return self._scala_buffer(jlist).toList()

    def to_map(self, values: dict[str, str]) -> Any:
        """A Python dict of strings as an immutable Scala ``Map`` (insertion order kept)."""
        jmap = java_class(self._jvm, "java.util.LinkedHashMap")()
        for k, v in values.items():
            jmap.put(k, v)
        return java_class(self._jvm, "org.apache.spark.api.python.PythonUtils").toScalaMap(jmap)

    def updated(self, scala_map: Any, changes: dict[str, str | None]) -> Any:
        """An immutable Scala ``Map[String, String]`` with ``changes`` applied:
        a key set to a string is written, a key set to None removed."""
        for k, v in changes.items():
            scala_map = self._without(scala_map, k) if v is None else scala_map.updated(k, v)
        return scala_map


class Scala213(ScalaCollections):
    def _java_list(self, seq: Any) -> Any:
        return java_class(self._jvm, "scala.jdk.javaapi.CollectionConverters").asJava(seq)

    def _java_map(self, scala_map: Any) -> Any:
        return java_class(self._jvm, "scala.jdk.javaapi.CollectionConverters").asJava(scala_map)

    def _scala_buffer(self, java_list: Any) -> Any:
        return java_class(self._jvm, "scala.jdk.javaapi.CollectionConverters").asScala(java_list)

    def _without(self, scala_map: Any, key: str) -> Any:
        return scala_map.removed(key)


class Scala212(ScalaCollections):
    def _java_list(self, seq: Any) -> Any:
        return java_class(self._jvm, "scala.collection.JavaConverters").seqAsJavaList(seq)

    def _java_map(self, scala_map: Any) -> Any:
        return java_class(self._jvm, "scala.collection.JavaConverters").mapAsJavaMap(scala_map)

    def _scala_buffer(self, java_list: Any) -> Any:
        return java_class(self._jvm, "scala.collection.JavaConverters").asScalaBuffer(java_list)

    def _without(self, scala_map: Any, key: str) -> Any:
        return getattr(scala_map, "$minus")(key)  # Scala 2.12 has ``-``, 2.13 renamed it ``removed``


def for_scala(jvm: Any, scala_line: tuple[int, int]) -> ScalaCollections:
    return Scala213(jvm) if scala_line >= (2, 13) else Scala212(jvm)


def for_spark(spark: Any) -> ScalaCollections:
    return for_scala(spark._jvm, runtime(spark).scala_line)  # pylint: disable=protected-access
