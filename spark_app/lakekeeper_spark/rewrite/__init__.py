"""The engine's rewrite package (see the package docstring of lakekeeper_spark)."""
