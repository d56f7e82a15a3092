"""The int8 build is kept once per user: a shared folder, built once by processes that start together."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from simone.providers.embeddings import OnnxMiniLMEmbedder, build_chain, quantize
from simone.providers.embeddings.minilm import sha256_file
from simone.runtime import EmbeddingSettings

BUILD = """
import json, sys
from pathlib import Path
from simone.providers.embeddings import quantize
from simone.providers.embeddings.minilm import packaged_model_path
choice = quantize.prepare(packaged_model_path(), Path(sys.argv[1]))
report = choice.report
print(json.dumps({"variant": choice.variant, "path": str(choice.path),
                  "build_s": report.build_s if report else None,
                  "model_sha256": report.model_sha256 if report else None}))
"""


@pytest.mark.slow
def test_two_processes_starting_together_build_once_and_print_nothing(tmp_path: Path) -> None:
    shared = tmp_path / "cache"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", BUILD, str(shared)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outs = [proc.communicate(timeout=600) for proc in procs]
    for proc, (_, err) in zip(procs, outs, strict=True):
        assert proc.returncode == 0, err
        assert err == "", f"the build printed on stderr: {err!r}"
    first, second = (json.loads(out) for out, _ in outs)
    assert first["variant"] == second["variant"] == "quantized"
    assert first["path"] == second["path"]
    # one build: the second process read the report the first one wrote (same build time, same digest)
    assert first["build_s"] == second["build_s"]
    assert first["model_sha256"] == second["model_sha256"]
    assert [p.name for p in shared.glob("*.onnx")] == [Path(first["path"]).name]
    assert not list(shared.glob(".build-*")), "a scratch folder was left behind"
    assert not list(shared.glob("*.tmp")), "a scratch file was left behind"


def test_the_shared_folder_is_the_user_cache_or_the_override(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(quantize.MODELS_DIR_ENV, raising=False)
    default = quantize.default_models_dir()
    assert default.name == "models" and "simone" in default.parts
    monkeypatch.setenv(quantize.MODELS_DIR_ENV, str(tmp_path / "shared"))
    assert quantize.default_models_dir() == tmp_path / "shared"


def test_every_data_directory_uses_the_one_shared_build(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(quantize.MODELS_DIR_ENV, str(tmp_path / "shared"))
    dirs = []
    for name in ("a", "b"):
        (onnx,) = build_chain(EmbeddingSettings(), data_dir=tmp_path / name).embedders
        assert isinstance(onnx, OnnxMiniLMEmbedder)
        dirs.append(onnx._models_dir)
        assert not (tmp_path / name / "models").exists()
    assert dirs == [tmp_path / "shared", tmp_path / "shared"]


def test_a_digest_is_remembered_until_the_file_changes(tmp_path: Path) -> None:
    target = tmp_path / "graph.onnx"
    target.write_bytes(b"first version")
    first = quantize.file_digest(target, tmp_path)
    memo = json.loads((tmp_path / quantize.DIGESTS_FILE).read_text(encoding="utf-8"))
    assert memo[str(target.resolve())][2] == first
    assert quantize.file_digest(target, tmp_path) == first
    target.write_bytes(b"second version, longer")
    os.utime(target, ns=(1, 1))
    second = quantize.file_digest(target, tmp_path)
    assert second != first
    assert second == sha256_file(target)
