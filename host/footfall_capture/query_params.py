"""Which query parameters a page URL keeps: :data:`KEPT_PARAMS` for every site, plus a site's
own list (:func:`site_query_params` validates it). Everything else (``?email=``, ``?token=``,
search terms, click ids) is dropped before an event is stored. No third-party import: a host
site's settings validate the list without the enrichment libraries.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final
from urllib.parse import unquote_plus

# Query parameters every site keeps in its page URLs: the usual "where did this visit come from"
# tags. The utm_* ones are read into the event's campaign fields and leave the URL.
KEPT_PARAMS: Final[frozenset[str]] = frozenset({"ref", "source"})
MAX_SITE_PARAMS: Final = 50
# Click ids and mailing-list ids: they make every visit's URL unique (splitting page counts)
# and identify the person who clicked, so a site may not keep them. Compared lower-case.
# ``utm_*`` is matched by prefix (utm_id, utm_source_platform, ... are tracking too).
TRACKING_PARAMS: Final[frozenset[str]] = frozenset(
    {
        # Google
        "gclid", "gclsrc", "dclid", "gbraid", "wbraid", "gad_source", "gad_campaignid", "srsltid",
        "_ga", "_gl",
        # Microsoft, Meta, X, LinkedIn, TikTok, Pinterest, Snap, Yandex, Reddit
        "msclkid", "fbclid", "igshid", "igsh", "twclid", "li_fat_id", "ttclid", "epik", "sccid",
        "yclid", "ysclid", "rdt_cid",
        # mail and marketing tools: Mailchimp, HubSpot, Marketo, Klaviyo, Vero, Omeda, Adobe, Drip
        "mc_cid", "mc_eid", "_hsenc", "_hsmi", "__hssc", "__hstc", "__hsfp", "hsctatracking",
        "mkt_tok", "_kx", "vero_id", "vero_conv", "oly_anon_id", "oly_enc_id", "s_cid", "__s",
        "ml_subscriber", "ml_subscriber_hash", "wickedid", "irclickid",
        # Twitter's "ref_src=twsrc^tfw" share parameters
        "ref_src", "ref_url",
    }
)  # fmt: skip
UTM_PREFIX: Final = "utm_"
_PARAM_NAME: Final = re.compile(r"[a-z0-9][a-z0-9_.\-\[\]]{0,63}")


def is_tracking_param(key: str) -> bool:
    """Whether a (raw, possibly percent-encoded) query key is a tracking parameter."""
    name = unquote_plus(key).strip().lower()
    return name.startswith(UTM_PREFIX) or name in TRACKING_PARAMS


def kept_query(query: str, site_params: frozenset[str]) -> str:
    """The pairs of ``query`` whose decoded, lower-cased name is in :data:`KEPT_PARAMS` or
    ``site_params``, in their order and spelling."""
    if not query:
        return ""
    kept = []
    for pair in query.split("&"):
        name = unquote_plus(pair.partition("=")[0]).strip().lower()
        if name in KEPT_PARAMS or name in site_params:
            kept.append(pair)
    return "&".join(kept)


def site_query_params(names: Iterable[object]) -> frozenset[str]:
    """A site's own list of query parameters to keep, lower-cased; ValueError names the first
    that is not a plain parameter name, is a click id or ``utm_*``, or one too many."""
    kept = []
    for name in names:
        text = name.strip().lower() if isinstance(name, str) else name
        if not isinstance(text, str) or not _PARAM_NAME.fullmatch(text):
            raise ValueError(f"{name!r} is not a query parameter name (letters, digits, '_', '-', '.', '[]')")
        if is_tracking_param(text):
            raise ValueError(f"{name!r} is a tracking parameter: it identifies the visitor, so it is never kept")
        kept.append(text)
    if len(kept) > MAX_SITE_PARAMS:
        raise ValueError(f"at most {MAX_SITE_PARAMS} query parameters, got {len(kept)}")
    return frozenset(kept) - KEPT_PARAMS
