"""The ``zoo`` frontend: discovery, the option syntax, library use, CLI and errors."""

from __future__ import annotations

import pytest

from autotm_core import get_frontend
from autotm_core.cli.main import main
from autotm_core.errors import PluginError, UsageError
from autotm_core.sources import load_source
from autotm_core.zoo.catalog import NETWORKS, parse_spec


def test_registered_as_an_entry_point() -> None:
    frontend = get_frontend("zoo")
    assert frontend.unavailable_reason() is None
    assert "resnet50" in frontend.description


def test_option_syntax() -> None:
    assert parse_spec("resnet50") == ("resnet50", {})
    assert parse_spec("gpt2:batch=8,seq=64") == ("gpt2", {"batch": "8", "seq": "64"})
    assert parse_spec("gpt2?batch=8&seq=64") == ("gpt2", {"batch": "8", "seq": "64"})


def test_library_and_source_string_agree() -> None:
    by_keyword = get_frontend("zoo").load("gpt2", batch=2, seq=8, layers=1, vocab=50)
    by_string = load_source("zoo:gpt2:batch=2,seq=8,layers=1,vocab=50")
    assert by_keyword == by_string
    assert by_string.tensor("tokens").shape == (2, 8)


def test_options_are_typed_from_the_defaults() -> None:
    graph = load_source("zoo:inception_v4:image=75,batch_norm=no,optimizer=sgd,dtype=float16")
    assert not any(k.op == "batch_norm" for k in graph.kernels)
    assert any(k.op == "sgd_update" for k in graph.kernels)
    assert graph.tensor("images").nbytes == 3 * 75 * 75 * 2


@pytest.mark.parametrize(
    ("spec", "options", "message"),
    [
        ("alexnet", {}, "no network 'alexnet'"),
        ("resnet50:depth=18", {}, "no option 'depth'"),
        ("resnet50:batch=x", {}, "is not an integer"),
        ("resnet50:batch=0", {}, "must be a positive integer"),
        ("resnet50:batch", {}, "cannot read option"),
        ("resnet50:batch=2", {"batch": 3}, "given twice"),
        ("gpt2:heads=5", {}, "not a multiple"),
        ("gpt2:seq=2048,positions=1024", {}, "exceeds positions"),
        ("gpt2:attention=sparse", {}, "unknown attention"),
        ("vgg19:dropout=maybe", {}, "true or false"),
        ("densenet264:optimizer=lion", {}, "unknown optimizer"),
        ("inception_v4:image=64", {}, "would have shape"),
    ],
)
def test_bad_input_is_one_clear_error(spec: str, options: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message) as info:
        get_frontend("zoo").load(spec, **options)
    assert info.value.hint


def test_non_string_source() -> None:
    with pytest.raises(PluginError):
        get_frontend("zoo").load(42)


def test_every_network_is_listed_with_a_description() -> None:
    assert {"vgg19", "vgg416", "resnet50", "resnet200", "inception_v4", "densenet264",
            "gpt2"} <= set(NETWORKS)
    assert all(n.description and "batch" in n.defaults for n in NETWORKS.values())


def test_cli_info(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", "zoo:resnet50:image=32", "--json"]) == 0
    assert "resnet50" in capsys.readouterr().out
    assert main(["info", "zoo:resnet50:batchsize=2"]) != 0
    err = capsys.readouterr().err
    assert "no option 'batchsize'" in err and "Traceback" not in err



def test_options_as_text_are_read_as_in_the_name() -> None:
    """``import zoo gpt2 --option batch=2`` gives what ``zoo:gpt2:batch=2`` gives."""
    from autotm_core.formats.graph_json import graph_to_document
    from autotm_core.zoo import build_network

    text = build_network("gpt2", batch="2", layers="1", seq="16")
    named = build_network("gpt2:batch=2,layers=1,seq=16")
    assert graph_to_document(text) == graph_to_document(named)
    with pytest.raises(UsageError, match="batch='x' is not an integer"):
        build_network("gpt2", batch="x")
