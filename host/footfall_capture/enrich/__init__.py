"""Enrichment: small named steps, each Draft → Draft, run in order by :func:`pipeline.enrich`."""
