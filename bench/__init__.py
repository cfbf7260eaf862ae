"""Benchmarks of Footfall's components (measurements, not tests; see bench/README.md)."""
