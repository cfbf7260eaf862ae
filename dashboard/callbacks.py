"""Callbacks declared at module level and registered on an app later.

A page module decorates its top-level functions with ``callbacks.callback(...)`` (the arguments
of :meth:`dash.Dash.callback`) and its ``register(app)`` registers them all, in declaration
order, on the app :func:`dashboard.app.create_app` builds. Unlike ``dash.callback``, nothing is
left in Dash's process-wide list for whichever app serves a request first: every app built gets
every callback when it is built. The decorated functions stay plain functions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from dash import Dash

Function = TypeVar("Function", bound=Callable[..., object])


class Callbacks:
    """The callbacks one module declares, in order."""

    def __init__(self) -> None:
        self._declared: list[tuple[tuple[object, ...], dict[str, object], Callable[..., object]]] = []

    def callback(self, *args: object, **kwargs: object) -> Callable[[Function], Function]:
        """Declare the decorated function a callback with these outputs, inputs and states."""

        def declare(function: Function) -> Function:
            self._declared.append((args, kwargs, function))
            return function

        return declare

    def register(self, app: Dash) -> None:
        for args, kwargs, function in self._declared:
            app.callback(*args, **kwargs)(function)
