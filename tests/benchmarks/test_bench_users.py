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
