"""``export-policy PLAN --graph G -o FILE``: a plan's decisions as a framework's own policy.

The plan is verified against its graph and memory system, then handed to a frontend
plugin that is a :class:`~autotm_core.plugins.PolicyExporter` (the torch plugin's: a
selective activation-checkpointing policy, docs/torch-execution.md), which writes the
file. autotm-core imports no framework: without such a plugin the command says which
to install.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from rich.console import Console

from autotm_core.cli.options import SOURCE_HELP, SYSTEM_HELP, add_command
from autotm_core.errors import UnknownPluginError, UsageError

if TYPE_CHECKING:
    from autotm_core.plugins import PolicyExporter

DESCRIPTION = """\
Verify a plan and write its decisions in a framework's own terms with a frontend plugin:
for torch, a selective activation-checkpointing policy saying, for each forward op of the
model, whether its outputs are saved for the backward pass, recomputed (the plan's
reruns), offloaded (kept in a slower pool only) or not needed, loadable by
autotm_torch.policy.load_policy and usable with torch.utils.checkpoint."""
"""What ``export-policy --help`` says the command does."""
TORCH_HINT = "install the torch plugin: pip install -e plugins/autotm-torch"
"""What to do when no frontend that exports policies is installed."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(subparsers, "export-policy", DESCRIPTION,
                         help="write a plan's recompute and offload decisions as a framework's "
                         "policy (torch: selective activation checkpointing)")
    parser.add_argument("plan", metavar="PLAN", help="a plan file (.json)")
    parser.add_argument("--graph", required=True, metavar="GRAPH",
                        help=f"the plan's graph: {SOURCE_HELP}, e.g. torch:models.py:factory")
    parser.add_argument("--system", metavar="SYSTEM",
                        help=f"{SYSTEM_HELP} (default: the plan's system, when a preset)")
    parser.add_argument("--frontend", metavar="NAME",
                        help="the plugin that writes the policy (default: the frontend of a "
                        "FRONTEND:ARGUMENT graph, else torch)")
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                        help="an option for the frontend of a FRONTEND:ARGUMENT graph, as for "
                        "import (repeatable)")
    parser.add_argument("--batch-size", type=int, metavar="N",
                        help="batch size for the frontend of a FRONTEND:ARGUMENT graph, as for "
                        "import")
    parser.add_argument("-o", "--output", required=True, metavar="FILE",
                        help="policy file to write")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, console: Console) -> int:
    from autotm_core.plans import check_plan, load_plan
    from autotm_core.presets import resolve_system
    from autotm_core.sources import load_source
    from autotm_core.units import format_bytes

    options = _options(args)
    plan = load_plan(args.plan)
    exporter = _exporter(args)
    graph = load_source(args.graph, **options)
    if args.system is None and not _is_preset(plan.system):
        raise UsageError(f"the plan's system {plan.system!r} is no preset",
                         hint="give the memory-system file it was planned for with --system")
    system = resolve_system(args.system if args.system is not None else plan.system)
    check_plan(plan, graph, system)
    facts = exporter.export_policy(plan, graph, fast_pool=system.pools[0].name, path=args.output)
    sizes = {k: format_bytes(v) if k.endswith("_nbytes") else f"{v:,}" for k, v in facts.items()}
    console.print(f"wrote {args.output}: the policy of {plan.planner or 'the plan'} for "
                  f"{graph.name!r}", highlight=False, soft_wrap=True)
    for name, value in sizes.items():
        console.print(f"  {name.removesuffix('_nbytes').replace('_', ' ')}: {value}",
                      highlight=False, soft_wrap=True)
    # what eager PyTorch keeps for the backward pass: every activation it reads (the
    # policy's saved bytes also count the loss's outputs: a few bytes, hence the margin)
    eager = facts.get("kept_nbytes", 0) + facts.get("recomputed_nbytes", 0)
    if facts.get("saved_nbytes", 0) > 1.01 * eager:
        console.print(
            f"[bold yellow]warning[/]: the policy holds {format_bytes(facts['saved_nbytes'])} "
            f"from the forward pass, more than no checkpointing keeps ({format_bytes(eager)}): "
            "an op that must not be replayed (batch-norm in training) is saved with every "
            "output; see docs/torch-execution.md, 'Whole ops'", highlight=False,
            soft_wrap=True)
    return 0


def _exporter(args: argparse.Namespace) -> PolicyExporter:
    """The frontend that writes the policy, checked before the graph is loaded."""
    from autotm_core.plugins import PolicyExporter, get_frontend

    name = args.frontend
    if name is None:
        frontend, sep, _ = args.graph.partition(":")
        name = frontend if sep and frontend not in ("json", "example", "zoo") \
            and len(frontend) > 1 else "torch"
    try:
        frontend = get_frontend(name)
    except UnknownPluginError as exc:
        raise UnknownPluginError(exc.message, hint=TORCH_HINT if name == "torch" else
                                 "see 'python -m autotm_core plugins'") from None
    if not isinstance(frontend, PolicyExporter):
        raise UsageError(f"frontend {name!r} cannot write a policy (it has no export_policy())",
                         hint="use --frontend torch for a PyTorch model")
    return frontend


def _options(args: argparse.Namespace) -> dict[str, object]:
    """``--option`` and ``--batch-size`` for a FRONTEND:ARGUMENT graph."""
    from pathlib import Path

    from autotm_core.cli.import_command import parse_options

    options: dict[str, object] = dict(parse_options(args.option))
    if args.batch_size is not None:
        options["batch_size"] = args.batch_size
    if options and (":" not in args.graph or Path(args.graph).exists()):
        raise UsageError("--option and --batch-size are for the frontend of a "
                         "FRONTEND:ARGUMENT graph", hint="a graph file takes none")
    return options


def _is_preset(name: str) -> bool:
    from autotm_core.presets import PRESETS

    return name in PRESETS
