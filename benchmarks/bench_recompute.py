"""Keep, move or recompute (issue 27): each cell planned without and with recomputation.

Per cell: the synchronous plan by :func:`autotm_core.planning.plan` under the same
``--time-limit`` (a cell may name its own: the Hugging Face cells 120 s, as issue 27
asks), once with ``recompute=False`` (keep or move only) and once with ``recompute=True``
(the default: keep, move or rerun producers), each with addresses fitted; the
practitioners' plans at the same point (checkpoint-layers, offload-activations,
recompute-only: the best of them, by name); the all-fast step; the number of reruns; the
planning seconds; and the physical lower bound valid for recomputing plans
(:func:`~autotm_core.planning.lower_bound.physical_lower_bound` with ``recompute=True``).
Prints the load average beside the table.

The ``hf-gpt2`` cells are the Hugging Face case of issue 27: ``GPT2LMHeadModel`` with
``GPT2Config(n_layer=4)``, a batch of 4 x 256 tokens, its own loss and AdamW, captured
on the ``meta`` device by the torch frontend (``autotm-torch``, ``transformers``), at
0.92 GiB of HBM (half its peak); ``hf-gpt2-ckpt`` is the same model after
``gradient_checkpointing_enable()``, what a user does by hand. They are left out, said
so, where torch or transformers are not installed.

    python benchmarks/bench_recompute.py                          # every cell, 20 s a point
    python benchmarks/bench_recompute.py --cells gpt2-b256-1:1 --time-limit 60
    python benchmarks/bench_recompute.py --cells hf-gpt2 hf-gpt2-ckpt
    python benchmarks/bench_recompute.py --smoke                  # example:cnn, 5 s
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from autotm_core.errors import AutotmError
from autotm_core.planning import PlanSettings, load_problem, plan
from autotm_core.planning.lower_bound import physical_lower_bound

GPT2_B256 = "zoo:gpt2:batch=256,seq=1024,layers=4"
HF_LIMIT = "hbm=0.92GiB"
"""Half the Hugging Face GPT-2 step's forward/backward peak (issue 27)."""
CELLS: dict[str, tuple[str, str, str, float | None]] = {
    "gpt2-b256-141GB": (GPT2_B256, "gpu-h200", "hbm=141GB", None),
    "gpt2-b256-1:1": (GPT2_B256, "gpu-h200", "1:1", None),
    "gpt2-b256-4:1": (GPT2_B256, "gpu-h200", "4:1", None),
    "gpt2-12-1:1": ("zoo:gpt2:batch=8,seq=1024,layers=12", "gpu-h200", "1:1", None),
    "cnn-1:1": ("example:cnn", "gpu-h200", "1:1", None),
    "cnn-4:1": ("example:cnn", "gpu-h200", "4:1", None),
    "resnet50-4:1": ("zoo:resnet50:batch=64", "optane-2019", "4:1", None),
    "hf-gpt2": ("hf:gpt2", "gpu-h200", HF_LIMIT, 120.0),
    "hf-gpt2-ckpt": ("hf:gpt2-checkpointed", "gpu-h200", HF_LIMIT, 120.0),
}
"""Per cell: graph source, system, limit, and its own time limit (``None``: the option's)."""
SMOKE = ("cnn-1:1",)
HANDS = ("checkpoint-layers", "offload-activations", "recompute-only")
"""What practitioners do by hand (issue 27's baselines)."""
NEEDS = ("torch", "transformers", "autotm_torch")
"""What the Hugging Face cells import."""


def hf_gpt2(path: Path, *, checkpointed: bool) -> str:
    """Capture the Hugging Face GPT-2 step (see the module doc) into ``path``."""
    import torch
    import transformers

    from autotm_core import get_frontend, save_graph

    config = transformers.GPT2Config(n_layer=4)
    with torch.device("meta"):
        model = transformers.GPT2LMHeadModel(config)
    model.train()
    if checkpointed:
        model.gradient_checkpointing_enable()
    ids = torch.zeros((4, 256), dtype=torch.long)
    graph = get_frontend("torch").load(
        model, {"input_ids": ids, "labels": ids}, loss="output", optimizer="adamw",
        device="cpu", name="hf-gpt2" + ("-checkpointed" if checkpointed else ""))
    save_graph(graph, path)
    return str(path)


