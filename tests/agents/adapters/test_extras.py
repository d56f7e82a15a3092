"""Each adapter module names its extra when its framework is missing; the face imports no framework."""

import subprocess
import sys

import pytest

MODULES = {
    "langchain": ("langchain_core", "simone[langchain]"),
    "llamaindex": ("llama_index", "simone[llamaindex]"),
    "haystack": ("haystack", "simone[haystack]"),
    "pydantic_ai": ("pydantic_ai", "simone[pydantic-ai]"),
}


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_a_missing_framework_raises_an_import_error_naming_the_extra(module: str) -> None:
    framework, extra = MODULES[module]
    done = _python(
        f"import sys; sys.modules[{framework!r}] = None\n"  # an installed package made unimportable
        "try:\n"
        f"    import simone.agents.adapters.{module}\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    assert done.returncode == 0, done.stderr
    assert f"pip install '{extra}'" in done.stdout and f"simone.agents.adapters.{module} needs" in done.stdout


def test_the_face_imports_no_framework() -> None:
    frameworks = [framework for framework, _ in MODULES.values()]
    done = _python(
        "import sys, simone.agents.adapters as face\n"
        "face.SimoneSource, face.evidence_metadata, face.open_blocking\n"
        f"print(sorted(m for m in {frameworks!r} if m in sys.modules))\n"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
