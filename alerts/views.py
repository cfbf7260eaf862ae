"""Pages reached from report emails: the signed unsubscribe link.

No sign-in: the signed token is the proof of being the recipient (see :mod:`alerts.report_mail`).
``GET`` shows what the link unsubscribes from and a button; ``POST`` unsubscribes, both the
button's and the one-click POST mail clients send for ``List-Unsubscribe-Post`` (RFC 8058),
which carries no CSRF token and no cookies, hence ``csrf_exempt``. Unsubscribing twice is
harmless: the second time says so and changes nothing.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from alerts.models import ReportSubscription
from alerts.report_mail import BadToken, subscription_for


@csrf_exempt
@never_cache
@require_http_methods(["GET", "POST"])
def unsubscribe(request: HttpRequest, token: str) -> HttpResponse:
    """Confirm (GET) or carry out (POST) the unsubscription ``token`` was signed for; 400 with
    the reason for a token that does not verify."""
    try:
        subscription = subscription_for(token)
    except BadToken as err:
        return render(request, "alerts/unsubscribe.html", {"state": "invalid", "reason": str(err)}, status=400)
    state = "confirm"
    if request.method == "POST":
        # A conditional update: of two POSTs racing, one unsubscribes and the other finds it done.
        done = ReportSubscription.objects.filter(pk=subscription.pk, unsubscribed_at__isnull=True).update(
            unsubscribed_at=timezone.now()
        )
        state = "done" if done else "already"
    elif subscription.unsubscribed_at is not None:
        state = "already"
    context = {"state": state, "subscription": subscription, "site_name": subscription.site.name}
    response = render(request, "alerts/unsubscribe.html", context)
    response["Referrer-Policy"] = "no-referrer"  # the token is in this page's address
    return response
