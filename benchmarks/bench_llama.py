"""Benchmark planning a Llama-7B-shaped training step on a GPU (issue 26).

A Hugging Face ``LlamaForCausalLM`` (hidden 4096, 32 layers, intermediate 11008,
32 heads of 128, vocabulary 32,000; no weights, no hub) is built on the ``meta``
device and captured by the torch frontend (``autotm-torch``) as one training step:
a batch of 1 x 2,048 tokens, the model's own loss (``loss="output"``), AdamW,
``device="cpu"`` (the pinned torch is a CPU build: the graph holds the CPU's
attention kernels and AdamW's per-parameter path; see docs/frontends-torch.md).
The graph is captured once, in a process of its own, and saved as a graph file in
a temporary folder that every case reads.

Each case is a slow:fast ratio (host:HBM) on the ``gpu-h200`` preset, planned by the
library's one planning entry, ``plan(load_problem(graph, "gpu-h200", limit=RATIO),
PLANNER, PlanSettings(mode="auto", time_limit_seconds=BUDGET))``, as ``solve --mode
auto --time-limit BUDGET`` plans it, then the greedy baseline at the same point; each
in its own process, so that its peak memory is measured from outside. Per case: the
graph's kernels and peak live bytes, the fast capacity, the planner, mode and
formulation, where the plan came from, its predicted step time against all-fast and
against greedy, the proven lower bound and gap, why planning stopped, the seconds
(capture, plan, total) and peak MiB, and the load average when it began and ended.

    python benchmarks/bench_llama.py [--budget 300] [--ratios 1:1 4:1] [--planner synchronous]
                                     [--layers 32] [--hidden 4096] [--seq 2048] [--timeout S]
    python benchmarks/bench_llama.py --smoke    # 2 layers, hidden 64, 32 tokens, 10 s budget

``--hidden`` up to 128 gives one head; above, a multiple of 128 gives heads of 128.
The intermediate size follows Llama's rule (8/3 of hidden, rounded up to 256).
Peak memory is a process's largest resident set (``os.wait4``), so a case killed for
memory (or by ``--timeout``) has one too. A case that fails is reported with its error
or the signal that ended it; the exit status is then 1 (also when the capture fails).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SYSTEM = "gpu-h200"
"""The memory system every case is planned on."""
VOCABULARY = 32_000
"""Llama's vocabulary."""
HEAD_SIZE = 128
"""Llama's attention head size."""
NEEDS = ("torch", "transformers", "autotm_torch")
"""The modules the capture imports (the plugin's ``test`` extra installs them)."""
SMOKE = {"layers": 2, "hidden": 64, "seq": 32, "budget": 10.0}
"""``--smoke``'s configuration: the smallest model that still has every kind of kernel."""


