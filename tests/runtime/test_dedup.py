from __future__ import annotations

import pytest
from hypothesis import given, strategies as st
from simone.runtime.ranking import (
    DuplicateFinder,
    normalize_url,
    unique_urls,
)


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("https://Example.com/a/", "https://example.com/a"),
        ("HTTP://EXAMPLE.COM/a", "https://example.com/a"),
        ("https://example.com/a#section-2", "https://example.com/a"),
        ("https://example.com/a?utm_source=x&utm_medium=y", "https://example.com/a"),
        ("https://example.com/a?b=2&a=1", "https://example.com/a?a=1&b=2"),
        ("https://example.com:443/a", "https://example.com/a"),
        ("http://example.com:80/a", "https://example.com/a"),
        ("https://www.example.com/a", "https://example.com/a"),
        ("https://example.com/a?fbclid=abc&gclid=def", "https://example.com/a"),
        ("https://user:pw@example.com/a", "https://example.com/a"),
        ("https://example.com/%7Euser", "https://example.com/~user"),
        ("https://bücher.example/x", "https://xn--bcher-kva.example/x"),
    ],
)
def test_spellings_of_one_page_normalise_alike(left: str, right: str) -> None:
    assert normalize_url(left) == normalize_url(right)


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("https://example.com/a", "https://example.com/b"),
        ("https://example.com/a?id=1", "https://example.com/a?id=2"),
        ("https://example.com:8443/a", "https://example.com/a"),
        ("https://example.org/a", "https://example.com/a"),
    ],
)
def test_different_pages_stay_different(left: str, right: str) -> None:
    assert normalize_url(left) != normalize_url(right)


def test_non_urls_pass_through() -> None:
    assert normalize_url("  docs/a.md#L1-L3 ") == "docs/a.md#L1-L3"
    assert normalize_url("javascript:alert(1)") == "javascript:alert(1)"


@given(st.text(max_size=200))
def test_normalisation_never_raises_and_is_idempotent_on_urls(text: str) -> None:
    once = normalize_url(text)
    assert normalize_url(once) == once or not once.startswith("https://")


def test_unique_urls_keeps_first_spelling() -> None:
    urls = [
        "https://Example.com/page/",
        "http://example.com/page",
        "https://www.example.com/page#top",
        "https://example.com/page?utm_campaign=z",
        "https://example.com:443/page",
        "https://example.com/other",
    ]
    assert unique_urls(urls) == ["https://Example.com/page/", "https://example.com/other"]


def test_finder_detects_digest_url_and_near_duplicates() -> None:
    finder = DuplicateFinder()
    text = (
        "Reciprocal rank fusion adds one over sixty plus the rank for every list an item appears in. "
        "It needs no score calibration, which is why hybrid search engines use it to merge lexical and "
        "semantic rankings. Items found by both legs rise to the top, and the constant damps the head."
    )
    assert finder.check("a", "d1", "https://example.com/x", text) is None
    assert finder.check("b", "d1", "other", "anything") == ("a", "same content digest")
    assert finder.check("c", "d2", "https://www.example.com/x/", "different text") == (
        "a",
        "same normalised URL",
    )
    near = text.replace("the head.", "the head!")
    assert finder.check("d", "d3", "doc#3", near) == ("a", "near-duplicate text")
    assert finder.check("e", "d4", "doc#4", "An unrelated passage about cheese making in the Alps.") is None


def test_near_duplicates_work_without_spaces() -> None:
    finder = DuplicateFinder()
    text = "東京都の運転免許証の更新は警察署または運転免許センターで行うことができます。" * 3
    assert finder.check("a", "d1", "ja#1", text) is None
    assert finder.check("b", "d2", "ja#2", text + "。") == ("a", "near-duplicate text")


def test_chunks_of_one_file_behind_a_repository_url_stay_apart() -> None:
    # [index] locator_base turns chunk locators into repository URLs; each chunk is its own evidence
    finder = DuplicateFinder()
    base = "https://github.com/acme/docs/blob/main/guide.md"
    assert finder.check("a", "d1", f"{base}#L1-L20", "How to install the tool on a new machine.") is None
    assert finder.check("b", "d2", f"{base}#L21-L40", "Configuring the gateway timeout and retries.") is None
    assert finder.check("c", "d3", "https://x.test/r.pdf#page=2", "The second page of the report.") is None
    assert finder.check("d", "d4", "https://x.test/r.pdf#page=3", "The third page of the report.") is None
    # the same chunk twice is still one, and a web page's #section still names the same page
    assert finder.check("e", "d5", f"{base}#L1-L20", "Some other text entirely, as fetched.") == (
        "a",
        "same normalised URL",
    )
    assert finder.check("f", "d6", "https://blog.test/post", "A post about deploys on Tuesdays.") is None
    assert finder.check("g", "d7", "https://blog.test/post#comments", "Different text under the post.") == (
        "f",
        "same normalised URL",
    )


def test_two_chunks_of_one_pdf_page_behind_a_url_are_both_kept_by_the_router() -> None:
    # two chunks of one long page share the locator "…/report.pdf#page=3": it cites them, it is not
    # what they are; only their digests and texts could make them duplicates
    finder = DuplicateFinder()
    page = "https://github.com/acme/docs/blob/main/report.pdf#page=3"
    first = "Quarterly revenue grew in every region, led by the north."
    second = "Costs fell after the move to the new supplier in March."
    assert finder.check("a", "d1", page, first, by_url=False) is None
    assert finder.check("b", "d2", page, second, by_url=False) is None
    assert finder.check("c", "d1", page, first, by_url=False) == ("a", "same content digest")


def test_the_router_keeps_both_chunks_of_one_page_behind_a_repository_url() -> None:
    import anyio
    from simone.providers.testing import StaticProvider
    from simone.runtime import Evidence, ProviderKind, Router, TrustedContext

    page = "https://github.com/acme/docs/blob/main/report.pdf#page=3"
    chunks = [
        Evidence.create(
            provider="document-index", provider_name="documents", locator=page, title="Report", content=text
        )
        for text in (
            "Quarterly revenue grew in every region, led by the north.",
            "Quarterly costs fell after the move to the new supplier in March.",
        )
    ]
    router = Router([StaticProvider("documents", chunks, kind=ProviderKind.DOCUMENT_INDEX)])

    async def go() -> int:
        result = await router.retrieve(router.request("quarterly"), TrustedContext(actor="alice"))
        return len(result.evidence)

    assert anyio.run(go) == 2
