"""Footfall's capture library: a site's traffic as privacy-preserving events on Kafka.

What runs inside a host site (the Django middleware, hit capture, enrichment, the
cookieless visitor id, the Kafka producer and its durable spool), and the pieces the
Footfall server's collector shares with it (the event schema, the enrichment steps).
"""

__version__ = "0.1.0"
