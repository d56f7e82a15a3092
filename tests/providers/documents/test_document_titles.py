"""Document titles: the first heading outside code (Markdown, reStructuredText, HTML), else the file name.

Every case is a real file in a temporary folder, found by :func:`discover` and read by :func:`load_file`.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from simone.providers.documents import (
    Chunker,
    DocumentIndex,
    DocumentIndexProvider,
    DocumentStore,
    HFTokenCounter,
    LoadedDocument,
    SkippedFile,
    SourceFile,
    discover,
    load_file,
)
from simone.providers.documents._loaders import TITLE_MAX_CHARS
from simone.providers.embeddings import load_tokenizer
from simone.providers.testing import HashEmbedder
from simone.runtime import EmbeddingChain, Router, SearchMode, TrustedContext

LIMIT = 10 * 1024 * 1024


def _load(path: Path) -> LoadedDocument | SkippedFile:
    found = list(discover([path], max_file_bytes=LIMIT))
    assert len(found) == 1 and isinstance(found[0], SourceFile), found
    return load_file(found[0], LIMIT)


def _title(folder: Path, name: str, content: str | bytes) -> str:
    path = folder / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    doc = _load(path)
    assert isinstance(doc, LoadedDocument), doc
    return doc.title


# A library's docs open with a code sample whose comments start with "#": none of them is a title.
FENCED = {
    "backticks with a language": "```python\n# Configure the client\nclient = Client()\n```\n\n# Client guide\n",
    "tildes": "~~~\n# not a title\n~~~\n\n# Client guide\n",
    "tildes with a language": "~~~ {.bash}\n# install\npip install lib\n~~~\n# Client guide\n",
    "a longer fence holding a shorter one": (
        "````markdown\n```\n# inner\n```\n# still inside\n````\n\n# Client guide\n"
    ),
    "tildes holding backticks": "~~~\n```\n# inside\n~~~\n# Client guide\n",
    "a fence closed by a longer one": "```\n# inside\n`````\n# Client guide\n",
    "an indented fence in a list item": (
        "1. Install it:\n\n    ```bash\n    # the package\n    pip install lib\n    ```\n\n# Client guide\n"
    ),
    "a fence on a list item's line": "- ```sh\n  # inside\n  ```\n\n# Client guide\n",
    "a fence in a block quote": "> ```\n> # quoted\n> ```\n\n# Client guide\n",
    "indented code": "Example:\n\n    # a shell comment\n    run it\n\n# Client guide\n",
    "an HTML comment": "<!--\n# Draft title\n-->\n# Client guide\n",
}


@pytest.mark.parametrize("name", sorted(FENCED))
def test_a_comment_in_code_is_never_the_title(tmp_path: Path, name: str) -> None:
    assert _title(tmp_path, "guide.md", FENCED[name]) == "Client guide"


def test_code_before_any_heading_leaves_the_file_name(tmp_path: Path) -> None:
    text = "Install the package:\n\n```bash\n# Install the package\npip install lib\n```\n\nThat is all.\n"
    assert _title(tmp_path, "install.md", text) == "install.md"


def test_an_unclosed_fence_hides_every_heading_after_it(tmp_path: Path) -> None:
    text = "Intro.\n\n```python\n# comment\n\n# Looks like a heading\nprint(1)\n"
    assert _title(tmp_path, "broken.md", text) == "broken.md"


def test_a_heading_before_an_unclosed_fence_still_counts(tmp_path: Path) -> None:
    assert _title(tmp_path, "b.md", "# Usage\n\n```\n# comment\n") == "Usage"


def test_inline_code_of_three_backticks_opens_no_fence(tmp_path: Path) -> None:
    assert _title(tmp_path, "i.md", "```code``` is inline.\n\n# Real title\n") == "Real title"


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("Client guide\n============\n\nBody.\n", "Client guide"),
        ("Client guide\n=\n", "Client guide"),
        ("Client guide\n---\n\nBody.\n", "Client guide"),  # opens the file: a setext level 2 still titles it
        ("Intro paragraph.\n\nSection\n-------\n", "s.md"),  # a section further down is no title
        ("Intro.\n\nSection\n-------\n\nClient guide\n============\n", "Client guide"),
        ("Two lines of\na paragraph\n===\n\nReal\n====\n", "Real"),
        ("---\n\nClient guide\n============\n", "Client guide"),  # a thematic break, then the heading
    ],
)
def test_setext_headings(tmp_path: Path, text: str, title: str) -> None:
    assert _title(tmp_path, "s.md", text) == title


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("## Installation\n\nText.\n\n# Client guide\n", "Client guide"),  # level 1 wins
        ("## Installation\n\nText.\n", "Installation"),  # the file opens with it
        ("Some intro.\n\n## Installation\n", "a.md"),
        ("# C#\n", "C#"),
        ("# Client guide ##\n", "Client guide"),
        ("# Client guide {#guide .wide}\n", "Client guide"),
        ("#hashtag\n\n# Client guide\n", "Client guide"),
        ("#\n\n# Client guide\n", "Client guide"),
        ("    # four spaces: code\n\n# Client guide\n", "Client guide"),
        ("- # in a list\n\n# Client guide\n", "Client guide"),
    ],
)
def test_atx_headings(tmp_path: Path, text: str, title: str) -> None:
    assert _title(tmp_path, "a.md", text) == title


@pytest.mark.parametrize(
    ("heading", "title"),
    [
        ("**Client** guide", "Client guide"),
        ("The `Client` class", "The Client class"),
        ("``a ` b`` spans", "a ` b spans"),
        ("[Client](api/client.md) guide", "Client guide"),
        ("[Client][ref] guide", "Client guide"),
        ("![logo](logo.png) Client guide", "logo Client guide"),
        ("*Emphasis* and _underscores_ and ~~struck~~", "Emphasis and underscores and struck"),
        ("**nested *emphasis* here**", "nested emphasis here"),
        ("snake_case_name stays", "snake_case_name stays"),
        (r"\*literal stars\*", "*literal stars*"),
        ("<code>Client</code> &amp; friends", "Client & friends"),
        ("See <https://example.org>", "See https://example.org"),
        ("2 * 3 * 4", "2 * 3 * 4"),
    ],
)
def test_inline_markdown_is_reduced_to_its_text(tmp_path: Path, heading: str, title: str) -> None:
    assert _title(tmp_path, "m.md", f"# {heading}\n\nBody.\n") == title
    assert _title(tmp_path, "s.md", f"{heading}\n{'=' * 60}\n\nBody.\n") == title


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ('---\ntitle: "Client guide: the basics"\nsidebar: 2\n---\n# Other\n', "Client guide: the basics"),
        ("---\nlayout: page\ntitle: 'It''s here'\n---\n", "It's here"),
        ("---\ntitle: Plain value # a comment\n---\nBody.\n", "Plain value"),
        ("---\ntitle: >\n  Folded\n  title\n---\nBody.\n", "Folded title"),
        ("---\nmeta:\n  title: nested\n---\n# Client guide\n", "Client guide"),
        ("---\nlayout: page\n---\n```\n# code\n```\n# Client guide\n", "Client guide"),
        ('+++\ntitle = "Hugo page"\n+++\nBody.\n', "Hugo page"),
        ("---\nnever closed\n\n# Client guide\n", "Client guide"),
    ],
)
def test_front_matter(tmp_path: Path, text: str, title: str) -> None:
    assert _title(tmp_path, "f.md", text) == title


@pytest.mark.parametrize(
    ("name", "text", "title"),
    [
        ("a.rst", "==============\n Client guide\n==============\n\nBody.\n", "Client guide"),
        ("a.rst", "Client guide\n############\n", "Client guide"),
        ("a.rst", "Client guide\n~~~~~~~~~~~~~~~~~~~~\n", "Client guide"),
        ("a.rst", "Client guide\n****\n\nInstall\n^^^^^^^\n", "Install"),  # underline too short
        ("a.rst", "=====\nTitle\n-----\n\nReal\n====\n", "Real"),  # over- and underline differ
        ("a.rst", ".. _label:\n\n:orphan:\n\nClient guide\n------------\n", "Client guide"),
        (
            "a.rst",
            "Example::\n\n    Not a title\n    ===========\n\nClient guide\n============\n",
            "Client guide",
        ),
        (
            "a.rst",
            ".. code-block:: rst\n\n   Inside\n   ======\n\nClient guide\n============\n",
            "Client guide",
        ),
        (
            "a.rst",
            "A paragraph line\nNot a title\n===========\n\nClient guide\n============\n",
            "Client guide",
        ),
        ("a.rst", "``Client`` and :class:`Pool`\n============================\n", "Client and Pool"),
        (
            "a.rst",
            ":doc:`Guide <guide>` and `links`_\n==================================\n",
            "Guide and links",
        ),
        ("a.rst", "使い方\n======\n", "使い方"),  # wide characters count two columns
        ("a.rst", "使い方の案内\n======\n\nNext\n====\n", "Next"),
        ("a.rst", "No title here.\n\nJust prose.\n", "a.rst"),
        ("notes.txt", "Meeting notes\n=============\n\nWe met.\n", "Meeting notes"),
        ("README", "Project\n=======\n\nAbout it.\n", "Project"),
        ("a.rst", "=====  =====\nName   Value\n=====  =====\n\nClient guide\n------------\n", "Client guide"),
    ],
)
def test_restructuredtext_section_titles(tmp_path: Path, name: str, text: str, title: str) -> None:
    assert _title(tmp_path, name, text) == title


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("tool.py", "# Configure the client\nimport os\n"),
        ("run.sh", "#!/bin/sh\n# Client guide\necho hi\n"),
        ("data.csv", "name\n====\n"),
        ("notes.adoc", "Client guide\n============\n"),
        ("plain.md", "No heading at all, only prose.\n"),
    ],
)
def test_files_without_a_heading_take_their_name(tmp_path: Path, name: str, text: str) -> None:
    assert _title(tmp_path, name, text) == name


ARTICLE = " ".join(["The refund window is thirty days from delivery for every order."] * 6)


def test_html_keeps_trafilaturas_title_without_a_headerlink_mark(tmp_path: Path) -> None:
    page = (
        "<html><head><title>Configuration &#8212; lib 1.0 documentation</title></head><body>"
        "<div class='body'><section><h1>Configuration<a class='headerlink' href='#c'>¶</a></h1>"
        f"<p>{ARTICLE}</p></section></div></body></html>"
    )
    path = tmp_path / "config.html"
    path.write_text(page, encoding="utf-8")
    doc = _load(path)
    assert isinstance(doc, LoadedDocument)
    assert doc.title == "Configuration"
    assert doc.text.startswith("# Configuration\n")


def test_html_falls_back_to_the_title_element(tmp_path: Path) -> None:
    page = (
        "<html><head><svg><title>icon</title></svg><title>Refund &amp; returns</title></head>"
        f"<body><h1>¶</h1><article><p>{ARTICLE}</p></article></body></html>"
    )
    assert _title(tmp_path, "r.html", page) == "Refund & returns"


def test_html_falls_back_to_the_first_h1_with_text(tmp_path: Path) -> None:
    page = (
        "<html><body><!-- <h1>Commented out</h1> --><h1>¶</h1>"
        f"<h1>Refund <em>policy</em></h1><article><p>{ARTICLE}</p></article></body></html>"
    )
    assert _title(tmp_path, "r.html", page) == "Refund policy"


def test_html_without_any_title_takes_the_file_name(tmp_path: Path) -> None:
    assert _title(tmp_path, "plain.html", f"<html><body><p>{ARTICLE}</p></body></html>") == "plain.html"


@pytest.mark.parametrize(
    "text",
    [
        '<h1 align="center">Client guide</h1>\n\nBody.\n',
        '<h1 align="center">\n  <img src="logo.svg" alt="">\n  <br>Client guide\n</h1>\n',
        '<h1 align="center"><img src="logo.svg" alt="Client guide"></h1>\n',
        '<p align="center"><img src="banner.png"></p>\n\n<H1>Client guide</H1>\n',
        "```html\n<h1>Sample page</h1>\n```\n\n<h1>Client guide</h1>\n",
    ],
)
def test_an_html_h1_in_markdown_is_a_title(tmp_path: Path, text: str) -> None:
    assert _title(tmp_path, "README.md", text) == "Client guide"


def test_hostile_files_load_with_a_bounded_title(tmp_path: Path) -> None:
    long_heading = "# " + "word " * 200_000 + "\n\n# Client guide\n"
    assert _title(tmp_path, "long.md", long_heading) == "Client guide"  # a 1 MB line is no title
    one_line = "x" * 3_000_000
    assert _title(tmp_path, "one.md", one_line) == "one.md"
    unclosed = "```\n" + "# not a title\n" * 100_000
    assert _title(tmp_path, "unclosed.md", unclosed) == "unclosed.md"
    fences = "```\n~~~\n" * 50_000 + "# Client guide\n"  # past the lines looked at
    assert _title(tmp_path, "fences.md", fences) == "fences.md"
    ticks = "# " + "`" * 900 + "\n" + ("# " + "**. " * 240 + "[](x)\n") * 2_000 + "# Client guide\n"
    assert _title(tmp_path, "ticks.md", ticks) == "ticks.md"  # markup only: no heading has text
    adornments = ("=" * 999 + "\n") * 3_000
    assert _title(tmp_path, "lines.rst", adornments) == "lines.rst"
    page = "<" * 500_000 + "<h1 " * 100_000 + "<title>" * 100_000
    path = tmp_path / "junk.html"
    path.write_text(f"<html><body><p>{ARTICLE}</p>{page}</body></html>")
    result = _load(path)
    assert isinstance(result, (LoadedDocument, SkippedFile))
    heading = "# " + "very long title " * 40 + "\n"
    title = _title(tmp_path, "cut.md", heading)
    assert len(title) <= TITLE_MAX_CHARS and title.endswith("…") and title.startswith("very long title")
    assert _title(tmp_path, "ctl.md", "# Client\x01\x7f guide\u200b\n") == "Client guide"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(min_size=1, max_size=2_000), name=st.sampled_from(["j.md", "j.rst", "j.txt", "j.html"]))
def test_binary_junk_never_breaks_a_load(
    tmp_path_factory: pytest.TempPathFactory, data: bytes, name: str
) -> None:
    folder = tmp_path_factory.mktemp("junk")
    path = folder / name
    path.write_bytes(data)
    result = _load(path)
    if isinstance(result, LoadedDocument):
        assert result.title and "\n" not in result.title and len(result.title) <= TITLE_MAX_CHARS
        assert result.title.encode("utf-8")


FENCE_LINES = st.one_of(
    st.sampled_from(
        [
            "# Fake heading",
            "## Fake section",
            "Fake setext",
            "===",
            "---",
            "title: Fake",
            "<h1>Fake html</h1>",
            "```",
            "~~~",
            "````python",
            "  ~~~~~",
            "<!--",
            "-->",
            "",
            "    # Fake indented",
            "- # Fake item",
            "> # Fake quote",
        ]
    ),
    st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\r\n"), max_size=30).map(
        lambda text: "# Fake " + text
    ),
)


def _closes(line: str, char: str, length: int) -> bool:
    stripped = line.strip()
    return stripped.startswith(char * length) and not stripped.strip(char)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    char=st.sampled_from("`~"),
    length=st.integers(3, 6),
    extra=st.integers(0, 3),
    language=st.sampled_from(["", "python", " bash", "{.sh}", "md title='x'"]),
    content=st.lists(FENCE_LINES, max_size=12),
    closed=st.booleans(),
    before=st.sampled_from(["", "Some intro.\n\n", "Intro:\n", "## Opening\n\n"]),
)
def test_a_fences_content_never_becomes_the_title(
    tmp_path_factory: pytest.TempPathFactory,
    char: str,
    length: int,
    extra: int,
    language: str,
    content: list[str],
    closed: bool,
    before: str,
) -> None:
    lines = [line for line in content if not _closes(line, char, length)]
    fence = char * length
    text = before + f"{fence}{language}\n" + "\n".join(lines) + "\n"
    if closed:
        text += char * (length + extra) + "\n\nAfter the code.\n\n# Real title\n"
    folder = tmp_path_factory.mktemp("fence")
    title = _title(folder, "doc.md", text)
    assert "Fake" not in title
    if closed:
        assert title == "Real title"
    else:
        assert title == ("Opening" if before.startswith("##") else "doc.md")


TOKENIZER_COUNTER = HFTokenCounter(load_tokenizer(max_tokens=None, pad=False))

GUIDE = (
    "```python\n# Configure the client first\nclient = Client(timeout=30)\n```\n\n"
    "Client guide\n============\n\nThe client retries three times before it gives up.\n\n"
    "## Timeouts\n\nThe timeout is thirty seconds unless configured otherwise.\n"
)


def test_chunks_carry_the_title_in_their_context(tmp_path: Path) -> None:
    path = tmp_path / "guide.md"
    path.write_text(GUIDE, encoding="utf-8")
    doc = _load(path)
    assert isinstance(doc, LoadedDocument) and doc.title == "Client guide"
    chunks = Chunker(TOKENIZER_COUNTER).chunk(doc, project="")
    assert chunks and {chunk.title for chunk in chunks} == {"Client guide"}
    timeouts = next(chunk for chunk in chunks if "thirty seconds" in chunk.text)
    assert timeouts.embed_text.startswith("Client guide › Timeouts\n")
    assert all(chunk.embed_text.startswith("Client guide") for chunk in chunks)


def test_search_results_cite_the_title(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text(GUIDE, encoding="utf-8")
    (docs / "setup.rst").write_text("Setup\n=====\n\nInstall the wheel with pip.\n", encoding="utf-8")

    async def go() -> None:
        store = DocumentStore(tmp_path / "index")
        async with DocumentIndex(store, EmbeddingChain([HashEmbedder(32)])) as index:
            await index.index_paths([docs])
            provider = DocumentIndexProvider(index)
            context = TrustedContext(actor="tester")
            found = await provider.retrieve(
                Router([]).request("timeout thirty seconds", mode=SearchMode.LEXICAL), context
            )
            top = found.evidence[0]
            assert top.locator.split("#")[0].endswith("guide.md")
            assert top.title == "Client guide — Timeouts"
            wheel = await provider.retrieve(
                Router([]).request("install wheel pip", mode=SearchMode.LEXICAL), context
            )
            assert wheel.evidence[0].title == "Setup"
            titles = {e.title.split(" — ")[0] for e in (*found.evidence, *wheel.evidence)}
            assert "Configure the client first" not in titles

    anyio.run(go)


def test_the_title_does_not_depend_on_the_line_ending(tmp_path: Path) -> None:
    text = GUIDE.replace("\n", "\r\n")
    assert _title(tmp_path, "crlf.md", text.encode("utf-8")) == "Client guide"
