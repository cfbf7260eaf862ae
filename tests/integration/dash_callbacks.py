"""Posting a Dash callback through Django as the dashboard's renderer does, for tests that
check a view's answer without a browser."""

from __future__ import annotations

import json
from collections.abc import Sequence

from django.test import Client

Prop = tuple[str, str]  # component id, property
Value = tuple[str, str, object]  # component id, property, value


def post_callback(
    client: Client,
    outputs: Sequence[Prop],
    inputs: Sequence[Value],
    state: Sequence[Value] = (),
    changed: str | None = None,
) -> dict:
    """The callback's ``response`` ({id: {property: value}}); {} when every output is unchanged
    (204). Dash names a single output ``id.prop`` and sends its spec alone, several as
    ``..id.prop...id.prop..`` and a list."""
    specs = [{"id": i, "property": p} for i, p in outputs]
    body = {
        "output": "...".join(f"{i}.{p}" for i, p in outputs).join(("..", "..") if len(outputs) > 1 else ("", "")),
        "outputs": specs if len(specs) > 1 else specs[0],
        "inputs": [{"id": i, "property": p, "value": v} for i, p, v in inputs],
        "state": [{"id": i, "property": p, "value": v} for i, p, v in state],
        "changedPropIds": [changed or f"{inputs[0][0]}.{inputs[0][1]}"],
    }
    response = client.post("/dashboard/_dash-update-component", json.dumps(body), content_type="application/json")
    if response.status_code == 204:
        return {}
    assert response.status_code == 200, response.content[:400]
    return response.json()["response"]
