"""Generators of the example training graphs (see the package docstring)."""

from __future__ import annotations

from autotm_core.ir import Graph, GraphBuilder, TensorKind

_F32 = "float32"


def mlp(batch: int = 64, widths: tuple[int, ...] = (784, 1024, 1024, 512, 10)) -> Graph:
    """A multi-layer perceptron trained one step with SGD and momentum."""
    b = GraphBuilder("mlp")
    x = b.tensor("x", shape=(batch, widths[0]), dtype=_F32, kind=TensorKind.INPUT)
    labels = b.tensor("labels", shape=(batch,), dtype="int64", kind=TensorKind.INPUT)
    layers = len(widths) - 1
    params: list[tuple[str, str]] = []
    saved: list[tuple[str, str | None]] = []  # (layer input, pre-activation) for backward
    h = x
    for i in range(layers):
        fan_in, fan_out = widths[i], widths[i + 1]
        w = b.tensor(f"w{i}", shape=(fan_in, fan_out), dtype=_F32, kind=TensorKind.PARAMETER)
        bias = b.tensor(f"b{i}", shape=(fan_out,), dtype=_F32, kind=TensorKind.PARAMETER)
        params.append((w, bias))
        z = b.tensor(f"z{i}", shape=(batch, fan_out), dtype=_F32)
        b.kernel(f"linear{i}", op="linear", inputs=[h, w, bias], outputs=[z],
                 flops=2 * batch * fan_in * fan_out, module=f"layers.{i}.fc")
        if i < layers - 1:
            a = b.tensor(f"a{i}", shape=(batch, fan_out), dtype=_F32)
            b.kernel(f"relu{i}", op="relu", inputs=[z], outputs=[a], flops=batch * fan_out,
                     module=f"layers.{i}.act")
            saved.append((h, z))
            h = a
        else:
            saved.append((h, None))
            logits = z
    loss = b.tensor("loss", shape=(), dtype=_F32, kind=TensorKind.OUTPUT)
    grad = b.tensor("grad_logits", shape=(batch, widths[-1]), dtype=_F32, kind=TensorKind.GRADIENT)
    b.kernel("cross_entropy", op="cross_entropy", inputs=[logits, labels], outputs=[loss],
             flops=5 * batch * widths[-1])
    b.kernel("cross_entropy_backward", op="cross_entropy_backward", inputs=[logits, labels],
             outputs=[grad], flops=5 * batch * widths[-1])
    grads: list[tuple[str, str]] = []
    for i in reversed(range(layers)):
        layer_input, pre_activation = saved[i]
        fan_in, fan_out = widths[i], widths[i + 1]
        if pre_activation is not None:
            dz = b.tensor(f"grad_z{i}", shape=(batch, fan_out), dtype=_F32,
                          kind=TensorKind.GRADIENT)
            b.kernel(f"relu{i}_backward", op="relu_backward", inputs=[grad, pre_activation],
                     outputs=[dz], flops=batch * fan_out, module=f"layers.{i}.act")
            grad = dz
        w, bias = params[i]
        dw = b.tensor(f"grad_w{i}", shape=(fan_in, fan_out), dtype=_F32, kind=TensorKind.GRADIENT)
        db = b.tensor(f"grad_b{i}", shape=(fan_out,), dtype=_F32, kind=TensorKind.GRADIENT)
        outputs = [dw, db]
        if i > 0:
            dx = b.tensor(f"grad_a{i - 1}", shape=(batch, fan_in), dtype=_F32,
                          kind=TensorKind.GRADIENT)
            outputs.append(dx)
        b.kernel(f"linear{i}_backward", op="linear_backward", inputs=[grad, layer_input, w],
                 outputs=outputs, flops=4 * batch * fan_in * fan_out, module=f"layers.{i}.fc")
        grads.append((dw, db))
        if i > 0:
            grad = dx
    for (w, bias), (dw, db) in zip(params, reversed(grads), strict=True):
        for p, g in ((w, dw), (bias, db)):
            m = b.tensor(f"momentum_{p}", nbytes=b.nbytes(p), kind=TensorKind.OPTIMIZER_STATE)
            b.kernel(f"sgd_{p}", op="sgd_momentum", inputs=[p, g, m], outputs=[p, m],
                     flops=3 * b.nbytes(p) // 4)
    return b.build()


def cnn(batch: int = 32, image: int = 32, channels: tuple[int, ...] = (3, 32, 64, 128)) -> Graph:
    """A small convolutional network trained one step with Adam."""
    b = GraphBuilder("cnn")
    x = b.tensor("images", shape=(batch, channels[0], image, image), dtype=_F32,
                 kind=TensorKind.INPUT)
    labels = b.tensor("labels", shape=(batch,), dtype="int64", kind=TensorKind.INPUT)
    params: list[str] = []
    tape: list[tuple[str, str, tuple[str, ...], tuple[str, ...], float, str]] = []
    h, size = x, image
    for i in range(len(channels) - 1):
        cin, cout = channels[i], channels[i + 1]
        w = b.tensor(f"conv{i}.weight", shape=(cout, cin, 3, 3), dtype=_F32,
                     kind=TensorKind.PARAMETER)
        gamma = b.tensor(f"bn{i}.weight", shape=(cout,), dtype=_F32, kind=TensorKind.PARAMETER)
        beta = b.tensor(f"bn{i}.bias", shape=(cout,), dtype=_F32, kind=TensorKind.PARAMETER)
        params += [w, gamma, beta]
        shape = (batch, cout, size, size)
        conv_flops = 2.0 * batch * cout * size * size * cin * 9
        c = b.tensor(f"conv{i}.out", shape=shape, dtype=_F32)
        b.kernel(f"conv{i}", op="conv2d", inputs=[h, w], outputs=[c], flops=conv_flops,
                 workspace_nbytes=cin * 9 * size * size * 4, module=f"blocks.{i}.conv")
        n = b.tensor(f"bn{i}.out", shape=shape, dtype=_F32)
        b.kernel(f"bn{i}", op="batch_norm", inputs=[c, gamma, beta], outputs=[n],
                 flops=8.0 * batch * cout * size * size, module=f"blocks.{i}.bn")
        r = b.tensor(f"relu{i}.out", shape=shape, dtype=_F32)
        b.kernel(f"relu{i}", op="relu", inputs=[n], outputs=[r],
                 flops=1.0 * batch * cout * size * size, module=f"blocks.{i}.relu")
        size //= 2
        p = b.tensor(f"pool{i}.out", shape=(batch, cout, size, size), dtype=_F32)
        b.kernel(f"pool{i}", op="max_pool2d", inputs=[r], outputs=[p],
                 flops=4.0 * batch * cout * size * size, module=f"blocks.{i}.pool")
        tape += [  # forward order; the backward pass walks it in reverse
            (f"conv{i}", "conv2d_backward", (h, w), (w,), 2 * conv_flops, f"blocks.{i}.conv"),
            (f"bn{i}", "batch_norm_backward", (c, gamma), (gamma, beta),
             12.0 * batch * cout * 4 * size * size, f"blocks.{i}.bn"),
            (f"relu{i}", "relu_backward", (n,), (), 1.0 * batch * cout * 4 * size * size,
             f"blocks.{i}.relu"),
            (f"pool{i}", "max_pool2d_backward", (r,), (), 4.0 * batch * cout * size * size,
             f"blocks.{i}.pool"),
        ]
        h = p
    features = channels[-1] * size * size
    fc = b.tensor("fc.weight", shape=(features, 10), dtype=_F32, kind=TensorKind.PARAMETER)
    params.append(fc)
    logits = b.tensor("logits", shape=(batch, 10), dtype=_F32)
    b.kernel("fc", op="linear", inputs=[h, fc], outputs=[logits], flops=2.0 * batch * features * 10,
             module="fc")
    loss = b.tensor("loss", shape=(), dtype=_F32, kind=TensorKind.OUTPUT)
    b.kernel("cross_entropy", op="cross_entropy", inputs=[logits, labels], outputs=[loss],
             flops=50.0 * batch)
    grad = b.tensor("grad.logits", shape=(batch, 10), dtype=_F32, kind=TensorKind.GRADIENT)
    b.kernel("cross_entropy_backward", op="cross_entropy_backward", inputs=[logits, labels],
             outputs=[grad], flops=50.0 * batch)
    grad_fc = b.tensor("grad.fc.weight", nbytes=b.nbytes(fc), kind=TensorKind.GRADIENT)
    grad_h = b.tensor(f"grad.{h}", nbytes=b.nbytes(h), kind=TensorKind.GRADIENT)
    b.kernel("fc_backward", op="linear_backward", inputs=[grad, h, fc], outputs=[grad_fc, grad_h],
             flops=4.0 * batch * features * 10, module="fc")
    grad = grad_h
    param_grads = {fc: grad_fc}
    for name, op, saved, weights, flops, module in reversed(tape):
        source_input = saved[0]
        outputs = [f"grad.{name}.{wt}" for wt in weights]
        for wt, g in zip(weights, outputs, strict=True):
            b.tensor(g, nbytes=b.nbytes(wt), kind=TensorKind.GRADIENT)
            param_grads[wt] = g
        if source_input != x:
            gi = b.tensor(f"grad.{name}.in", nbytes=b.nbytes(source_input),
                          kind=TensorKind.GRADIENT)
            outputs.append(gi)
        b.kernel(f"{name}_backward", op=op, inputs=[grad, *saved],
                 outputs=outputs, flops=flops, module=module)
        if source_input != x:
            grad = gi
    for p in params:
        m = b.tensor(f"adam.m.{p}", nbytes=b.nbytes(p), kind=TensorKind.OPTIMIZER_STATE)
        v = b.tensor(f"adam.v.{p}", nbytes=b.nbytes(p), kind=TensorKind.OPTIMIZER_STATE)
        b.kernel(f"adam.{p}", op="adam", inputs=[p, param_grads[p], m, v], outputs=[p, m, v],
                 flops=10.0 * b.nbytes(p) / 4)
    return b.build()


def training_chain(layers: int, *, base_nbytes: int = 1 << 20) -> Graph:
    """A synthetic training step of ``layers`` layers: 3 x layers + 1 kernels.."""
    b = GraphBuilder(f"chain-{layers}")
    sizes = [base_nbytes * (4 + (i * 7919) % 13) // 4 for i in range(layers + 1)]
    acts = [b.tensor("x", nbytes=sizes[0], kind=TensorKind.INPUT)]
    weights = []
    for i in range(layers):
        w = b.tensor(f"w{i}", nbytes=_weight_nbytes(i, base_nbytes), kind=TensorKind.PARAMETER)
        weights.append(w)
        a = b.tensor(f"a{i}", nbytes=sizes[i + 1])
        b.kernel(f"fwd{i}", op="layer", inputs=[acts[-1], w], outputs=[a],
                 flops=float(sizes[i + 1]) * 64)
        acts.append(a)
    grad = b.tensor("grad_out", nbytes=sizes[-1], kind=TensorKind.GRADIENT)
    loss = b.tensor("loss", nbytes=4, kind=TensorKind.OUTPUT)
    b.kernel("loss", op="loss", inputs=[acts[-1]], outputs=[loss, grad], flops=float(sizes[-1]))
    weight_grads = []
    for i in reversed(range(layers)):
        dw = b.tensor(f"grad_w{i}", nbytes=_weight_nbytes(i, base_nbytes), kind=TensorKind.GRADIENT)
        outputs = [dw]
        if i > 0:
            outputs.append(b.tensor(f"grad_a{i - 1}", nbytes=sizes[i], kind=TensorKind.GRADIENT))
        b.kernel(f"bwd{i}", op="layer_backward", inputs=[grad, acts[i], weights[i]],
                 outputs=outputs, flops=float(sizes[i + 1]) * 128)
        weight_grads.append(dw)
        grad = outputs[-1]
    for w, dw in zip(weights, reversed(weight_grads), strict=True):
        b.kernel(f"sgd_{w}", op="sgd", inputs=[w, dw], outputs=[w], flops=float(b.nbytes(w)) / 4)
    return b.build()


def _weight_nbytes(i: int, base_nbytes: int) -> int:
    return base_nbytes // 4 * (1 + i % 3)