def graph_source(source: str, folder: Path) -> str:
    """A cell's graph: a source as given, or the Hugging Face step captured into ``folder``."""
    if not source.startswith("hf:"):
        return source
    missing = [m for m in NEEDS if importlib.util.find_spec(m) is None]
    if missing:
        raise AutotmError(f"needs {', '.join(missing)}",
                          hint="pip install -e 'plugins/autotm-torch[test]' transformers")
    checkpointed = source.endswith("-checkpointed")
    return hf_gpt2(folder / f"{source[3:]}.json", checkpointed=checkpointed)


def measure(cell: str, time_limit: float, addresses: bool, folder: Path) -> dict[str, object]:
    """One cell's row."""
    source, system, limit, own = CELLS[cell]
    seconds = own if own is not None else time_limit
    row: dict[str, object] = {"cell": cell, "time_limit": seconds}
    try:
        problem = load_problem(graph_source(source, folder), system, limit=limit)
    except AutotmError as exc:
        return {**row, "skipped": exc.message}
    row.update(kernels=len(problem.graph.kernels),
               all_fast_ms=(problem.all_fast_seconds or 0.0) * 1e3)
    for recompute in (False, True):
        start = time.perf_counter()
        outcome = plan(problem, "synchronous", PlanSettings(
            time_limit_seconds=seconds, recompute=recompute, addresses=addresses))
        key = "recompute" if recompute else "keep_move"
        row[f"{key}_ms"] = outcome.step_seconds * 1e3
        row[f"{key}_seconds"] = time.perf_counter() - start
        row[f"{key}_reruns"] = len(outcome.plan.reruns)
    hands = {}
    for name in HANDS:
        try:
            hands[name] = plan(problem, name).step_seconds * 1e3
        except AutotmError:
            continue  # no such plan fits
    best = min(hands, key=hands.__getitem__, default=None)
    row["hand"] = best
    row["hand_ms"] = None if best is None else hands[best]
    row["bound_ms"] = physical_lower_bound(problem, recompute=True).seconds * 1e3
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", nargs="+", choices=sorted(CELLS), default=list(CELLS))
    parser.add_argument("--time-limit", type=float, default=20.0, metavar="SECONDS",
                        help="per plan() call (default 20: the quick grid's time per point)")
    parser.add_argument("--no-addresses", action="store_true")
    parser.add_argument("--smoke", action="store_true", help="example:cnn at 5 s")
    parser.add_argument("--json", action="store_true", help="the rows as JSON")
    args = parser.parse_args()
    cells, limit = (SMOKE, 5.0) if args.smoke else (args.cells, args.time_limit)
    with tempfile.TemporaryDirectory() as folder:
        rows = [measure(cell, limit, not args.no_addresses, Path(folder)) for cell in cells]
    load = os.getloadavg()
    if args.json:
        print(json.dumps({"rows": rows, "load": load}))
        return
    table = Table(title=f"keep/move against keep/move/recompute, synchronous, {limit:g} s "
                  f"a plan unless the cell says (load {load[0]:.2f})")
    for name in ("cell", "kernels", "all-fast", "keep/move", "s", "recompute", "reruns", "s",
                 "ratio", "best by hand", "bound"):
        table.add_column(name, justify="left" if name == "cell" else "right")
    for r in rows:
        if "skipped" in r:
            table.add_row(str(r["cell"]), f"skipped: {r['skipped']}")
            continue
        fast = float(r["all_fast_ms"])  # type: ignore[arg-type]
        keep, rec = float(r["keep_move_ms"]), float(r["recompute_ms"])  # type: ignore[arg-type]
        hand = ("-" if r["hand_ms"] is None else
                f"{float(r['hand_ms']):.3f} ms ({r['hand']})")  # type: ignore[arg-type]
        table.add_row(f"{r['cell']} ({float(r['time_limit']):g} s)",  # type: ignore[arg-type]
                      str(r["kernels"]), f"{fast:.3f} ms",
                      f"{keep:.3f} ms ({keep / fast:.2f}x)", f"{r['keep_move_seconds']:.0f}",
                      f"{rec:.3f} ms ({rec / fast:.2f}x)", str(r["recompute_reruns"]),
                      f"{r['recompute_seconds']:.0f}", f"{keep / rec:.2f}x", hand,
                      f"{float(r['bound_ms']):.3f} ms")  # type: ignore[arg-type]
    Console().print(table)


if __name__ == "__main__":
    main()
