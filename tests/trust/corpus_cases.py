"""The one-change cases of :mod:`.corpus`, by kind: number fields and their legal values, then
named edits (with ``"used"`` where the file reads but cannot be used, ``"legal"`` where it is
odd but allowed)."""

from __future__ import annotations

from typing import Any

from .corpus import append, drop, put, twice

_MOVE = {"tensor": "w", "from": "slow", "to": "fast", "kernel": 1, "kind": "sync"}

GRAPH = ("graph", [
    ("tensors.0.nbytes", ("huge",)),
    ("kernels.0.flops", ("fraction", "huge", "null")),
    ("kernels.1.workspace_nbytes", ("huge", "null")),
], [
    ("unknown tensor kind", put("tensors.0.kind", "weights")),
    ("tensor named twice", twice("tensors")),
    ("kernel named twice", twice("kernels")),
    ("reads an undeclared tensor", put("kernels.2.inputs", ["nope"])),
    ("writes an undeclared tensor", put("kernels.2.outputs", ["nope"])),
    ("reads before it is produced", put("kernels.0.inputs", ["w", "y"])),
    ("produced twice", put("kernels.2.outputs", ["y"])),
    ("parameter written as a new value", put("kernels.3", {"name": "k3", "op": "init",
                                                           "outputs": ["w"]})),
    ("constant written", put("tensors.0.kind", "constant")),
    ("kernel touching nothing", put("kernels.2.inputs", [])),
    ("input listed twice", put("kernels.2.inputs", ["w", "w"])),
    ("empty tensor name", put("tensors.1.name", "")),
    ("no op", drop("kernels.0.op")),
    ("no kernel name", drop("kernels.0.name")),
    ("no nbytes", drop("tensors.0.nbytes")),
    ("tensors an object", put("tensors", {})),
    ("kernels null", put("kernels", None)),
    ("negative shape", put("tensors.0.shape", [-1, 4])),
    ("inputs a string", put("kernels.0.inputs", "w")),
    ("dtype a number", put("tensors.0.dtype", 4)),
    ("unknown tensor field", put("tensors.0.colour", "blue")),
    ("unknown kernel field", put("kernels.0.colour", "blue")),
    ("pools a string", put("tensors.0.pools", "fast")),
    ("no kernels", put("kernels", []), "legal"),
])

SYSTEM = ("system", [
    ("pools.0.capacity_nbytes", ("huge", "null")),
    ("pools.0.read_bytes_per_second", ("fraction", "huge")),
    ("pools.1.latency_seconds", ("fraction", "huge", "null")),
    ("copies.0.sync_bytes_per_second", ("fraction", "huge")),
    ("flops_per_second", ("fraction", "huge", "null")),
], [
    ("one pool", lambda d: d["pools"].pop()),
    ("no pools", put("pools", [])),
    ("pool named twice", put("pools.1.name", "fast")),
    ("copy from an unknown pool", put("copies.0.from", "nope")),
    ("copy to itself", put("copies.0.to", "slow")),
    ("copy given twice", twice("copies")),
    ("empty pool name", put("pools.0.name", "")),
    ("no read bandwidth", drop("pools.0.read_bytes_per_second")),
    ("pools an object", put("pools", {})),
    ("unknown pool field", put("pools.0.colour", "blue")),
    ("unknown copy field", put("copies.0.colour", "blue")),
    ("negative NUMA node", put("pools.0.numa_node", -1)),
    ("NUMA node a string", put("pools.0.numa_node", "0")),
    ("device a number", put("pools.0.device", 3)),
    ("zero write bandwidth", put("pools.0.write_bytes_per_second", 0)),
    ("zero compute", put("flops_per_second", 0)),
])

