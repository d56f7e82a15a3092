"""``loads_untrusted``: JSON from outside, with a depth limit and one error type for every bad input."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, strategies as st
from simone.runtime import MAX_JSON_DEPTH, JSONTooDeep, loads_untrusted


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("depth", [1, 10, MAX_JSON_DEPTH])
def test_nesting_up_to_the_limit_decodes(depth: int) -> None:
    value = loads_untrusted(_nested(depth))
    for _ in range(depth - 1):
        (value,) = value
    assert value == []


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 1000, 100_000])
def test_deeper_nesting_is_refused_as_a_decode_error(depth: int) -> None:
    with pytest.raises(JSONTooDeep, match="nested deeper than 100") as info:
        loads_untrusted(_nested(depth))
    assert isinstance(info.value, json.JSONDecodeError) and isinstance(info.value, ValueError)
    deep_object = '{"a":' * depth + "1" + "}" * depth
    with pytest.raises(JSONTooDeep):
        loads_untrusted(deep_object.encode())


def test_the_limit_can_be_set_and_bad_text_is_a_value_error() -> None:
    assert loads_untrusted('{"a": [1]}', max_depth=2) == {"a": [1]}
    with pytest.raises(JSONTooDeep, match="deeper than 1 "):
        loads_untrusted('{"a": [1]}', max_depth=1)
    assert loads_untrusted("3") == 3
    for bad in (b'{"a": "\xff"}', b"not json", "{", ""):
        with pytest.raises(ValueError):
            loads_untrusted(bad)


@given(
    st.recursive(
        st.none() | st.integers() | st.text(),
        lambda c: st.lists(c) | st.dictionaries(st.text(), c),
        max_leaves=20,
    )
)
def test_whatever_json_dumps_writes_within_the_limit_comes_back(value: object) -> None:
    assert loads_untrusted(json.dumps(value)) == value
