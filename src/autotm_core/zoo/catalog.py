"""The networks of the zoo by name, and the parsing of their options.

A network is named alone (``resnet50``) or with options after a colon,
comma-separated (``resnet50:batch=32,image=224``); ``?`` and ``&`` are accepted
in their place (``resnet50?batch=32&image=224``). Option values are converted to
the type of the builder's default (integers, ``true``/``false``, names).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any

import attrs

from autotm_core.errors import UsageError
from autotm_core.ir import Graph
from autotm_core.zoo import densenet, gpt, inception, resnet, vgg


@attrs.frozen
class Network:
    """One entry of the zoo."""

    builder: Callable[..., Graph]
    """Function building the training step; its keyword arguments are the options."""
    fixed: dict[str, Any]
    """Arguments this entry fixes (e.g. ``depth=50``), not options."""
    description: str
    """One line for listings."""

    @property
    def defaults(self) -> dict[str, Any]:
        """Every option and its default value."""
        return {name: p.default for name, p in inspect.signature(self.builder).parameters.items()
                if p.kind is p.KEYWORD_ONLY and name not in self.fixed}


NETWORKS: dict[str, Network] = {
    "vgg19": Network(vgg.vgg, {"blocks": vgg.VGG19_BLOCKS, "name": "vgg19"},
                     "VGG-19, 143.7 M parameters"),
    "vgg416": Network(vgg.vgg, {"blocks": vgg.vgg416_blocks(), "name": "vgg416"},
                      "AutoTM's VGG-416 (413 convolutions)"),
    **{f"resnet{d}": Network(resnet.resnet, {"depth": d}, f"ResNet-{d}, bottleneck blocks {s}")
       for d, s in resnet.RESNET_STAGES.items()},
    "inception_v4": Network(inception.inception_v4, {}, "Inception v4, 299x299, 42.7 M parameters"),
    **{f"densenet{d}": Network(densenet.densenet, {"depth": d}, f"DenseNet-BC-{d}, blocks {s}")
       for d, s in densenet.DENSENET_BLOCKS.items()},
    "gpt2": Network(gpt.gpt2, {}, "GPT-2-style transformer (GPT-2 small by default)"),
}
"""Every network of the zoo, by name."""

_SEPARATORS = re.compile(r"[,&]")
_TRUE, _FALSE = {"true", "yes", "on", "1"}, {"false", "no", "off", "0"}


def parse_spec(spec: str) -> tuple[str, dict[str, str]]:
    """``"resnet50:batch=32,image=64"`` -> ``("resnet50", {"batch": "32", "image": "64"})``."""
    name, _, rest = spec.replace("?", ":", 1).partition(":")
    options: dict[str, str] = {}
    for item in filter(None, (s.strip() for s in _SEPARATORS.split(rest))):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"zoo network {spec!r}: cannot read option {item!r}",
                             hint="write options as NAME=VALUE, e.g. resnet50:batch=32,image=224")
        if key.strip() in options:
            raise UsageError(f"zoo network {spec!r}: option {key.strip()!r} is given twice")
        options[key.strip()] = value.strip()
    return name.strip(), options


def _convert(network: str, option: str, text: str, default: Any) -> Any:
    if isinstance(default, bool):
        if text.lower() in _TRUE | _FALSE:
            return text.lower() in _TRUE
        raise UsageError(f"zoo network {network!r}: {option}={text!r} is not true or false",
                         hint=f"write {option}=true or {option}=false")
    if isinstance(default, int) or default is None:
        try:
            return int(text)
        except ValueError:
            raise UsageError(f"zoo network {network!r}: {option}={text!r} is not an integer",
                             hint=f"e.g. {option}=32") from None
    return text


def describe_options(network: Network) -> str:
    """``"batch=1, image=224, ..."``: the options of ``network`` with their defaults."""
    return ", ".join(f"{k}={getattr(v, 'value', v)}" for k, v in network.defaults.items())


def build_network(spec: str, **options: Any) -> Graph:
    """Build the zoo network ``spec`` (a name, maybe with options); ``options`` add to them."""
    name, texts = parse_spec(spec)
    network = NETWORKS.get(name)
    if network is None:
        raise UsageError(f"the zoo has no network {name!r}",
                         hint="choose one of " + ", ".join(NETWORKS))
    defaults = network.defaults
    unknown = sorted(set(texts) - set(defaults) | set(options) - set(defaults))
    if unknown:
        raise UsageError(f"zoo network {name!r} has no option {', '.join(map(repr, unknown))}",
                         hint="its options: " + describe_options(network))
    twice = sorted(set(texts) & set(options))
    if twice:
        raise UsageError(f"zoo network {name!r}: option {', '.join(twice)} given twice",
                         hint="give each option either in the name or as an argument")
    # options as text (``import zoo resnet50 --option batch=8``) are read as in the name
    values = {k: _convert(name, k, v, defaults[k]) if isinstance(v, str) else v
              for k, v in {**texts, **options}.items()}
    return network.builder(**network.fixed, **values)
