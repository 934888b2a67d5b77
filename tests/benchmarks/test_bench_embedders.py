"""``python -m benchmarks embedders``: dense-only rankings per user, recall figures, shared document vectors."""

from __future__ import annotations

from benchmarks.__main__ import main
from benchmarks.datasets import Dataset, Doc, Query
from benchmarks.embedders import Encoder, dense_rankings, evaluate, time_encoder


def _dataset() -> Dataset:
    docs = [
        Doc("a:1", "我对花生过敏", "a"), Doc("a:2", "周末去动物园看大熊猫", "a"), Doc("a:3", "budget is 50k", "a"),
        Doc("b:1", "我对花生过敏", "b"), Doc("b:2", "下周三飞深圳出差", "b"),
    ]
    queries = [
        Query("a:q1", "花生过敏", "a", ("a:1",), "single-hop"),
        Query("a:q2", "大熊猫 动物园 花生", "a", ("a:2", "a:1"), "multi-hop"),
        Query("b:q1", "深圳出差", "b", ("b:2",), "single-hop"),
    ]
    return Dataset("tiny", docs, queries)


def _encoder(name: str, calls: list[int], doc_space: str | None = None) -> Encoder:
    from ripple.embedding import HashEmbedder

    emb = HashEmbedder(64)

    def docs(texts):
        calls.append(len(texts))
        return emb.encode(texts)

    return Encoder(name, docs, emb.encode, doc_space=doc_space)


def test_rankings_stay_within_the_user_and_score_per_user_and_category() -> None:
    ds = _dataset()
    ranked = dense_rankings(_encoder("h", []), ds)
    assert set(ranked["a:q1"]) == {"a:1", "a:2", "a:3"} and ranked["a:q1"][0] == "a:1"
    assert set(ranked["b:q1"]) == {"b:1", "b:2"} and ranked["b:q1"][0] == "b:2"
    res = evaluate(ds, ranked)
    assert res["pooled"]["n"] == 3 and res["user:a"]["n"] == 2 and res["category:multi-hop"]["n"] == 1
    assert res["pooled"]["R@5"] == 1.0  # every user has fewer than five documents


def test_encoders_of_one_document_space_encode_the_documents_once() -> None:
    ds = _dataset()
    calls: list[int] = []
    cache: dict = {}
    dense_rankings(_encoder("x", calls, "space"), ds, cache=cache)
    dense_rankings(_encoder("y", calls, "space"), ds, cache=cache)
    assert calls == [3, 2]  # user a, user b: once
    dense_rankings(_encoder("z", calls), ds, cache=cache)
    assert calls == [3, 2, 3, 2]


def test_timing_reports_medians() -> None:
    out = time_encoder(_encoder("h", []), ["问题一", "question two"], ["文档", "doc"], repeats=3)
    assert out["repeats"] == 3 and out["timed_queries"] == 2 and out["bulk_docs"] == 2
    assert out["query_p50_ms"] > 0 and out["query_p95_ms"] >= out["query_p50_ms"] and out["bulk_docs_per_s"] > 0


def test_unknown_model_is_an_error() -> None:
    assert main(["embedders", "--models", "nope"]) == 2
