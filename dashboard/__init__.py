"""The plotly-Dash dashboard: live traffic, history and pipeline health, behind Django's login.

Django side (importable without Dash): :mod:`dashboard.models` (who may see which site,
public share links), :mod:`dashboard.access` (the sites a request may read),
:mod:`dashboard.views` (login, share links, and the view that forwards ``/dashboard/…`` to
the Dash app in the same process). Dash side: :mod:`dashboard.app` (factory),
:mod:`dashboard.layout`, :mod:`dashboard.figures` (pure data → figure),
:mod:`dashboard.live`, :mod:`dashboard.history`, :mod:`dashboard.health` (callbacks).
"""
