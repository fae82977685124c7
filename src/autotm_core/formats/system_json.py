"""The memory-system file: ``autotm-core/memory-system``, version 1 (see docs/formats.md)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from autotm_core.errors import MemorySystemError
from autotm_core.formats.document import Fields, envelope, read_document, write_document
from autotm_core.memory import CopyLink, MemorySystem, Pool

KIND = "memory-system"
VERSION = 1
_POOL_FIELDS = {"name", "capacity_nbytes", "read_bytes_per_second", "write_bytes_per_second",
                "latency_seconds", "numa_node", "device"}
_LINK_FIELDS = {"from", "to", "sync_bytes_per_second", "async_bytes_per_second", "duplex",
                "kernel_traffic"}
_NUMBER = (int, float)


def system_to_document(system: MemorySystem) -> dict[str, Any]:
    """The JSON document of ``system``."""
    return {
        **envelope(KIND, VERSION),
        "name": system.name,
        "description": system.description,
        "source": system.source,
        "flops_per_second": system.flops_per_second,
        # written when set: a file without it means what it always meant
        **({"kernel_overhead_seconds": system.kernel_overhead_seconds}
           if system.kernel_overhead_seconds else {}),
        "pools": [
            {
                "name": p.name,
                "capacity_nbytes": p.capacity_nbytes,
                "read_bytes_per_second": p.read_bytes_per_second,
                "write_bytes_per_second": p.write_bytes_per_second,
                "latency_seconds": p.latency_seconds,
                "numa_node": p.numa_node,
                "device": p.device,
            }
            for p in system.pools
        ],
        "copies": [
            {
                "from": link.source,
                "to": link.target,
                "sync_bytes_per_second": link.sync_bytes_per_second,
                "async_bytes_per_second": link.async_bytes_per_second,
                # written when set: a file without them means what it always meant
                **({"duplex": True} if link.duplex else {}),
                **({"kernel_traffic": True} if link.kernel_traffic else {}),
            }
            for link in system.links
        ],
    }


def save_system(system: MemorySystem, path: str | os.PathLike[str]) -> None:
    """Write ``system`` to ``path`` (atomically)."""
    write_document(path, system_to_document(system))


def load_system(path: str | os.PathLike[str]) -> MemorySystem:
    """Read a memory-system file."""
    doc, fields = read_document(path, KIND, {VERSION})
    return _system_from(doc, fields)


def _system_from(doc: Mapping[str, Any], fields: Fields) -> MemorySystem:
    fields.unknown_keys(
        doc,
        {"format", "version", "name", "description", "source", "flops_per_second",
         "kernel_overhead_seconds", "pools", "copies"},
        "",
    )
    pools = []
    for where, obj in fields.entries(doc, "pools", _POOL_FIELDS):
        pools.append(
            _checked(
                fields,
                where,
                lambda obj=obj, where=where: Pool(
                    name=fields.get(obj, "name", where, str),
                    capacity_nbytes=fields.get(obj, "capacity_nbytes", where, int, required=False),
                    read_bytes_per_second=fields.get(obj, "read_bytes_per_second", where, _NUMBER),
                    write_bytes_per_second=fields.get(
                        obj, "write_bytes_per_second", where, _NUMBER
                    ),
                    latency_seconds=fields.get(
                        obj, "latency_seconds", where, _NUMBER, required=False, default=0.0
                    ),
                    numa_node=fields.get(obj, "numa_node", where, int, required=False),
                    device=fields.get(obj, "device", where, str, required=False),
                ),
            )
        )
    links = []
    for where, obj in fields.entries(doc, "copies", _LINK_FIELDS, required=False):
        links.append(
            _checked(
                fields,
                where,
                lambda obj=obj, where=where: CopyLink(
                    source=fields.get(obj, "from", where, str),
                    target=fields.get(obj, "to", where, str),
                    sync_bytes_per_second=fields.get(obj, "sync_bytes_per_second", where, _NUMBER),
                    async_bytes_per_second=fields.get(
                        obj, "async_bytes_per_second", where, _NUMBER
                    ),
                    duplex=fields.get(obj, "duplex", where, bool, required=False,
                                      default=False),
                    kernel_traffic=fields.get(obj, "kernel_traffic", where, bool,
                                              required=False, default=False),
                ),
            )
        )
    return _checked(
        fields,
        "",
        lambda: MemorySystem(
            name=fields.get(doc, "name", "", str),
            description=fields.get(doc, "description", "", str, required=False, default=""),
            source=fields.get(doc, "source", "", str, required=False, default=""),
            flops_per_second=fields.get(
                doc, "flops_per_second", "", _NUMBER, required=False, default=1e12
            ),
            kernel_overhead_seconds=fields.get(
                doc, "kernel_overhead_seconds", "", _NUMBER, required=False, default=0.0
            ),
            pools=tuple(pools),
            links=tuple(links),
        ),
    )


def _checked(fields: Fields, where: str, build: Any) -> Any:
    try:
        return build()
    except MemorySystemError as exc:
        raise MemorySystemError(
            f"{fields.origin}: {where + ': ' if where else ''}{exc.message}", hint=exc.hint
        ) from None