def llama_sizes(*, hidden: int) -> tuple[int, int]:
    """Llama's heads and intermediate size for ``hidden`` (4096: 32 heads, 11008)."""
    if hidden < 1 or (hidden > HEAD_SIZE and hidden % HEAD_SIZE):
        raise ValueError(f"--hidden {hidden}: give a size up to {HEAD_SIZE} (one head) or a "
                         f"multiple of the head size {HEAD_SIZE}")
    heads = 1 if hidden <= HEAD_SIZE else hidden // HEAD_SIZE
    intermediate = -(-(8 * hidden // 3) // 256) * 256
    return heads, intermediate


def capture(path: str, *, layers: int, hidden: int, seq: int) -> dict[str, Any]:
    """Capture the training step on the ``meta`` device and save its graph to ``path``."""
    started = time.perf_counter()
    import torch
    import transformers

    from autotm_core import get_frontend, save_graph

    imported = time.perf_counter()
    heads, intermediate = llama_sizes(hidden=hidden)
    config = transformers.LlamaConfig(
        num_hidden_layers=layers, hidden_size=hidden, intermediate_size=intermediate,
        num_attention_heads=heads, num_key_value_heads=heads, vocab_size=VOCABULARY,
        max_position_embeddings=max(seq, 2048))
    with torch.device("meta"):
        model = transformers.LlamaForCausalLM(config)
    ids = torch.zeros((1, seq), dtype=torch.long)
    batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": ids}
    built = time.perf_counter()
    graph = get_frontend("torch").load(model, batch, loss="output", optimizer="adamw",
                                       device="cpu")
    captured = time.perf_counter()
    save_graph(graph, path)
    return {"kernels": len(graph.kernels), "tensors": len(graph.tensors),
            "peak_nbytes": int(graph.liveness.peak_nbytes), "heads": heads,
            "intermediate": intermediate, "captured_for": graph.captured_for,
            "import_s": imported - started, "build_s": built - imported,
            "capture_s": captured - built, "save_s": time.perf_counter() - captured}


def measure(path: str, ratio: str, budget: float, planner: str) -> dict[str, Any]:
    """Plan the saved graph at ``ratio`` on :data:`SYSTEM`, then greedy at the same point."""
    load_average = os.getloadavg()[0]
    started = time.perf_counter()
    from autotm_core import load_graph
    from autotm_core.memory import capture_mismatch
    from autotm_core.planning import PlanSettings, load_problem, plan

    graph = load_graph(path)
    loaded = time.perf_counter()
    problem = load_problem(graph, SYSTEM, limit=ratio)
    outcome = plan(problem, planner, PlanSettings(mode="auto", time_limit_seconds=budget))
    planned = time.perf_counter()
    greedy = plan(problem, "greedy")
    solve, model = outcome.solve, outcome.model
    return {
        "ratio": ratio, "kernels": len(graph.kernels), "peak_nbytes": problem.peak_nbytes,
        "capacity_nbytes": problem.fast_capacity_nbytes, "planner": outcome.planner.name,
        "mode": None if solve is None else solve.mode.value,
        "formulation": None if model is None else model.formulation,
        "binaries": None if model is None else model.binaries,
        "source": outcome.source, "step_s": outcome.step_seconds,
        "all_fast_s": outcome.all_fast_seconds, "slowdown": outcome.slowdown,
        "greedy_step_s": greedy.step_seconds,
        "vs_greedy": outcome.step_seconds / greedy.step_seconds,
        "bound_s": None if solve is None else solve.bound_seconds,
        "bound_from": None if solve is None else solve.bound_source,
        "gap": None if solve is None else solve.gap,
        "termination": None if solve is None else solve.termination,
        "note": outcome.note, "mismatch": capture_mismatch(graph, problem.system),
        "load_s": loaded - started, "plan_s": planned - loaded,
        "greedy_plan_s": greedy.plan_seconds, "load_average": [load_average,
                                                               os.getloadavg()[0]],
    }


def _gib(nbytes: float | None) -> str:
    return "-" if nbytes is None else f"{nbytes / 2**30:.2f} GiB"


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}x"


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{1e3 * seconds:,.1f} ms"


def report(r: dict[str, Any], child_seconds: float, peak_mib: float, capture_s: float) -> str:
    """The lines of one planned case."""
    gap = "-" if r["gap"] is None else f"{100 * r['gap']:.1f}%"
    start, end = r["load_average"]
    lines = [
        f"{r['ratio']:<5} {r['kernels']:,} kernels, peak {_gib(r['peak_nbytes'])}, fast "
        f"capacity {_gib(r['capacity_nbytes'])}: planner {r['planner']}, {r['mode']}, "
        f"formulation {r['formulation']} ({r['binaries'] or 0:,} binaries); plan from "
        f"{r['source']}",
        f"      step {_ms(r['step_s'])}: {_x(r['slowdown'])} all-fast ({_ms(r['all_fast_s'])}), "
        f"{_x(r['vs_greedy'])} greedy ({_ms(r['greedy_step_s'])}); bound {_ms(r['bound_s'])} "
        f"({r['bound_from'] or 'none'}), gap <= {gap}",
        f"      termination: {r['termination']}" + (f"; note: {r['note']}" if r["note"] else ""),
        f"      seconds: capture {capture_s:.1f} (once, shared), load {r['load_s']:.1f}, plan "
        f"{r['plan_s']:.1f}, greedy {r['greedy_plan_s']:.1f}, total {child_seconds:.1f}; peak "
        f"{peak_mib:,.0f} MiB; load average {start:.2f} -> {end:.2f}",
    ]
    return "\n".join(lines)


DOC_COLUMNS = ("case", "kernels", "peak", "fast capacity", "plan from", "step", "/all-fast",
               "/greedy", "bound (from)", "gap <=", "stop", "plan s", "peak MiB", "load")
"""The columns of docs/large-graphs.md's table of this benchmark (``--doc``)."""


def doc_row(r: dict[str, Any], budget: float, peak_mib: float) -> list[str]:
    """:data:`DOC_COLUMNS`' cells of one planned case."""
    gap = "-" if r["gap"] is None else f"{100 * r['gap']:.1f}%"
    return [f"{r['ratio']} ({budget:g} s)", f"{r['kernels']:,}", _gib(r["peak_nbytes"]),
            _gib(r["capacity_nbytes"]), str(r["source"]), _ms(r["step_s"]), _x(r["slowdown"]),
            _x(r["vs_greedy"]), f"{_ms(r['bound_s'])} ({r['bound_from'] or 'none'})", gap,
            str(r["termination"]), f"{r['plan_s']:.1f}", f"{peak_mib:,.0f}",
            f"{r['load_average'][1]:.1f}"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget", type=float, default=300.0,
                        help="planning time limit per case, seconds (default 300)")
    parser.add_argument("--ratios", nargs="+", default=["1:1", "4:1"], metavar="RATIO",
                        help="host:HBM ratios, one case each (default 1:1 4:1)")
    parser.add_argument("--planner", default="synchronous",
                        help="ILP planner (default synchronous, as solve's)")
    parser.add_argument("--layers", type=int, default=32, help="decoder layers (default 32)")
    parser.add_argument("--hidden", type=int, default=4096, help="hidden size (default 4096)")
    parser.add_argument("--seq", type=int, default=2048, help="tokens (default 2048)")
    parser.add_argument("--timeout", type=float, default=None,
                        help="kill a process (capture or case) after this many seconds "
                        "(default: never)")
    parser.add_argument("--smoke", action="store_true",
                        help="2 layers, hidden 64, 32 tokens, 10 s budget")
    parser.add_argument("--doc", action="store_true",
                        help="write each case's row into docs/large-graphs.md's table")
    parser.add_argument("--capture", metavar="GRAPH", help=argparse.SUPPRESS)
    parser.add_argument("--one", nargs=2, metavar=("GRAPH", "RATIO"), help=argparse.SUPPRESS)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.smoke:
        args.layers, args.hidden, args.seq, args.budget = (
            SMOKE["layers"], SMOKE["hidden"], SMOKE["seq"], SMOKE["budget"])
    try:
        heads, intermediate = llama_sizes(hidden=args.hidden)
    except ValueError as exc:
        parser.error(str(exc))
    if args.capture:
        print(json.dumps(capture(args.capture, layers=args.layers, hidden=args.hidden,
                                 seq=args.seq)))
        return 0
    if args.one:
        print(json.dumps(measure(*args.one, args.budget, args.planner)))
        return 0
    from benchmarks.bench_large import DOC, describe_failure, run_child, write_rows

    missing = [name for name in NEEDS if importlib.util.find_spec(name) is None]
    if missing:
        print(f"error: {', '.join(missing)} not installed; the capture needs the torch "
              "frontend and Hugging Face transformers: pip install -e "
              '"plugins/autotm-torch[test]"', file=sys.stderr)
        return 1
    print("load average at start: {:.2f} {:.2f} {:.2f} (1, 5, 15 min) on {} cores".format(
        *os.getloadavg(), os.cpu_count()))
    print(f"Llama: {args.layers} layers, hidden {args.hidden}, intermediate {intermediate}, "
          f"{heads} head{'s' if heads > 1 else ''}, vocabulary {VOCABULARY:,}, batch 1 x "
          f"{args.seq:,} tokens, AdamW; {args.planner} on {SYSTEM}, mode auto, budget "
          f"{args.budget:g} s", flush=True)
    script = str(Path(__file__).resolve())
    sizes = ["--layers", str(args.layers), "--hidden", str(args.hidden), "--seq", str(args.seq)]
    failed = []
    with tempfile.TemporaryDirectory(prefix="bench_llama-") as folder:
        path = os.path.join(folder, "llama.json")
        child = run_child([sys.executable, script, "--capture", path, *sizes],
                          timeout=args.timeout)
        if child.returncode:
            print(f"capture FAILED after {child.seconds:.0f} s, peak {child.peak_mib:,.0f} MiB: "
                  f"{describe_failure(child)}", flush=True)
            return 1
        c = json.loads(child.stdout.strip().splitlines()[-1])
        print(f"capture: {c['kernels']:,} kernels, {c['tensors']:,} tensors, peak "
              f"{_gib(c['peak_nbytes'])} ({c['peak_nbytes']:,} B), captured for "
              f"{c['captured_for']}; {c['capture_s']:.1f} s capturing ({child.seconds:.1f} s "
              f"with imports {c['import_s']:.1f}, building {c['build_s']:.1f}, saving "
              f"{c['save_s']:.1f}), peak {child.peak_mib:,.0f} MiB", flush=True)
        mismatch_said = False
        for ratio in args.ratios:
            child = run_child([sys.executable, script, "--one", path, ratio,
                               "--budget", str(args.budget), "--planner", args.planner],
                              timeout=args.timeout)
            if child.returncode:
                failed.append(ratio)
                print(f"{ratio:<5} FAILED after {child.seconds:.0f} s, peak "
                      f"{child.peak_mib:,.0f} MiB: {describe_failure(child)}", flush=True)
                continue
            r = json.loads(child.stdout.strip().splitlines()[-1])
            if r["mismatch"] and not mismatch_said:
                print(f"warning: {r['mismatch']}")
                mismatch_said = True
            print(report(r, child.seconds, child.peak_mib, c["capture_s"]), flush=True)
            if args.doc:
                row = doc_row(r, args.budget, child.peak_mib)
                write_rows(DOC, "bench_llama", DOC_COLUMNS, {row[0]: row})
    print("load average at end: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    if failed:
        print(f"{len(failed)} of {len(args.ratios)} cases failed: {', '.join(failed)}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    # run as a script, its own folder is on the path, not the repository's root
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    sys.exit(main())
