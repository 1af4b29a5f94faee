from __future__ import annotations

import dataclasses

import pyarrow as pa
import pytest

from schemas.arrow import columns_of, from_table, to_table
from schemas.chunk import CANDIDATE_COLUMNS, CHUNK_SCHEMA, Chunk, assign_ids
from schemas.ingest import INGEST_FAILURE_COLUMNS, INGEST_RUN_COLUMNS, IngestFailure, IngestRun
from schemas.qa import QA_METRIC_COLUMNS, QA_RUN_COLUMNS, QAMetric, QARun
from schemas.settings import check_kb_name, load_settings


def test_chunk_schema_follows_the_dataclass():
    assert CHUNK_SCHEMA.names == [f.name for f in dataclasses.fields(Chunk)]
    assert CHUNK_SCHEMA.field("bbox").type == pa.list_(pa.float64())
    assert CHUNK_SCHEMA.field("bbox").nullable and not CHUNK_SCHEMA.field("content").nullable
    assert CHUNK_SCHEMA.field("page_start").type == pa.int64()


def test_column_lists_are_fields_of_their_records():
    def names(cls):
        return {f.name for f in dataclasses.fields(cls)}

    assert set(CANDIDATE_COLUMNS) <= names(Chunk) and "table_html" not in CANDIDATE_COLUMNS
    assert set(INGEST_FAILURE_COLUMNS) <= names(IngestFailure) and set(QA_METRIC_COLUMNS) <= names(QAMetric)
    assert set(INGEST_RUN_COLUMNS) - names(IngestRun) == {"seconds"} == set(QA_RUN_COLUMNS) - names(QARun)
    assert columns_of(IngestRun, ["run_id", "seconds"], computed=("seconds",)) == ("run_id", "seconds")
    with pytest.raises(TypeError, match="Chunk has no field page, seconds"):
        columns_of(Chunk, ("chunk_id", "page", "seconds"))


def test_round_trip_and_ids():
    chunks = assign_ids([Chunk("a", "text", bbox=[1, 2, 3, 4]), Chunk("b", "table", table_html="<table/>")],
                        kb="k", doc_md5="m", source="dir/x.docx")
    assert [c.chunk_id for c in chunks] == ["dir/x.docx_0", "dir/x.docx_1"]
    back = from_table(to_table(chunks, Chunk), Chunk)
    assert back == chunks


def test_settings_precedence(tmp_path, monkeypatch):
    toml = tmp_path / "kbflow.toml"
    toml.write_text('max_file_mb = 5\nmineru_tier = "standard"\n')
    monkeypatch.setenv("KBFLOW_MAX_FILE_MB", "7")
    s = load_settings(tmp_path / "h", config_file=toml)
    assert (s.max_file_mb, s.mineru_tier, s.home) == (7.0, "standard", (tmp_path / "h").resolve())
    assert load_settings(tmp_path / "h", config_file=toml, max_file_mb=9).max_file_mb == 9
    toml.write_text("nonsense = 1\n")
    with pytest.raises(ValueError, match="unknown settings"):
        load_settings(config_file=toml)


@pytest.mark.parametrize("bad", ["", "a/b", "../x", "kb name", "x" * 57, "kb-", "a..b"])
def test_kb_names_are_path_safe(bad):
    with pytest.raises(ValueError):
        check_kb_name(bad)
    assert check_kb_name("demo_kb-1.v2") == "demo_kb-1.v2"
