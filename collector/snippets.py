"""The exact snippets a site installs: the tracker's script tag and the middleware's settings.

Pure: the caller gives the server's base URL as visitors reach it, the site, and the built
tracker's integrity hash (None when the tracker is not built: the tag then goes without).
"""

from __future__ import annotations

from html import escape

DEFAULT_TRACKER_PATH, DEFAULT_COLLECT_PATH = "/footfall.js", "/collect"


def script_tag(
    base_url: str,
    site_id: str,
    integrity: str | None,
    tracker_path: str = DEFAULT_TRACKER_PATH,
    collect_path: str = DEFAULT_COLLECT_PATH,
) -> str:
    """The tag for the site's pages. Beacons go to the script's origin + ``/collect`` unless the
    server takes them at a path of its choosing, which ``data-endpoint`` then names."""
    attrs = [f'src="{escape(base_url + tracker_path)}"', f'data-site="{escape(site_id)}"']
    if collect_path != DEFAULT_COLLECT_PATH:
        attrs.append(f'data-endpoint="{escape(base_url + collect_path)}"')
    if integrity:
        attrs.append(f'integrity="{escape(integrity)}" crossorigin="anonymous"')
    return f"<script defer {' '.join(attrs)}></script>"


def middleware_settings(base_url: str, site_id: str) -> str:
    """The Django settings block of footfall_capture's middleware (HTTP transport, host/README.md)."""
    return (
        "# pip install footfall-capture (host/ of the Footfall repository), then in settings.py:\n"
        'MIDDLEWARE += ["footfall_capture.middleware.ClickstreamMiddleware"]\n'
        f'FOOTFALL_SITE_ID = "{site_id}"\n'
        f'FOOTFALL_COLLECTOR_URL = "{base_url}"\n'
        f'# the key of: manage.py create_api_key {site_id} --scope ingest --name "my host"\n'
        'FOOTFALL_INGEST_KEY_FILE = "/run/secrets/footfall-ingest-key"\n'
    )
