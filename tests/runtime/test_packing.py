from __future__ import annotations

from hypothesis import given, strategies as st
from simone.runtime.ranking import (
    CharEstimator,
    FunctionEstimator,
    truncate_to_tokens,
)
from simone.runtime.ranking._packing import PackItem, pack

EST = CharEstimator()


def test_char_estimator_is_ceil_chars_over_four_and_labelled() -> None:
    assert EST.count("") == 0
    assert EST.count("abcd") == 1
    assert EST.count("abcde") == 2
    assert EST.label == "chars/4 ESTIMATED"


def test_items_that_fit_are_kept_whole_in_order() -> None:
    items = [PackItem("a", "x" * 40), PackItem("b", "y" * 40)]
    packed = pack(items, 100, EST)
    assert [(i, t, cut) for i, t, cut, _ in packed.kept] == [(0, "x" * 40, False), (1, "y" * 40, False)]
    assert packed.used_tokens == 20


def test_first_misfit_is_cut_at_a_sentence_and_later_small_items_still_fit() -> None:
    long = " ".join(f"Sentence number {n} says something." for n in range(40))
    items = [
        PackItem("a", "a" * 200),
        PackItem("big", long),
        PackItem("c", "c" * 40),
        PackItem("d", "d" * 4000),
    ]
    packed = pack(items, 200, EST, min_truncation_tokens=10)
    kept = {i: (t, cut) for i, t, cut, _ in packed.kept}
    assert kept[0] == ("a" * 200, False)
    text, cut = kept[1]
    assert cut and text.endswith("something.") and long.startswith(text)
    # the cut fills the room up to its last whole sentence, so what follows waits for room
    assert packed.used_tokens <= 200 and 200 - packed.used_tokens < EST.count(
        " Sentence number 99 says something."
    )
    assert packed.used_tokens <= 200


def test_no_truncation_when_too_little_room_is_left() -> None:
    items = [PackItem("a", "a" * 320), PackItem("b", "Short one. " * 50), PackItem("c", "c" * 40)]
    packed = pack(items, 100, EST, min_truncation_tokens=32)
    assert [i for i, *_ in packed.kept] == [0, 2]  # a smaller later item is still admitted
    assert [i for i, _ in packed.over_budget] == [1]


def test_only_the_first_misfit_is_truncated() -> None:
    text = "One sentence here. " * 40
    packed = pack([PackItem("a", text), PackItem("b", text)], 100, EST, min_truncation_tokens=10)
    assert [cut for _, _, cut, _ in packed.kept] == [True]
    assert [i for i, _ in packed.over_budget] == [1]


def test_truncation_falls_back_to_words_without_sentence_ends() -> None:
    text = "word " * 500
    cut = truncate_to_tokens(text, 20, EST)
    assert cut is not None and cut.endswith("…") and EST.count(cut) <= 20


def test_truncation_handles_cjk_sentence_ends() -> None:
    text = "第一文です。第二文です。第三文です。" * 20
    cut = truncate_to_tokens(text, 5, EST)
    assert cut is not None and cut.endswith("。") and EST.count(cut) <= 5


def test_real_tokenizer_can_be_plugged_in() -> None:
    words = FunctionEstimator(lambda text: len(text.split()), "words EXACT")
    packed = pack(
        [PackItem("a", "one two three"), PackItem("b", "four five")], 4, words, min_truncation_tokens=1
    )
    assert packed.used_tokens <= 4
    assert words.label == "words EXACT"


texts = st.lists(st.text(max_size=600), max_size=15)


@given(texts, st.integers(min_value=0, max_value=800), st.integers(min_value=1, max_value=64))
def test_never_over_budget_and_every_item_accounted_for(items: list[str], budget: int, room: int) -> None:
    packed = pack([PackItem(str(n), t) for n, t in enumerate(items)], budget, EST, min_truncation_tokens=room)
    assert packed.used_tokens <= budget
    assert sum(tokens for *_, tokens in packed.kept) == packed.used_tokens
    indices = sorted([i for i, *_ in packed.kept] + [i for i, _ in packed.over_budget])
    assert indices == list(range(len(items)))
    assert sum(1 for *_, cut, _ in packed.kept if cut) <= 1
    for index, text, cut, _ in packed.kept:
        if not cut:
            assert text == items[index]
