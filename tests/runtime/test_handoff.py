"""The typed hand-off between provider factories and the runtime: keys, the opening order, the one parser."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict
from simone.runtime import (
    ConfigError,
    InvalidRequest,
    OpenedProviders,
    ProviderFactory,
    ProviderRegistry,
    ProviderSetup,
    Published,
    ScopeViolation,
    Shared,
    parse_tool_arguments,
)


class Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    size: int = 1


class Args(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    query: str
    limit: int = 3


NUMBER: Shared[int] = Shared("number", int)
WORD: Shared[str] = Shared("word", lambda: str)  # resolved on first use


def test_a_key_carries_its_type_and_refuses_another() -> None:
    published = Published({NUMBER: 7})
    published.put(WORD, "seven")
    assert published.get(NUMBER) == 7 and published.require(WORD) == "seven"
    assert published.names() == ["number", "word"] and len(published) == 2 and NUMBER in published
    with pytest.raises(ConfigError, match="'number' is a str, not a int"):
        published.put(NUMBER, "eight")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="two different keys named 'number'"):
        published.put(Shared("number", int), 8)
    empty = Published()
    assert empty.get(NUMBER) is None
    with pytest.raises(ConfigError, match="no provider factory published 'number'"):
        empty.require(NUMBER)
    # a reader's copy is its own: what it adds does not reach the original
    view = published.copy()
    view.put(Shared("other", int), 1)
    assert published.names() == ["number", "word"]


async def _nothing(setup: ProviderSetup[Section]) -> OpenedProviders:
    return OpenedProviders()


def _factory(
    section: str,
    *,
    order: int = 100,
    reads: tuple[Shared[object], ...] = (),
    publishes: tuple[Shared[object], ...] = (),
) -> ProviderFactory[Section]:
    return ProviderFactory(
        section=section, settings=Section, open=_nothing, order=order, reads=reads, publishes=publishes
    )


def test_the_opening_order_is_by_order_then_registration_with_readers_after_publishers() -> None:
    registry = ProviderRegistry(
        [
            _factory("reader", order=5, reads=(NUMBER,)),
            _factory("mine"),
            _factory("publisher", order=30, publishes=(NUMBER,)),
            _factory("first", order=10),
        ]
    )
    assert [f.section for f in registry.ordered()] == ["first", "publisher", "reader", "mine"]
    assert registry.sections() == ["reader", "mine", "publisher", "first"]  # registration order kept
    circle = ProviderRegistry(
        [_factory("a", reads=(NUMBER,), publishes=(WORD,)), _factory("b", reads=(WORD,), publishes=(NUMBER,))]
    )
    with pytest.raises(ConfigError, match="a, b read each other's published keys in a circle"):
        circle.ordered()


def test_the_one_argument_parser() -> None:
    assert parse_tool_arguments("t", Args, '{"query": "x"}') == Args(query="x")
    assert parse_tool_arguments("t", Args, {"query": "x", "limit": 2}).limit == 2
    same = Args(query="y")
    assert parse_tool_arguments("t", Args, same) is same
    with pytest.raises(InvalidRequest, match="not valid JSON"):
        parse_tool_arguments("t", Args, "{nope")
    with pytest.raises(InvalidRequest, match="must be a JSON object, not list"):
        parse_tool_arguments("t", Args, "[1]")
    with pytest.raises(
        InvalidRequest, match=r"invalid arguments for 't': query: Field required; limit: Input"
    ):
        parse_tool_arguments("t", Args, {"limit": "many"})
    with pytest.raises(ScopeViolation, match=r"carries scope of its own \(Actor\)"):
        parse_tool_arguments("t", Args, {"query": "x", "nested": [{"Actor": "bob"}]})
    with pytest.raises(ScopeViolation, match="caller"):
        parse_tool_arguments("t", Args, {"query": "x", "caller": "system"}, forbidden={"caller"})
    # no arguments at all (None, or blank text) are an empty object: fine for a model without required fields
    assert parse_tool_arguments("t", Section, None) == Section()
    assert parse_tool_arguments("t", Section, "  ") == Section()
    with pytest.raises(InvalidRequest, match="query: Field required"):
        parse_tool_arguments("t", Args, None)
