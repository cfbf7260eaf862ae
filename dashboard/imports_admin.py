"""The admin's page of imported history (:mod:`historical.imported`): every import, and a
delete with a confirmation. Imports live in MongoDB, not in a Django model, so this is a plain
admin view (``/admin/imports/``) rather than a ModelAdmin; it takes the Site model's
permissions: view to list, change to delete."""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.views.decorators.http import require_http_methods

from query.runtime import get_imports

VIEW, CHANGE = "footfall_core.view_site", "footfall_core.change_site"


def imports_list(request: HttpRequest) -> HttpResponse:
    if not request.user.has_perm(VIEW):
        raise PermissionDenied
    context = {
        **admin.site.each_context(request),
        "title": "Imported history",
        "imports": get_imports().listed(),
        "may_delete": request.user.has_perm(CHANGE),
    }
    return TemplateResponse(request, "admin/imports.html", context)


@require_http_methods(["GET", "POST"])
def import_delete(request: HttpRequest, import_id: str) -> HttpResponse:
    if not request.user.has_perm(CHANGE):
        raise PermissionDenied
    one = get_imports().one(import_id)
    if one is None:
        raise Http404("no such import")
    if request.method == "POST":
        removed = get_imports().delete(import_id)
        messages.success(request, f"Deleted import {import_id} of {one.site_id}: {removed:,} documents.")
        return HttpResponseRedirect(reverse("imports-admin"))
    context = {**admin.site.each_context(request), "title": "Delete an import", "one": one}
    return TemplateResponse(request, "admin/import_delete.html", context)


urlpatterns = [
    path("", admin.site.admin_view(imports_list), name="imports-admin"),
    path("<str:import_id>/delete/", admin.site.admin_view(import_delete), name="import-admin-delete"),
]
