"""The engine's protocol package (see the package docstring of lakekeeper_spark)."""
