from __future__ import annotations

import dataclasses

import pyarrow as pa
import pytest

from schemas.arrow import columns_of, from_table, to_table
from schemas.chunk import CANDIDATE_COLUMNS, CHUNK_SCHEMA, Chunk, assign_ids
from schemas.ingest import INGEST_FAILURE_COLUMNS, INGEST_RUN_COLUMNS, IngestFailure, IngestRun
from schemas.qa import QA_METRIC_COLUMNS, QA_RUN_COLUMNS, QAMetric, QARun
from schemas.errors import SettingsError
from schemas.settings import GROUP_OF, GROUPS, IngestSettings, Settings, check_kb_name, load_settings


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
    assert (s.runtime.max_file_mb, s.ingest.mineru_tier, s.home) == (7.0, "standard", (tmp_path / "h").resolve())
    assert load_settings(tmp_path / "h", config_file=toml, max_file_mb=9).runtime.max_file_mb == 9
    toml.write_text("nonsense = 1\n")
    with pytest.raises(ValueError, match="unknown settings"):
        load_settings(config_file=toml)


def test_settings_are_grouped_by_part(tmp_path, monkeypatch):
    """`[group]` tables and flat names in kbflow.toml, flat KBFLOW_* names in the environment."""
    toml = tmp_path / "kbflow.toml"
    toml.write_text('rrf_k = 20\n[ingest]\nmax_chunk_size = 700\n'
                    '[retrieval]\ntop_k = 9\n[runtime]\nqa_batch_size = 8\n')
    monkeypatch.setenv("KBFLOW_CRAG_ENABLED", "false")
    s = load_settings(tmp_path / "h", config_file=toml)
    assert (s.retrieval.rrf_k, s.ingest.max_chunk_size, s.retrieval.top_k, s.runtime.qa_batch_size) == (20, 700, 9, 8)
    assert s.answer.crag_enabled is False and s.ingest.min_merge_size == IngestSettings().min_merge_size
    # a name under the wrong group is an error, not silently ignored
    toml.write_text("[retrieval]\nmax_chunk_size = 700\n")
    with pytest.raises(SettingsError, match="retrieval.max_chunk_size"):
        load_settings(tmp_path / "h", config_file=toml)
    # every name is unique across groups, so a flat name always finds its group
    names = [f.name for cls in GROUPS.values() for f in dataclasses.fields(cls)]
    assert len(names) == len(set(names)) == len(GROUP_OF)
    assert Settings.of(rrf_k=30).replace(max_file_mb=1.0).flat()["rrf_k"] == 30
    with pytest.raises(SettingsError, match="unknown settings"):
        Settings().replace(no_such_setting=1)


def test_the_learned_fusion_coefficients_are_a_list_of_numbers(tmp_path, monkeypatch):
    """`fusion_learned_coef`: a TOML array or a comma-separated KBFLOW_FUSION_LEARNED_COEF, kept as a
    tuple, of exactly one number per feature; `fusion` is one of the three fusions."""
    n = len(Settings().retrieval.fusion_learned_coef)
    toml = tmp_path / "kbflow.toml"
    toml.write_text(f"[retrieval]\nfusion_learned_coef = {[float(i) for i in range(n)]}\n")
    s = load_settings(tmp_path / "h", config_file=toml)
    assert s.retrieval.fusion_learned_coef == tuple(float(i) for i in range(n)) and hash(s)
    monkeypatch.setenv("KBFLOW_FUSION_LEARNED_COEF", ",".join(["1.5"] * n))
    assert load_settings(tmp_path / "h", config_file=toml).retrieval.fusion_learned_coef == (1.5,) * n
    monkeypatch.setenv("KBFLOW_FUSION_LEARNED_COEF", "1,2")
    with pytest.raises(SettingsError, match=f"fusion_learned_coef.*KBFLOW_FUSION_LEARNED_COEF.*{n} numbers"):
        load_settings(tmp_path / "h", config_file=toml)
    monkeypatch.delenv("KBFLOW_FUSION_LEARNED_COEF")
    toml.write_text('fusion_learned_coef = ["a"]\n')
    with pytest.raises(SettingsError, match="list of numbers"):
        load_settings(tmp_path / "h", config_file=toml)
    toml.write_text('fusion = "sum"\n')
    with pytest.raises(SettingsError, match="learned, score, rrf"):
        load_settings(tmp_path / "h", config_file=toml)


@pytest.mark.parametrize("bad", ["", "a/b", "../x", "kb name", "x" * 57, "kb-", "a..b"])
def test_kb_names_are_path_safe(bad):
    with pytest.raises(ValueError):
        check_kb_name(bad)
    assert check_kb_name("demo_kb-1.v2") == "demo_kb-1.v2"