COSTS = ("costs", [
    ("kernels.0.configs.0.seconds", ("fraction", "huge")),
], [
    ("a kernel missing", drop("kernels.0")),
    ("an unknown kernel", put("kernels.0.name", "nope")),
    ("a kernel twice", twice("kernels")),
    ("a tensor missing", drop("kernels.0.configs.0.pools.w")),
    ("an extra tensor", put("kernels.0.configs.0.pools.z", "fast")),
    ("an unknown pool", put("kernels.0.configs.0.pools.w", "nope")),
    ("a pool not listed", put("system.pools", ["fast"])),
    ("a configuration twice", twice("kernels.0.configs")),
    ("no configurations", put("kernels.0.configs", [])),
    ("no pools listed", put("system.pools", [])),
    ("a pool the system lacks", put("system.pools", ["fast", "slow", "nope"])),
    ("a pool listed twice", put("system.pools", ["fast", "fast", "slow"])),
    ("no system", drop("system")),
    ("kernels an object", put("kernels", {})),
    ("unknown configuration field", put("kernels.0.configs.0.colour", "blue")),
    ("a pool given as a number", put("kernels.0.configs.0.pools.w", 0)),
])

PLAN = ("plan", [
    ("residencies.0.first", ()),
    ("residencies.1.last", ()),
    ("residencies.1.offset", ("null",)),
    ("capacities.fast", ()),
], [
    ("an unknown tensor", put("residencies.0.tensor", "nope")),
    ("an unknown pool", put("residencies.0.pool", "nope")),
    ("first after last", put("residencies.1.first", 2)),
    ("last past the program", put("residencies.0.last", 4)),
    ("offset past the pool", put("residencies.1.offset", 524288 - 1)),
    ("offsets sharing bytes", put("residencies.1.offset", 4096)),
    ("an unknown move kind", append("moves", {**_MOVE, "kind": "later"})),
    ("a move past the program", append("moves", {**_MOVE, "kernel": 9})),
    ("a move to the same pool", append("moves", {**_MOVE, "from": "fast"})),
    ("a move of an unknown tensor", append("moves", {**_MOVE, "tensor": "nope"})),
    ("a move from where it is not", append("moves", _MOVE)),
    ("a configuration missing", drop("configs.3")),
    ("a configuration too wide", put("configs.2", ["fast", "fast"])),
    ("a configuration naming an unknown pool", put("configs.0.0", "nope")),
    ("a configuration naming no pool", put("configs.0.0", "?")),
    ("a pool's capacity missing", drop("capacities.slow")),
    ("a capacity for an unknown pool", put("capacities.middle", 5)),
    ("another graph", put("graph", "other")),
    ("another system", put("system", "other")),
    ("residencies an object", put("residencies", {})),
    ("a workspace past the program", put("workspaces", [{"kernel": 9, "offset": 0}])),
    ("a negative workspace offset", put("workspaces", [{"kernel": 0, "offset": -1}])),
    ("a residency twice", twice("residencies")),
    ("a residency without a pool", drop("residencies.0.pool")),
    ("a tensor resident nowhere", drop("residencies.1")),
    ("attributes a list", put("attributes", [])),
    ("planner a number", put("planner", 5)),
    ("a free copy of an updated parameter", append(
        "residencies", {"tensor": "w", "pool": "slow", "first": 0, "last": 1})),
])

GRID = ("grid", [
    ("relative_gap", ("fraction", "huge", "null")),
    ("time_limit_seconds", ("fraction", "huge", "null")),
], [
    ("an unknown planner", put("experiments.0.planners", ["fastest"])),
    ("no limits", put("experiments.0.limits", [])),
    ("no experiments", put("experiments", [])),
    ("an experiment twice", twice("experiments")),
    ("an unknown mode", put("mode", "quick")),
    ("addresses a string", put("addresses", "yes")),
    ("no graphs", put("experiments.0.graphs", [])),
    ("an unreadable limit", put("experiments.0.limits", ["banana"])),
    ("a zero ratio", put("experiments.0.limits", ["4:0"])),
    ("no experiment name", drop("experiments.0.name")),
    ("a graph without a source", put("experiments.0.graphs", [{"label": "x"}])),
    ("an unknown system", put("experiments.0.system", "nope-2030"), "used"),
    ("an unknown frontend", put("experiments.0.graphs", ["nope:thing"]), "used"),
    ("an unknown solver", lambda d: (d.update(solver="gurobi2"),
                                     d["experiments"][0].update(planners=["static"])), "used"),
])

CASES: tuple[Any, ...] = (GRAPH, SYSTEM, COSTS, PLAN, GRID)
"""Every kind's cases."""
