"""The plotly-Dash dashboard: live traffic, history and pipeline health, behind Django's login.

Django side (importable without Dash): :mod:`dashboard.models` (who may see which site,
public share links), :mod:`dashboard.access` (the sites a request may read),
:mod:`dashboard.views` (login, share links, and the view that forwards ``/dashboard/…`` to
the Dash app in the same process). Dash side: :mod:`dashboard.app` (factory), the frame
:mod:`dashboard.shell`, one module per page holding its layout and its callbacks
(:mod:`dashboard.live`, :mod:`dashboard.history` with :mod:`dashboard.conversion_panels`,
:mod:`dashboard.health`, :mod:`dashboard.alerts`), the pieces they share
(:mod:`dashboard.components`, :mod:`dashboard.callbacks`), and pure data → figure and rows
(:mod:`dashboard.figures`, :mod:`dashboard.tables`, :mod:`dashboard.conversions`,
:mod:`dashboard.alerts_rows`).
"""
