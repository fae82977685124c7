"""The broken files of tests/data and what the one error about each must say."""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data"

BROKEN_GRAPHS: dict[str, str] = {
    "graph_empty.json": "is empty; expected a JSON object",
    "graph_malformed.json": "is not valid JSON: Expecting ',' delimiter (line 1, column 123)",
    "graph_truncated.json": "is not valid JSON: Unterminated string",
    "graph_pickle.json": "cannot be read: 'utf-8' codec can't decode byte 0x80",
    "graph_deeply_nested.json": "is nested too deeply",
    "graph_top_level_list.json": "(top level): expected an object, got a list",
    "graph_not_autotm.json": "format: is 'something-else'; expected 'autotm-core/graph'",
    "graph_wrong_kind.json": "format: is a memory-system file; expected a graph file",
    "graph_wrong_version.json": "version: 7 is not supported; this autotm-core reads graph "
                                "versions 1",
    "graph_unknown_top_field.json": "(top level): unknown field 'tensor'",
    "graph_missing_kernels.json": "kernels: is missing",
    "graph_missing_field.json": "tensors[2].nbytes: is missing",
    "graph_wrong_type.json": "tensors[2].nbytes: expected an integer or a number, got the "
                             "string '64'",
    "graph_negative_size.json": "tensors[2]: tensor 'y': size -64 is negative",
    "graph_fractional_size.json": "tensors[2]: tensor 'y': size 64.5 is not a whole "
                                  "number of bytes",
    "graph_unknown_field.json": "tensors[2]: unknown field 'nbyte'",
    "graph_unknown_kind.json": "tensors[1].kind: 'weights' is not a tensor kind",
    "graph_inputs_not_a_list.json": "kernels[0].inputs: expected a list, got the string 'x'",
    "graph_use_before_produce.json": "kernel 'relu' (#0): reads tensor 'z' before kernel "
                                     "'mm' produces it",
    "graph_unknown_tensor.json": "kernel 'mm' (#0): reads unknown tensor 'weight'",
    "graph_duplicate_kernel.json": "kernel 'mm': appears 2 times",
    "graph_empty_kernel.json": "kernel 'barrier' (#1): reads and writes nothing",
}
"""Graph file -> a part of the one error line that names the problem (and field)."""

BROKEN_SYSTEMS: dict[str, str] = {
    "system_truncated.json": "is not valid JSON",
    "system_wrong_kind.json": "format: is a graph file; expected a memory-system file",
    "system_wrong_version.json": "version: 2 is not supported",
    "system_missing_field.json": "pools[1].read_bytes_per_second: is missing",
    "system_capacity_string.json": "pools[0].capacity_nbytes: expected an integer, got the string",
    "system_unknown_field.json": "pools[1]: unknown field 'bandwidth'",
    "system_negative_capacity.json": "pools[0]: pool 'dram': capacity -1 must be",
    "system_zero_bandwidth.json": "pools[1]: pool 'pmm': write_bytes_per_second is 0; it must be "
                                  "greater than zero",
    "system_negative_bandwidth.json": "copies[0]: copy 'pmm' -> 'dram': sync_bytes_per_second is "
                                      "-29000000000.0",
    "system_nan_bandwidth.json": "pools[0]: pool 'dram': read_bytes_per_second nan is not a number",
    "system_one_pool.json": "has 1 pool(s); it needs at least two",
    "system_duplicate_pool.json": "names pool 'dram' twice",
    "system_unknown_pool_link.json": "copy 'pmm' -> 'hbm' names unknown pool 'hbm'",
}
"""Memory-system file -> a part of the error that names the problem (and field)."""
