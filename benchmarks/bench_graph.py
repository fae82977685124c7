"""How long loading, verifying and analysing a large graph takes.

Builds synthetic training steps (:func:`autotm_core.examples.networks.training_chain`)
of about 10k, 50k and 100k kernels, saves each, then times separately, in a
fresh graph each time:

- ``load``: :func:`autotm_core.formats.load_graph` without verification (parse + records);
- ``verify``: :func:`autotm_core.ir.verify_graph`;
- ``liveness``: :attr:`Graph.liveness` once verification is cached (the analysis alone).

Run: ``python benchmarks/bench_graph.py [--kernels 10000 50000 100000] [--repeat 3]``.
Each figure is the best of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.table import Table

from autotm_core.examples.networks import training_chain
from autotm_core.formats import load_graph, save_graph
from autotm_core.ir import Graph, verify_graph


def best_of(
    repeat: int, setup: Callable[[], Graph | Path], work: Callable[[object], object]
) -> float:
    """Smallest wall time of ``work(setup())`` over ``repeat`` runs (setup not timed)."""
    times = []
    for _ in range(repeat):
        subject = setup()
        start = time.perf_counter()
        work(subject)
        times.append(time.perf_counter() - start)
    return min(times)


def measure(kernels: int, repeat: int, folder: Path) -> dict[str, float]:
    """Seconds for each stage on a chain of about ``kernels`` kernels."""
    layers = max(1, (kernels - 1) // 3)
    path = folder / f"chain-{layers}.json"
    save_graph(training_chain(layers), path)

    def fresh() -> Graph:  # a new Graph object: nothing cached
        return load_graph(path, verify=False)

    def verified() -> Graph:
        graph = fresh()
        _ = graph.problems  # cached, so liveness below times the analysis alone
        return graph

    n_kernels = len(fresh().kernels)
    return {
        "kernels": n_kernels,
        "MB": path.stat().st_size / 1e6,
        "load": best_of(repeat, lambda: path, lambda p: load_graph(p, verify=False)),
        "verify": best_of(repeat, fresh, lambda g: verify_graph(g)),
        "liveness": best_of(repeat, verified, lambda g: g.liveness),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", type=int, nargs="+", default=[10_000, 50_000, 100_000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    table = Table(title=f"load + verify + liveness (best of {args.repeat})")
    for column in ("kernels", "file MB", "load s", "verify s", "liveness s", "total s",
                   "kernels/s"):
        table.add_column(column, justify="right")
    with tempfile.TemporaryDirectory() as folder:
        for kernels in args.kernels:
            r = measure(kernels, args.repeat, Path(folder))
            total = r["load"] + r["verify"] + r["liveness"]
            table.add_row(f"{r['kernels']:,}", f"{r['MB']:.1f}", f"{r['load']:.3f}",
                          f"{r['verify']:.3f}", f"{r['liveness']:.3f}", f"{total:.3f}",
                          f"{r['kernels'] / total:,.0f}")
    Console().print(table)


if __name__ == "__main__":
    main()
