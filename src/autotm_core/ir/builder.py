"""A small API to build a graph one tensor and one kernel at a time."""

from __future__ import annotations

from collections.abc import Sequence

from autotm_core.errors import GraphError
from autotm_core.ir.graph import Graph
from autotm_core.ir.kernel import Kernel
from autotm_core.ir.tensor import Tensor, TensorKind, nbytes_of
from autotm_core.ir.verify import check_graph


class GraphBuilder:
    """Collects tensors and kernels in order, then builds a verified :class:`Graph`.

    >>> b = GraphBuilder("tiny")
    >>> x = b.tensor("x", shape=(4, 8), dtype="float32", kind="input")
    >>> y = b.tensor("y", nbytes=128)
    >>> _ = b.kernel("relu", op="relu", inputs=[x], outputs=[y])
    >>> b.build().liveness.peak_nbytes
    256
    """

    def __init__(self, name: str, *, captured_for: str = "") -> None:
        self._name = name
        self._captured_for = captured_for
        self._tensors: list[Tensor] = []
        self._kernels: list[Kernel] = []
        self._nbytes: dict[str, int] = {}

    def tensor(
        self,
        name: str,
        *,
        nbytes: int | None = None,
        kind: TensorKind | str = TensorKind.ACTIVATION,
        shape: Sequence[int] | None = None,
        dtype: str | None = None,
        pools: Sequence[str] | None = None,
    ) -> str:
        """Declare a tensor and return its name; ``nbytes`` defaults to shape x dtype."""
        if nbytes is None:
            if shape is None or dtype is None:
                raise GraphError(
                    f"tensor {name!r}: give nbytes, or both shape and dtype",
                )
            nbytes = nbytes_of(tuple(shape), dtype)
        self._nbytes[name] = nbytes
        self._tensors.append(
            Tensor(
                name=name,
                nbytes=nbytes,
                kind=kind,  # the converter checks it
                shape=None if shape is None else tuple(shape),
                dtype=dtype,
                pools=None if pools is None else tuple(pools),
            )
        )
        return name

    def nbytes(self, name: str) -> int:
        """Size of the tensor ``name`` declared earlier."""
        try:
            return self._nbytes[name]
        except KeyError:
            raise GraphError(f"tensor {name!r} has not been declared") from None

    def kernel(
        self,
        name: str,
        *,
        op: str,
        inputs: Sequence[str] = (),
        outputs: Sequence[str] = (),
        flops: float | None = None,
        workspace_nbytes: int = 0,
        module: str = "",
        rerun: bool | None = None,
    ) -> str:
        """Append a kernel (run after every kernel added before it) and return its name."""
        self._kernels.append(
            Kernel(
                name=name,
                op=op,
                inputs=tuple(inputs),
                outputs=tuple(outputs),
                flops=flops,
                workspace_nbytes=workspace_nbytes,
                module=module,
                **({} if rerun is None else {"rerun": rerun}),  # else Kernel's default
            )
        )
        return name

    def build(self, *, verify: bool = True) -> Graph:
        """The graph; with ``verify`` (the default) raises if it breaks an invariant."""
        graph = Graph(name=self._name, tensors=self._tensors, kernels=self._kernels,
                      captured_for=self._captured_for)
        return check_graph(graph) if verify else graph
