"""Gunicorn settings Footfall ships: ``gunicorn -c python:footfall_server.gunicorn_config footfall_server.wsgi``.

The access log leaves the client's address out (no ``%(h)s``, no forwarded-for header):
Footfall stores no raw IP anywhere, its logs included; and the tokens of share and unsubscribe
links are cut out of its lines (footfall_server/access_log.py). The rest is gunicorn's combined
format plus the time taken. Other settings (bind, workers) stay on the command line.
"""

from __future__ import annotations

accesslog = "-"
# time, request line, status, bytes, duration, referrer, user agent: no client address.
access_log_format = '%(t)s "%(r)s" %(s)s %(b)s %(M)sms "%(f)s" "%(a)s"'
logger_class = "footfall_server.access_log.RedactingLogger"
