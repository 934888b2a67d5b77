from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.datasets import default_data_dir


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The shared benchmark data; missing data is a failure, not a skip."""
    d = default_data_dir()
    assert (d / "locomo" / "locomo-dev.json").is_file(), (
        f"benchmark data not found under {d}; set RIPPLE_DATA_DIR to the folder holding locomo/ and multihop/"
    )
    return d
