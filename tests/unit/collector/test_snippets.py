"""The snippets a site installs, exactly as the installation check prints them."""

from __future__ import annotations

from collector.snippets import middleware_settings, script_tag

SRI = "sha384-abc+/="


def test_the_default_tag_names_the_site_and_pins_the_build() -> None:
    assert script_tag("https://stats.example.com", "my-site", SRI) == (
        '<script defer src="https://stats.example.com/footfall.js" data-site="my-site" '
        f'integrity="{SRI}" crossorigin="anonymous"></script>'
    )


def test_chosen_names_appear_with_their_endpoint() -> None:
    tag = script_tag("https://stats.example.com", "my-site", SRI, "/js/site.js", "/e/site")
    assert 'src="https://stats.example.com/js/site.js"' in tag
    assert 'data-endpoint="https://stats.example.com/e/site"' in tag


def test_without_a_build_there_is_no_integrity() -> None:
    assert "integrity" not in script_tag("https://stats.example.com", "my-site", None)


def test_the_middleware_block_is_settings_python_can_run() -> None:
    block = middleware_settings("https://stats.example.com", "my-site")
    settings: dict[str, object] = {"MIDDLEWARE": []}
    exec(block, settings)
    assert settings["FOOTFALL_SITE_ID"] == "my-site"
    assert settings["FOOTFALL_COLLECTOR_URL"] == "https://stats.example.com"
    assert settings["MIDDLEWARE"] == ["footfall_capture.middleware.ClickstreamMiddleware"]
