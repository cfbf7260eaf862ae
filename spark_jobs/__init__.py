"""PySpark jobs of the batch layer (extract / transform / load over the raw archive)."""
