"""The Python examples of docs/frontends-torch.md that say they are run, run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("torch")

from autotm_core import TensorKind

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "frontends-torch.md"


def section_code(heading: str) -> str:
    """The first ```python block of the guide's section ``heading``."""
    text = GUIDE.read_text(encoding="utf-8")
    section = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    found = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert found, f"section {heading!r} of {GUIDE.name} has no python block"
    return found.group(1)


@pytest.mark.slow
def test_the_hugging_face_example_runs(capsys):
    pytest.importorskip("transformers")
    namespace: dict[str, object] = {}
    exec(compile(section_code("Hugging Face models"), str(GUIDE), "exec"), namespace)
    graph = namespace["graph"]
    kernels, peak = capsys.readouterr().out.split()
    assert int(kernels) == len(graph.kernels) > 0 and int(peak) == graph.liveness.peak_nbytes
    assert {"input:input_ids", "input:attention_mask"} <= {t.name for t in graph.tensors}
    assert not [t for t in graph.tensors if t.kind is TensorKind.CONSTANT or t.nbytes == 0]
