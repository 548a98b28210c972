"""A tiny GPT-2 for the tests of the generation door: 2 layers, random weights, a word-level tokenizer of
:data:`WORDS` built here (no download). Shared by ``test_generation.py`` (CPU) and ``test_device.py`` (CUDA)."""

from __future__ import annotations

from typing import Any

import pytest

WORDS = ("the a cat dog sat on mat ran fast slow red blue and is was Paris France capital of river city old new "
         "<script> . , ?").split()
#: three sentences in two paragraphs, every word in :data:`WORDS`
PROMPT = "the old cat sat on the mat . the dog ran fast , and slow .\n\nParis is the capital of France ."


def tiny_gpt2(dtype: Any = None) -> tuple[Any, Any]:
    """``(model, tokenizer)``: the GPT-2 in eval mode (in ``dtype`` where given) and its tokenizer; the same weights
    at every call (seeded), so a copy on another device or in another dtype is the same model."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    tokenizers = pytest.importorskip("tokenizers")
    vocab = {"<bos>": 0, "<pad>": 1, "<unk>": 2, **{w: i + 3 for i, w in enumerate(WORDS)}}
    core = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = tokenizers.pre_tokenizers.WhitespaceSplit()
    tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_object=core, bos_token="<bos>", pad_token="<pad>",
                                                     unk_token="<unk>")
    config = transformers.GPT2Config(vocab_size=len(vocab), n_positions=64, n_embd=32, n_layer=2, n_head=2,
                                     bos_token_id=0, eos_token_id=0)
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(config).eval()
    return (model if dtype is None else model.to(dtype)), tokenizer
