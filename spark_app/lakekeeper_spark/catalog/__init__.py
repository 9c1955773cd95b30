"""The engine's catalog package (see the package docstring of lakekeeper_spark)."""
