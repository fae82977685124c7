"""Hugging Face models from small configs (no pretrained weights, no hub): GPT-2, BERT, Llama.

Each factory returns the mapping of the factory contract (docs/frontends-torch.md) with
a Hugging Face batch as keyword inputs and the model's own loss; dropout is off, so a
captured step equals an eager one.
"""

from __future__ import annotations

import torch

VOCAB = 128
"""Vocabulary of every model here (small: the embeddings stay small)."""


def config(name: str, *, layers: int = 2, width: int = 32):
    """A small configuration of ``gpt2``, ``bert`` or ``llama`` without dropout."""
    import transformers

    if name == "gpt2":
        return transformers.GPT2Config(
            n_layer=layers, n_embd=width, n_head=4, vocab_size=VOCAB, n_positions=64,
            resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=0)
    if name == "bert":
        return transformers.BertConfig(
            num_hidden_layers=layers, hidden_size=width, num_attention_heads=4,
            intermediate_size=4 * width, vocab_size=VOCAB, max_position_embeddings=64,
            hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    if name == "llama":
        return transformers.LlamaConfig(
            num_hidden_layers=layers, hidden_size=width, num_attention_heads=4,
            num_key_value_heads=2, intermediate_size=2 * width, vocab_size=VOCAB,
            max_position_embeddings=64, bos_token_id=0, eos_token_id=0, pad_token_id=0)
    raise ValueError(name)


def model(name: str, *, checkpointing: bool | str = False, **sizes):
    """The model with a language-modelling head (BERT: masked), seeded; ``checkpointing``
    ``True`` enables Hugging Face's gradient checkpointing (non-reentrant), ``"reentrant"``
    its reentrant form."""
    import transformers

    classes = {"gpt2": transformers.GPT2LMHeadModel, "bert": transformers.BertForMaskedLM,
               "llama": transformers.LlamaForCausalLM}
    torch.manual_seed(0)
    made = classes[name](config(name, **sizes))
    if checkpointing:
        made.gradient_checkpointing_enable(gradient_checkpointing_kwargs={
            "use_reentrant": checkpointing == "reentrant"})
    return made


def batch(batch_size: int = 2, tokens: int = 16) -> dict[str, torch.Tensor]:
    """A tokenised batch as a Hugging Face data collator makes it."""
    generator = torch.Generator().manual_seed(1)
    ids = torch.randint(1, VOCAB, (batch_size, tokens), generator=generator)
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": ids.clone()}


def factory(name: str = "gpt2", batch_size: int = 2, tokens: int = 16,
            checkpointing: bool = False, layers: int = 2):
    """The command line's factory: ``--kernels torch:hf_models.py:factory``."""
    return {"model": model(name, checkpointing=checkpointing, layers=layers),
            "example_inputs": batch(batch_size, tokens), "loss": "output", "optimizer": "adamw"}
