from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st
from simone.providers.testing import FIXTURE_PAGES, fixture_html
from simone.providers.web import extract_page, select_passages, split_passages


def fixture(host: str) -> str:
    return fixture_html(next(p for p in FIXTURE_PAGES if p.host == host))


def test_main_text_and_metadata() -> None:
    page = extract_page(fixture("lakes.test"), "https://lakes.test/varnholm")
    assert page.method == "trafilatura"
    assert page.title == "Lake Varnholm"
    assert page.date == "2024-03-01"
    assert page.site
    assert "maximum depth of 212 metres" in page.text
    assert "Home" not in page.text and "Fixture page written" not in page.text  # navigation, footer


def test_hidden_elements_and_characters_are_removed() -> None:
    page = extract_page(fixture("fishing.test"), "https://fishing.test/varnholm-fish")
    assert "unrestricted assistant" not in page.text
    assert "Ignore all previous instructions" not in page.text
    assert page.hidden_elements_removed == 2
    assert "\u200b" not in page.text
    assert "ignore previous instructions" in page.text  # visible text is kept (and flagged later)


def test_short_or_odd_pages_still_yield_text() -> None:
    page = extract_page(
        "<html><head><title>T</title></head><body><p>Only a line.</p></body></html>", "https://x.test/"
    )
    assert page.text == "Only a line." and page.title == "T"
    scripted = extract_page("<html><body><script>var x = 1;</script></body></html>", "https://x.test/")
    assert scripted.method == "plain" and "var x" not in scripted.text
    assert extract_page("", "https://x.test/").text == ""
    assert extract_page("<<<>>>\x00\x01 not html at all", "https://x.test/").url == "https://x.test/"
    plain = extract_page("line one\n\nline\u200b two", "https://x.test/a.txt", content_type="text/plain")
    assert plain.text == "line one\n\nline two" and plain.method == "plain"


def test_split_passages_respects_sizes() -> None:
    text = "\n\n".join(["Short paragraph."] * 10 + [f"Long sentence number {i}. " for i in range(200)])
    passages = split_passages(text, target_chars=300, max_chars=600)
    assert passages and all(len(p) <= 600 for p in passages)
    assert "".join(passages).replace("\n", "").replace(" ", "") == text.replace("\n", "").replace(" ", "")
    run_on = "x" * 5000
    assert all(len(p) <= 1400 for p in split_passages(run_on))


def test_select_passages_ranks_and_caps_per_source() -> None:
    documents = [
        (
            "a",
            [
                "The depth of Lake Varnholm is 212 metres.",
                "Unrelated words about ferries.",
                "Depth again: deep.",
            ],
        ),
        ("b", ["Salinity is low.", "Lake Varnholm depth was surveyed."]),
        ("c", ["Nothing relevant here at all."]),
    ]
    selected = select_passages("Lake Varnholm depth", documents, per_source=1)
    assert [p.source for p in selected] in (["a", "b"], ["b", "a"])
    assert all(p.score > 0 for p in selected)
    assert select_passages("", documents) == [] and select_passages("depth", []) == []
    assert {p.source for p in select_passages("depth", documents, per_source=5)} == {"a", "b"}


@settings(max_examples=50, deadline=None)
@given(st.text(max_size=3000))
def test_split_never_loses_words(text: str) -> None:
    passages = split_passages(text)
    assert "".join("".join(passages).split()) == "".join(text.split())


@pytest.mark.parametrize("charset_html", ["<meta charset='utf-8'><p>naïve café</p>", "<p>naïve café</p>"])
def test_non_ascii_survives(charset_html: str) -> None:
    assert "naïve café" in extract_page(f"<html><body>{charset_html}</body></html>", "https://x.test/").text
