"""The offline answerer's units: code kept verbatim, table rows under their header, definition lines
whole, sources numbered from [1] in the order shown, own memory before documents, and why each unit
was chosen — in more than one language."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from simone.agents import EvidenceLedger, ExtractiveModel, Runtime, finalize, render_evidence
from simone.agents._synthesis import asks_about_own, split_units
from simone.providers.documents import DOCUMENT_INDEX
from simone.providers.memory import MEMORY_STORE, NoteCreate
from simone.runtime import EMBEDDING_CHAIN, EmbeddingSettings, Evidence, Settings, TrustedContext

API_DOC = """# Frozen classes

Instances of a frozen class cannot be changed after they are built.
To get a copy of a frozen instance with one attribute changed, call evolve:

```python
>>> i = C(x=1, y=2)
>>> evolve(i, y=3)
C(x=1, y=3)
```

Lunch is served at noon in the canteen.
"""


def _doc(content: str, locator: str = "docs/a.md#L1-L9", title: str = "A") -> Evidence:
    return Evidence.create(
        provider="document-index", provider_name="documents", locator=locator, title=title, content=content
    )


def _note(content: str, scope: Any) -> Evidence:
    return Evidence.create(
        provider="memory",
        provider_name="memory",
        locator="memory:note/note-1",
        title="Gateway",
        content=content,
        metadata={"scope": scope, "record_id": "note-1"},
    )


def test_code_blocks_stay_whole_and_verbatim_with_their_language() -> None:
    units = split_units(API_DOC)
    code = [u for u in units if u.kind == "code"]
    assert [u.text for u in code] == ["```python\n>>> i = C(x=1, y=2)\n>>> evolve(i, y=3)\nC(x=1, y=3)\n```"]
    assert code[0].intro.endswith("call evolve:")  # the sentence that introduces it
    assert "Frozen classes" not in " ".join(u.text for u in units)  # a heading is a label, not a unit
    # reStructuredText: a '::' literal block and a code directive, options skipped, indentation kept
    rst = (
        "Use the runner::\n\n    result = runner.invoke(cli)\n        assert result.exit_code == 0\n\n"
        '.. code-block:: bash\n   :linenos:\n\n   eval "$(_FOO_COMPLETE=bash_source foo)"\n'
    )
    assert [u.text for u in split_units(rst) if u.kind == "code"] == [
        "```\nresult = runner.invoke(cli)\n    assert result.exit_code == 0\n```",
        '```bash\neval "$(_FOO_COMPLETE=bash_source foo)"\n```',
    ]
    # a chunk that starts inside a code block: its first fence closes the block, nothing is misread
    cut = "    y: int = 3\n```\n\nThe field has a default value of three."
    assert [u.kind for u in split_units(cut)] == ["code", "sentence"]


def test_table_rows_keep_their_header_and_definition_lines_stay_whole() -> None:
    table = "| option | default |\n|---|---|\n| `timeout` | 30 s |\n| `retries` | 3 |\n"
    rows = [u for u in split_units(table) if u.kind == "row"]
    assert [u.text for u in rows] == [
        "| option | default |\n|---|---|\n| `timeout` | 30 s |",
        "| option | default |\n|---|---|\n| `retries` | 3 |",
    ]
    lines = split_units("The options.\nslots=True. Makes the class slotted, e.g. smaller.\n")
    assert "slots=True. Makes the class slotted, e.g. smaller." in [u.text for u in lines]
    items = split_units(
        "- `__attrs_post_init__` runs after\n  the generated init\n- *second* item of the list"
    )
    assert [u.text for u in items] == [
        "`__attrs_post_init__` runs after the generated init",  # inline code verbatim, emphasis dropped
        "second item of the list",
    ]


def test_an_api_question_is_answered_with_the_code_block_and_its_introduction() -> None:
    ledger = EvidenceLedger()
    ledger.add([_doc(API_DOC)])
    text, citations, coverage = ExtractiveModel().compose(
        "How do I get a copy of a frozen instance with one attribute changed?", ledger.numbered()
    )
    assert "call evolve:\n```python\n>>> i = C(x=1, y=2)\n>>> evolve(i, y=3)\nC(x=1, y=3)\n```" in text
    assert "Lunch" not in text and citations[0].number == 1 and coverage > 0.5


def test_a_code_block_is_introduced_by_the_paragraph_before_it_across_a_blank_line() -> None:
    doc = (
        "Frozen instances cannot be changed.\n\n"
        "In regular program flow you need new instances with changed attributes.\n"
        "attrs imitates Clojure here: `attrs.evolve`:\n\n"
        "```python\n>>> i2 = evolve(i1, y=3)\n```\n\n"
        "```python\n>>> i3 = evolve(i2, y=4)\n```\n"
    )
    first, second = [u for u in split_units(doc) if u.kind == "code"]
    # the whole paragraph before it, not only its last sentence, and nothing of the paragraph before that
    assert first.intro == (
        "In regular program flow you need new instances with changed attributes. "
        "attrs imitates Clojure here: `attrs.evolve`:"
    )
    assert second.intro == ""  # a second block in a row is not introduced by the same prose again
    heading_between = "A paragraph about something else entirely.\n\n## Usage\n\n```\nrun()\n```\n"
    assert [u.intro for u in split_units(heading_between) if u.kind == "code"] == [""]


def test_a_chunk_that_continues_a_better_ranked_chunk_is_ranked_with_it() -> None:
    def chunk(content: str, path: str, lines: tuple[int, int]) -> Evidence:
        return Evidence.create(
            provider="document-index",
            provider_name="documents",
            locator=f"{path}#L{lines[0]}-L{lines[1]}",
            title="T",
            content=content,
            metadata={"path": path, "line_start": lines[0], "line_end": lines[1]},
        )

    head = chunk("Frozen classes are described here at length.", "docs/a.md", (1, 20))
    other = chunk("A frozen instance of another kind, with its attribute.", "docs/b.md", (1, 9))
    tail = chunk(
        "Copy a frozen instance with one attribute changed by calling evolve.", "docs/a.md", (20, 40)
    )
    ledger = EvidenceLedger()
    ledger.add([head, other, tail])
    question = "How do I copy a frozen instance with one attribute changed?"
    model = ExtractiveModel(max_sentences=1)
    words, candidates = model._candidates(question, ledger.numbered())
    assert {c.item.locator: c.position for c in candidates}["docs/a.md#L20-L40"] == 0  # ranked with L1-L20
    assert "evolve" in model.compose(question, ledger.numbered())[0]
    ranked_apart = ExtractiveModel(max_sentences=1, passage_rank=False)
    words, candidates = ranked_apart._candidates(question, ledger.numbered())
    assert {c.item.locator: c.position for c in candidates}["docs/a.md#L20-L40"] == 2


def test_a_unit_sharing_one_stray_word_does_not_join_the_answer() -> None:
    ledger = EvidenceLedger()
    ledger.add(
        [
            _doc(
                "The Panthers team led the league with 24 interceptions in the 2015 season.",
                "docs/a.md#L1-L1",
            ),
            _doc("Regular meetings are held in western countries.", "docs/b.md#L1-L1"),
        ]
    )
    question = "Which team had the most interceptions in the regular season of 2015?"
    text, citations, _ = ExtractiveModel().compose(question, ledger.numbered())
    assert "interceptions" in text and "western" not in text and len(citations) == 1
    padded, _, _ = ExtractiveModel(follow_floor=0.0).compose(question, ledger.numbered())
    assert "western" in padded  # without the floor the stray "regular" would have padded it


def test_sources_are_numbered_from_one_in_the_order_shown() -> None:
    ledger = EvidenceLedger()
    unrelated = _doc("Cats sleep most of the day.", "docs/cats.md#L1-L1")
    deploys = _doc("Deploys happen on Tuesdays after the review.", "docs/deploy.md#L3-L3")
    ledger.add([unrelated, deploys])
    text, citations, _ = ExtractiveModel().compose("When do deploys happen?", ledger.numbered())
    assert text.endswith("[1]") and "[2]" not in text
    assert [(c.number, c.evidence_id) for c in citations] == [(1, deploys.id)]  # still the right evidence
    # a chat model's markers are renumbered the same way, each still naming what it cited
    cleaned, cited, _ = finalize("Tuesdays [2]; cats sleep [1].", ledger)
    assert cleaned == "Tuesdays [1]; cats sleep [2]."
    assert [(c.number, c.evidence_id) for c in cited] == [(1, deploys.id), (2, unrelated.id)]


def test_own_memory_outranks_a_document_that_also_answers_and_the_reason_says_why() -> None:
    # the document comes first and covers the same words: only the note's owner makes the difference
    doc = _doc("The gateway timeout of the library's client is ten seconds.")
    for scope, own in ((["actor"], True), ("global", False)):
        ledger = EvidenceLedger()
        ledger.add([doc, _note("Gateway timeout is 30 s.", scope)])
        chosen = ExtractiveModel(max_sentences=1).compose  # the lead unit only
        text, citations, _ = chosen("What timeout does our gateway use?", ledger.numbered())
        assert ("30 s" in text) is own and ("ten seconds" in text) is not own
    ledger = EvidenceLedger()
    ledger.add([doc, _note("Gateway timeout is 30 s.", ["actor", "project"])])
    model = ExtractiveModel()
    words, candidates = model._candidates("What timeout does our gateway use?", ledger.numbered())
    reasons = model._select(words, candidates).reasons
    assert reasons[0].startswith("[1] sentence from memory · memory:note/note-1: own memory, covers 2/")


def test_a_question_about_our_facts_is_answered_from_own_memory_even_when_a_document_covers_more() -> None:
    # the document covers every word ("uses"), the note two of three: only "our" makes the note lead
    doc = _doc("The HTTP client of the library uses a gateway timeout of 10 s by default.")
    note = _note("Gateway timeout is 30 s", ["actor"])
    ledger = EvidenceLedger()
    ledger.add([doc, note])
    lead = ExtractiveModel(max_sentences=1).compose
    ours, citations, _ = lead("What timeout does our gateway use?", ledger.numbered())
    assert "30 s" in ours and citations[0].provider == "memory"
    theirs, _, _ = lead("What timeout does the gateway use?", ledger.numbered())
    assert "10 s" in theirs  # no first-person cue: the document that covers more leads
    for question in (
        "Welches Timeout nutzt unser Gateway?",
        "我们的网关超时是多少？",
        "Where is my gateway timeout?",
    ):
        assert asks_about_own(question), question
    assert not asks_about_own("How do I set the gateway timeout?")


def test_units_and_answers_in_other_languages() -> None:
    japanese = "富士山は日本で最も高い山です。標高は3776メートルです。東京は日本の首都です。"
    assert [u.text for u in split_units(japanese)] == [
        "富士山は日本で最も高い山です。",
        "標高は3776メートルです。",
        "東京は日本の首都です。",
    ]
    ledger = EvidenceLedger()
    ledger.add([_doc(japanese, "docs/ja.md#L1-L1")])
    text, citations, _ = ExtractiveModel().compose("日本の首都はどこですか？", ledger.numbered())
    assert text.startswith("東京は日本の首都です。") or "東京は日本の首都です。 [1]" in text
    ledger = EvidenceLedger()
    german = (
        "Der Bahnhof liegt im Norden der Stadt. Er wurde 1901 feierlich eröffnet. Die Stadt hat einen Hafen."
    )
    ledger.add([_doc(german, "docs/de.md#L1-L1")])
    text, _, _ = ExtractiveModel().compose("Wann wurde der Bahnhof feierlich eröffnet?", ledger.numbered())
    # the lead sentence comes with the one before it (what "Er" is), not with the unrelated one after it
    assert text == "Der Bahnhof liegt im Norden der Stadt. Er wurde 1901 feierlich eröffnet. [1]"


@pytest.mark.anyio
async def test_the_runtime_answers_from_the_users_note_before_the_documents(isolated_env: Path) -> None:
    docs = isolated_env / "docs"
    docs.mkdir()
    (docs / "client.md").write_text(
        "# Client\n\nThe library's client sets a timeout:\n\n```python\nclient = Client(timeout=10)\n```\n",
        encoding="utf-8",
    )
    settings = Settings(data_dir=isolated_env / "data", embeddings=EmbeddingSettings(chain=["onnx"]))
    async with Runtime(settings, web=False) as runtime:
        await runtime.published.require(DOCUMENT_INDEX).index_paths([docs])
        alice = TrustedContext(actor="alice")
        store = runtime.published.require(MEMORY_STORE)
        await store.create(alice, NoteCreate(title="Gateway", body="Gateway timeout is 30 s"))
        answer = await runtime.ask(runtime.admit({"actor": "alice"}), "What timeout does our gateway use?")
        assert answer.status == "answered"
        assert answer.text.startswith("Gateway timeout is 30 s") and answer.citations[0].number == 1
        assert answer.citations[0].provider.value == "memory"
        assert "answer units: [1]" in answer.steps[0].detail and "own memory" in answer.steps[0].detail
        # by meaning too, when asked to: the chain embeds the few candidates in one batch
        chain = runtime.published.get(EMBEDDING_CHAIN)
        found = await runtime.retrieve(alice, "What timeout does our gateway use?")
        ledger = EvidenceLedger()
        ledger.add(found.evidence)
        composed = await ExtractiveModel(embeddings=chain, embed_limit=4).answer(
            "What timeout does our gateway use?", ledger.numbered()
        )
        assert composed.text.startswith("Gateway timeout is 30 s") and "similarity 0." in composed.reasons[0]


def test_the_chat_model_is_shown_code_blocks_and_tables_intact_with_their_locator() -> None:
    table = "| option | default |\n|---|---|\n| `timeout` | 30 s |"
    code = "```python\n@define(frozen=True)\nclass C:\n    x: int\n    y: int = 0\n```"
    item = _doc(f"Define it:\n\n{code}\n\n{table}\n", "docs/frozen.md#L1-L16")
    block = render_evidence([(1, item)])
    assert code in block and table in block  # not flattened onto one line
    assert 'locator="docs/frozen.md#L1-L16"' in block
