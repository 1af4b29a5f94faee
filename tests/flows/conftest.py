"""Flow tests share one converted embedding model instead of converting it in every fresh home
(each copy is ~470 MB and seconds of work); model resolution itself is tested in tests/tasks."""
from __future__ import annotations

import pytest

from tests.conftest import shared_temp


@pytest.fixture(scope="session")
def shared_e5_model(tmp_path_factory):
    from tasks.index.e5_convert import ensure_converted

    # one conversion for all xdist workers (locked: the second waits for the first and verifies its copy)
    return ensure_converted(shared_temp(tmp_path_factory) / "models")


@pytest.fixture(autouse=True)
def _use_shared_e5_model(shared_e5_model, monkeypatch):
    monkeypatch.setenv("KBFLOW_EMBEDDING_MODEL", str(shared_e5_model))
