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


@pytest.mark.parametrize("text", [
    "店名想好了吗", "签证办了吗", "你呢，装修开始了吗", "？？？你一个程序员开咖啡馆？", "上海哪家？",
    "Did you ever go back to Rome?", "Wow, what did you paint?", "How did the concert go? 😊",
])
def test_question_only_turns(text: str) -> None:
    from extractors.filters import is_question_only

    assert is_question_only(text)


@pytest.mark.parametrize("text", [
    "叫“慢半拍”，我表哥起的",  # an answer
    "八万！一台咖啡机？？",  # a statement, then a question
    "那赔偿呢？给n+1了吗",  # two questions: the turn is still a question, but two sentences (kept: rare)
    "我刚到家，你吃了吗",  # a statement joined to the question by a comma
    "年糕是那只英短吧？上次视频看到它趴你键盘上",
    "I painted a sunset last week, want to see?",
    "Wow! Did you see that band?",  # evidence in LoCoMo: "Wow!" is a sentence of its own
    "Yes, twice!",
    "",
])
def test_turns_that_say_something(text: str) -> None:
    from extractors.filters import is_question_only

    assert not is_question_only(text)
