"""The query REST API (``/api/v1/``): numbers out of Footfall for users' own tools."""
