"""``python -m benchmarks users``: a small store of several users, recalls timed, users deleted."""

from __future__ import annotations

from pathlib import Path

from benchmarks.__main__ import main


def test_users_benchmark_measures_recall_and_delete_per_size(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["users", "--users", "2,4", "--per-user", "20", "--queries", "6", "--deletes", "2",
                 "--no-progress", "--out", str(tmp_path)]) == 0
    import json

    rows = [json.loads((tmp_path / f"users-{n}.json").read_text()) for n in (2, 4)]
    for n, row in zip((2, 4), rows):
        assert row["users"] == n and row["memories"] > 0 and row["store"] == "embedded"
        assert set(row["modes"]) == {"flat", "ripple"} and all(1 <= m["n"] <= 6 for m in row["modes"].values())
        assert row["delete_all"]["n"] == 2 and row["delete_all"]["memories_per_user_p50"] > 0
    assert "| 4 |" in capsys.readouterr().out


def test_users_benchmark_keeps_an_embedded_store_and_reuses_it(tmp_path: Path) -> None:
    """``--store sqlite:///folder`` keeps the store; ``--reuse-store`` recalls from it without ingesting."""
    import json

    store = f"sqlite://{tmp_path / 'kept'}"
    common = ["users", "--users", "3", "--per-user", "10", "--queries", "4", "--deletes", "0", "--no-progress",
              "--store", store, "--out", str(tmp_path)]
    assert main(common) == 0
    first = json.loads((tmp_path / "users-3.json").read_text())
    assert first["store"] == "embedded" and first["ingest_s"] is not None and first["delete_all"]["n"] == 0
    assert main([*common, "--reuse-store"]) == 0
    second = json.loads((tmp_path / "users-3.json").read_text())
    assert second["ingest_s"] is None and second["memories"] == first["memories"] > 0


def test_users_benchmark_refuses_a_kept_store_for_several_sizes(tmp_path: Path) -> None:
    import pytest

    with pytest.raises(SystemExit, match="one size"):
        main(["users", "--users", "2,3", "--store", f"sqlite://{tmp_path}", "--out", str(tmp_path)])


def test_users_benchmark_counts_reads_per_recall(tmp_path: Path) -> None:
    """Each mode reports its reads per recall (Linux): a figure the machine's load does not move."""
    import json
    import sys

    assert main(["users", "--users", "2", "--per-user", "10", "--queries", "4", "--deletes", "0", "--no-progress",
                 "--out", str(tmp_path)]) == 0
    row = json.loads((tmp_path / "users-2.json").read_text())
    for m in row["modes"].values():
        assert m["cpu_ms"] > 0
        if sys.platform == "linux":
            assert m["read_calls_per_recall"] >= 0 and "disk_kib_per_recall" in m
