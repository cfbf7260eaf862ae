"""Which sites a dashboard request may read, decided once per request by the Django view.

The decision is an :class:`Access` value put into the WSGI environ of the forwarded
request; every Dash callback reads it back with :func:`current` and asks
:meth:`Access.site` for the site it was sent — a site id from the browser is never
trusted, only looked up among the allowed ones.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from django.http import HttpRequest

from dashboard import messages
from dashboard.models import ShareLink, SiteAccess
from footfall.config import footfall_config
from footfall.models import Site
from query.service import QuerySite

ENVIRON_KEY = "footfall.dashboard.access"
SESSION_SHARES = "footfall_share_links"  # ids of share links opened in this session
DEFINITION_VIEW_PERMISSIONS = ("footfall_core.view_goal", "footfall_core.view_funnel")
# Changing a site's alert settings on the Alerts page takes Django's model permission for the
# change (add, change or delete of a rule, channel or subscription) on top of the site's grant.
ALERT_MODELS = ("alertrule", "channel", "reportsubscription")
ALERT_PERMISSIONS = tuple(f"footfall_alerts.{a}_{m}" for m in ALERT_MODELS for a in ("add", "change", "delete"))


@dataclass(frozen=True, slots=True)
class SiteChoice:
    site_id: str
    name: str
    tz: str
    imports_win: bool = False

    @property
    def info(self) -> QuerySite:
        return QuerySite(self.site_id, self.tz, self.imports_win)


@dataclass(frozen=True, slots=True)
class Access:
    """What one request may see: sites (in display order), and whether it is a signed-in user."""

    sites: tuple[SiteChoice, ...] = ()
    username: str | None = None  # None: an anonymous visitor holding share links
    staff: bool = False
    shared_revoked: bool = field(default=False)  # a share link of this session was revoked
    # May open the admin pages of goals and funnels (staff with the view permissions).
    definitions_admin: bool = False
    # Sites granted to the signed-in user (staff: all), not merely opened through a share link.
    granted: frozenset[str] = frozenset()
    alert_permissions: frozenset[str] = frozenset()  # those of ALERT_PERMISSIONS the user holds
    base_url: str = ""  # the server as this request reached it ("https://stats.example.com"), for snippets

    @property
    def signed_in(self) -> bool:
        return self.username is not None

    @property
    def can_see_health(self) -> bool:
        """Pipeline health is for signed-in users; share links show traffic only."""
        return self.signed_in

    def site(self, site_id: object) -> SiteChoice | None:
        """The allowed site ``site_id``, or None (not allowed, unknown or not a string)."""
        return next((s for s in self.sites if s.site_id == site_id), None)

    def alerts_site(self, site_id: object) -> SiteChoice | None:
        """The site ``site_id`` if its alert settings may be seen: signed in and granted the
        site (a share link shows traffic, not who is alerted where); None otherwise."""
        return self.site(site_id) if self.signed_in and site_id in self.granted else None

    def may(self, permission: str) -> bool:
        """Does the user hold ``permission`` (one of :data:`ALERT_PERMISSIONS`)?"""
        return permission in self.alert_permissions


def _choices(sites: Iterable[Site]) -> tuple[SiteChoice, ...]:
    unique = {s.site_id: SiteChoice(s.site_id, s.name or s.site_id, s.timezone, s.imports_win) for s in sites}
    return tuple(sorted(unique.values(), key=lambda c: c.site_id))


def access_for(request: HttpRequest) -> Access:
    """The sites ``request``'s user may read, plus those of the share links of its session."""
    user = request.user
    sites: list[Site] = []
    if user.is_authenticated:
        if user.is_staff or user.is_superuser:
            sites.extend(Site.objects.all())
        else:
            sites.extend(a.site for a in SiteAccess.objects.filter(user=user).select_related("site"))
    granted = frozenset(s.site_id for s in sites)
    share_ids = request.session.get(SESSION_SHARES, [])
    live = list(ShareLink.live().filter(id__in=share_ids).select_related("site"))  # expired ones drop out too
    sites.extend(link.site for link in live)
    return Access(
        sites=_choices(sites),
        username=user.get_username() if user.is_authenticated else None,
        staff=bool(user.is_authenticated and (user.is_staff or user.is_superuser)),
        shared_revoked=len(live) < len(share_ids),
        definitions_admin=bool(user.is_authenticated and user.is_staff and user.has_perms(DEFINITION_VIEW_PERMISSIONS)),
        granted=granted,
        alert_permissions=frozenset(p for p in ALERT_PERMISSIONS if user.is_authenticated and user.has_perm(p)),
        base_url=request.build_absolute_uri("/").rstrip("/"),
    )


def has_any_grant(request: HttpRequest) -> bool:
    """May this request load the dashboard's code at all (signed in, or holds a share link)?"""
    return bool(request.user.is_authenticated or request.session.get(SESSION_SHARES))


def current() -> Access:
    """The :class:`Access` of the Dash request being served (empty outside the forwarding view)."""
    import flask  # the Dash side only: Django imports this module without needing Flask

    access = flask.request.environ.get(ENVIRON_KEY)
    return access if isinstance(access, Access) else Access()


def problem_for_viewer(exc: BaseException) -> str:
    """What the viewer of the current Dash request is told about a failed query: signed-in
    users get the service and what to do, share-link visitors nothing about the deployment."""
    return messages.problem(exc, footfall_config(), public=not current().signed_in)
