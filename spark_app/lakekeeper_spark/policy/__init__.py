"""The engine's policy package (see the package docstring of lakekeeper_spark)."""
