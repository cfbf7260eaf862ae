"""Bearer tokens: the shape, the lookup prefix, and that only a digest needs storing."""

from __future__ import annotations

import pytest

from footfall import tokens


def test_issued_token_is_found_by_its_prefix_and_matches_only_its_digest() -> None:
    new = tokens.issue("fs", 24)
    assert new.token.startswith(f"fs_{new.prefix}_")
    assert len(new.prefix) == 12
    assert new.digest != new.token
    assert new.token not in new.digest
    assert tokens.prefix_of(new.token, "fs") == new.prefix
    assert tokens.matches(new.digest, new.token)
    assert not tokens.matches(new.digest, new.token[:-1] + ("A" if new.token[-1] != "A" else "B"))
    assert tokens.issue("fs", 24).token != new.token


@pytest.mark.parametrize("presented", ["", "fs", "fs_abc", "ff_0123456789ab_x", "fs_" + "a" * 300, "x_y_z"])
def test_what_cannot_be_a_token_of_the_kind_has_no_prefix(presented: str) -> None:
    assert tokens.prefix_of(presented, "fs") is None


def test_too_little_randomness_is_refused() -> None:
    with pytest.raises(ValueError, match="24 random bytes"):
        tokens.issue("ff", 16)
