from __future__ import annotations

import pytest

from extractors.filters import is_contentless


@pytest.mark.parametrize(
    "text",
    ["ok", "okay!", "OK.", "thanks", "Thanks!!", "thank you so much", "Thank you so much! 🙏", "lol", "LOL 😂",
     "hahaha", "yes", "Yeah!", "sure", "got it", "Got it, thanks!", "ok ok", "sounds good 👍", "k", "np",
     "好的", "好的！", "嗯嗯", "嗯", "谢谢", "谢谢！", "哈哈", "哈哈哈哈", "收到", "好的，谢谢", "ok好的",
     "👍", "🎉🎉🎉", "...", "?!", "", "   ", "\n"],
)
def test_contentless(text: str) -> None:
    assert is_contentless(text)


@pytest.mark.parametrize(
    "text",
    ["ok, the budget is 50k", "好的，明天十点开会", "I'm Dana", "yes, at 5pm", "thanks, Dana!", "k8s",
     "no meat please", "Paris", "42", "谢谢张伟", "收到，周五前给你", "lol that cat", "sure, let's use Postgres",
     "hi, I'm new here", "ok 👍 see you in Berlin"],
)
def test_contentful(text: str) -> None:
    assert not is_contentless(text)
