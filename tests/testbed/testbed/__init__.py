"""Real-cluster test bed for Lakekeeper: HDFS (Hadoop 2.7.3 NameNode + DataNode),
a Hive Metastore service and Spark standalone (Master + Worker) on 127.0.0.1.

    from testbed import Testbed
    bed = Testbed.start("/tmp/bed")      # or Testbed.load("/tmp/bed/testbed.json")
    ...
    bed.stop()

See tests/testbed/README.md, ``scripts/testbed --help`` and
``testbed.pytest_plugin`` (the session fixture ``testbed``).
"""
from .bed import DEFAULT_BLOCK_SIZE, Testbed, find_java, find_spark_home
from .procs import TestbedError

__all__ = ["Testbed", "TestbedError", "DEFAULT_BLOCK_SIZE", "find_java", "find_spark_home"]
