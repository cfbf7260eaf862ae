"""footfall.wsgi_request.Request: Django's Content-Type parsing, memoized, with the same answers."""

from __future__ import annotations

import io

import pytest
from django.core.handlers.wsgi import WSGIRequest

from footfall import wsgi_request
from footfall.wsgi_request import Request

HEADERS = [
    "",
    "application/json",
    "text/plain;charset=UTF-8",
    "text/plain; charset=latin-1",
    "TEXT/Plain; Charset=utf-8",
    "text/plain;charset=no-such-charset",
    'multipart/form-data; boundary="a b"',
    "application/x-www-form-urlencoded; charset=utf-8; extra=1",
]


def environ(content_type: str) -> dict[str, object]:
    return {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": "/collect",
        "QUERY_STRING": "a=1",
        "SERVER_NAME": "testserver",
        "SERVER_PORT": "80",
        "CONTENT_TYPE": content_type,
        "CONTENT_LENGTH": "0",
        "wsgi.input": io.BytesIO(b""),
    }


def facts(request: WSGIRequest) -> tuple[object, ...]:
    return request.content_type, request.content_params, request.encoding


@pytest.mark.parametrize("header", HEADERS)
def test_same_answers_as_django_first_time_and_from_the_memo(header: str) -> None:
    expected = facts(WSGIRequest(environ(header)))
    assert facts(Request(environ(header))) == expected
    assert facts(Request(environ(header))) == expected  # from the memo when the header has parameters


def test_an_invalid_rfc2231_charset_raises_like_django_and_is_not_memoized() -> None:
    header = "text/plain; charset*=no-such-codec''x"
    with pytest.raises(ValueError, match="Invalid encoding"):
        WSGIRequest(environ(header))
    with pytest.raises(ValueError, match="Invalid encoding"):
        Request(environ(header))
    assert header not in Request._memo


def test_each_request_gets_its_own_params_dict() -> None:
    first = Request(environ("text/plain;charset=UTF-8"))
    first.content_params["charset"] = "changed by a view"
    assert Request(environ("text/plain;charset=UTF-8")).content_params == {"charset": "UTF-8"}


def test_the_memo_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Request, "_memo", {})
    for n in range(wsgi_request.CACHE_SIZE * 3):
        Request(environ(f"text/plain; x={n}"))
        assert len(Request._memo) <= wsgi_request.CACHE_SIZE


def test_the_project_wsgi_application_uses_it() -> None:
    from footfall.wsgi import application

    assert application.request_class is Request
