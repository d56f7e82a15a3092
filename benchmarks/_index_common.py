"""Shared helpers of benchmarks/index_quality.py and benchmarks/index_speed.py.

Corpora are written as Markdown files (``# title`` then the text) under ``benchmarks/.cache/`` so the
document index reads them the way it reads a user's folder; doc ids are the file stems.
"""

from __future__ import annotations

import csv
import json
import math
import resource
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache"
RESULTS = HERE / "results"


def default_data_dir() -> Path:
    return (HERE.parent.parent / "shared" / "data").resolve()


def load_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def load_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    with path.open(encoding="utf-8") as handle:
        reader = csv.reader(handle, delimiter="\t")
        next(reader)
        for query_id, doc_id, score in reader:
            qrels[query_id][doc_id] = int(score)
    return dict(qrels)


def ndcg_at(ranked: list[str], relevant: dict[str, int], k: int = 10) -> float:
    dcg = sum(relevant.get(doc, 0) / math.log2(i + 2) for i, doc in enumerate(ranked[:k]))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum(rel / math.log2(i + 2) for i, rel in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def unique_docs(paths: Iterable[str]) -> list[str]:
    """Doc ids (file stems) in first-seen order: several chunks of one document count once."""
    seen: dict[str, None] = {}
    for path in paths:
        seen.setdefault(Path(path).stem, None)
    return list(seen)


def write_corpus(corpus: list[dict[str, Any]], folder: Path) -> Path:
    """Write ``{_id, title, text}`` documents as ``<id>.md`` (once; kept between runs)."""
    marker = folder / ".complete"
    if marker.exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    for doc in corpus:
        title = " ".join(str(doc.get("title") or "").split())
        body = str(doc.get("text") or "").strip()
        text = f"# {title}\n\n{body}\n" if title else f"{body}\n"
        (folder / f"{doc['_id']}.md").write_text(text, encoding="utf-8")
    marker.write_text(str(len(corpus)))
    return folder


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    position = (len(ordered) - 1) * q
    low = math.floor(position)
    high = math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def save(name: str, payload: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path
