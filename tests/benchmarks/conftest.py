from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.datasets import default_data_dir


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The benchmark data (the bundled copy unless RIPPLE_DATA_DIR says otherwise); missing data fails."""
    d = default_data_dir()
    assert (d / "locomo" / "locomo-dev.json").is_file(), (
        f"benchmark data not found under {d} (the repository carries it in benchmarks/data; RIPPLE_DATA_DIR overrides)"
    )
    return d
