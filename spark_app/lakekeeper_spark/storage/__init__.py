"""The engine's storage package (see the package docstring of lakekeeper_spark)."""
