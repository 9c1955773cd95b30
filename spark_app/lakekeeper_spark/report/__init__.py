"""The engine's report package (see the package docstring of lakekeeper_spark)."""
