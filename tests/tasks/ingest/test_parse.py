"""Parsing: the real MinerU flash path, the parse cache, the import backend, Markdown/TXT."""
from __future__ import annotations

import io
import os
import json
import shutil
import zipfile
from collections import Counter
from pathlib import Path

import pytest

from schemas import errors
from tasks.ingest import parse as parse_mod
from tasks.ingest.content_list import normalize_parsed
from tasks.ingest.discover import discover
from tasks.ingest.parse import parse_source, read_manifest
from tests.conftest import CVPR_DIR, DOCS, REPO, SVOLT_DIR, make_scanned_pdf, need


def _one(paths, settings):
    found = discover(paths, settings)
    assert not found.rejected, found.rejected
    (src,) = found.sources
    return src


def test_real_docx_through_mineru_flash(settings):
    src = _one([need(DOCS / "zh_docx" / "mineru_docx_demo_zh_en_headings_tables_images.docx")], settings)
    out = parse_source(src, settings)
    assert out.parsed_dir == settings.parsed_dir / src.md5[:12]
    for name in ("content_list.json", "content_list_v2.json", "middle.json", "full.md", "parse.json"):
        assert (out.parsed_dir / name).is_file(), name
    assert any((out.parsed_dir / "images").iterdir())
    assert (out.key.backend, out.key.parser_version, out.key.tier) == ("mineru", "4.0.12", "flash")
    chunks = normalize_parsed(out.parsed_dir).chunks
    types = Counter(c.chunk_type for c in chunks)
    assert types["heading"] >= 10 and types["table"] >= 5 and types["image"] >= 1
    assert any(c.title == "MinerU supports DOCX document parsing now" and c.text_level == 1 for c in chunks)
    # every referenced image was written
    assert all((out.parsed_dir / c.image_path).is_file() for c in chunks if c.image_path)


def test_real_text_pdf_through_mineru_flash(settings):
    src = _one([need(DOCS / "zh_pdf" / "prc_constitution.pdf")], settings)
    out = parse_source(src, settings)
    chunks = normalize_parsed(out.parsed_dir).chunks
    assert len(chunks) > 200
    assert max(c.page_start for c in chunks) > 20  # pages are 1-based and span the document
    assert (chunks[0].chunk_type, chunks[0].content, chunks[0].text_level) == ("heading", "中华人民共和国宪法", 1)
    # flash gives text PDFs no chapter levels: "第一章 总 纲" arrives as body text on page 4
    assert any(c.content == "第一章 总 纲" and c.page_start == 4 for c in chunks)
    assert all(c.bbox for c in chunks)  # PDFs carry coordinates


def test_same_file_is_parsed_once(settings, monkeypatch, tmp_path):
    doc = tmp_path / "a.md"
    doc.write_text("# 一\n\n正文", encoding="utf-8")
    src = _one([doc], settings)
    calls = []
    real = parse_mod._run_backend
    monkeypatch.setattr(parse_mod, "_run_backend", lambda *a: (calls.append(a), real(*a)))
    first = parse_source(src, settings)
    second = parse_source(src, settings)
    assert (first.cached, second.cached) == (False, True)
    assert len(calls) == 1
    # a different parser key (here: a manifest from another version) means a fresh parse
    manifest = json.loads((first.parsed_dir / "parse.json").read_text())
    manifest["key"]["parser_version"] = "0"
    (first.parsed_dir / "parse.json").write_text(json.dumps(manifest))
    assert parse_source(src, settings).cached is False and len(calls) == 2
    assert read_manifest(first.parsed_dir).parser_version != "0"


def test_mineru_flash_refuses_a_scan_fast_with_needs_models(settings, tmp_path):
    """MinerU alone (parse_source OCRs a scan instead: tests/tasks/ingest/test_ocr.py)."""
    from tasks.ingest.parse.mineru_local import parse_with_mineru

    scan = make_scanned_pdf(tmp_path / "scan.pdf")
    (tmp_path / "out").mkdir()
    with pytest.raises(errors.NeedsModelsError, match="needs MinerU OCR/layout models"):
        parse_with_mineru(scan, tmp_path / "out", tier="flash", mineru_home=settings.mineru_home)
    assert not list((tmp_path / "out").iterdir())


def test_import_mineru_2x_folder(settings):
    src = _one([need(SVOLT_DIR)], settings)
    assert src.source == SVOLT_DIR.parent.name
    out = parse_source(src, settings)
    assert out.key.backend == "import"
    assert (out.parsed_dir / "content_list.json").is_file() and (out.parsed_dir / "middle.json").is_file()
    assert not (out.parsed_dir / "content_list_v2.json").exists()
    assert len(normalize_parsed(out.parsed_dir).chunks) == 180


def test_import_cloud_result_zip(settings, tmp_path):
    archive = Path(shutil.make_archive(str(tmp_path / "result"), "zip", need(CVPR_DIR)))
    src = _one([archive], settings)
    out = parse_source(src, settings)
    assert (out.parsed_dir / "content_list_v2.json").is_file()
    assert (out.parsed_dir / "middle.json").read_bytes() == (CVPR_DIR / "layout.json").read_bytes()
    result = normalize_parsed(out.parsed_dir)
    assert result.format == "v2" and len(result.chunks) == 104
    assert not (out.parsed_dir / ".unpacked").exists()


@pytest.mark.parametrize("entry", ["../evil.txt", "/abs/evil.txt", "a/../../evil.txt"])
def test_import_refuses_unsafe_zip(settings, tmp_path, entry):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("x_content_list.json", "[]")
        zf.writestr(entry, "pwned")
    archive = tmp_path / "bad" / "evil.zip"
    archive.parent.mkdir()
    archive.write_bytes(buf.getvalue())
    src = _one([archive], settings)
    with pytest.raises(errors.UnsafeArchiveError, match="unsafe entry"):
        parse_source(src, settings)
    assert not list(tmp_path.rglob("evil.txt"))


def test_markdown_reader_items(settings, tmp_path):
    (tmp_path / "fig.png").write_bytes(b"\x89PNG fake")
    doc = tmp_path / "guide.md"
    doc.write_text(
        "# 水库维护\n\n总体要求如下。\n\n## 设备\n\n- 传感器\n- 闸门\n\n"
        "| 名称 | 数量 |\n|---|---|\n| 水泵 | 3 |\n\n```yaml\nlevel: 12\n```\n\n![图1 水位计](fig.png)\n\n> 注意安全\n",
        encoding="utf-8")
    out = parse_source(_one([doc], settings), settings)
    items = json.loads((out.parsed_dir / "content_list.json").read_text(encoding="utf-8"))
    assert [(i["type"], i.get("text_level")) for i in items] == [
        ("text", 1), ("text", None), ("text", 2), ("list", None), ("table", None), ("code", None),
        ("image", None), ("text", None)]
    assert items[3]["list_items"] == ["传感器", "闸门"]
    assert "<td>水泵</td>" in items[4]["table_body"]
    assert items[5]["code_body"] == "level: 12"
    assert items[6]["img_path"] == "images/fig.png" and (out.parsed_dir / "images" / "fig.png").is_file()
    assert items[6]["image_caption"] == ["图1 水位计"]


def test_a_markdown_tables_caption_paragraph_is_its_caption(settings, tmp_path):
    # the Redpaper's Markdown copy writes "Table 2-2    Comparison of …" as a paragraph before the table, as
    # MinerU's PDF reading holds it as the table's caption; the sentence before it stays text
    doc = need(DOCS / "en" / "groundtruth" / "redp5110_sampled.md")
    items = json.loads((parse_source(_one([doc], settings), settings).parsed_dir / "content_list.json")
                       .read_text(encoding="utf-8"))
    tables = {i["table_caption"][0].split()[1]: i for i in items if i["type"] == "table" and i["table_caption"]}
    assert {"2-1", "2-2", "3-1", "3-2"} <= set(tables)
    assert "QIBM_DB_SQLADM" in tables["2-2"]["table_body"]
    texts = [i["text"] for i in items if i["type"] == "text"]
    assert any(t.startswith("Table 2-2 shows a comparison") for t in texts)
    assert not any(t.startswith("Table 2-2 ") and "Comparison of the different" in t for t in texts)
    # a heading or a long paragraph opening with "Table 3" is no caption; "表1 …" is
    md = tmp_path / "pumps.md"
    md.write_text("## Table 1 overview\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n" + "Table 2 lists the pumps. " * 12
                  + "\n\n| a | b |\n|---|---|\n| 3 | 4 |\n\n表3 水泵数量\n\n| 名称 | 数量 |\n|---|---|\n| 水泵 | 3 |\n",
                  encoding="utf-8")
    items = json.loads((parse_source(_one([md], settings), settings).parsed_dir / "content_list.json")
                       .read_text(encoding="utf-8"))
    assert [(i["type"], i.get("table_caption")) for i in items] == [
        ("text", None), ("table", []), ("text", None), ("table", []), ("table", ["表3 水泵数量"])]


def test_text_reader_paragraphs_and_gb18030(settings, tmp_path):
    doc = tmp_path / "faq.txt"
    doc.write_bytes("问：汛期何时开始？\n答：每年五月。\n\n\n问：谁负责？\n答：水务局。".encode("gb18030"))
    out = parse_source(_one([doc], settings), settings)
    items = json.loads((out.parsed_dir / "content_list.json").read_text(encoding="utf-8"))
    assert [i["text"] for i in items] == ["问：汛期何时开始？\n答：每年五月。", "问：谁负责？\n答：水务局。"]


OFFLINE_VARS = ("MINERU_MODEL_SOURCE", "MINERU_HOME", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "MODELSCOPE_OFFLINE")


def test_mineru_environment_is_set_per_call_only(settings, monkeypatch, tmp_path):
    """MinerU's offline environment holds during a parse (a scanned page fails fast instead of
    reaching for a model hub) and is gone after it, for the rest of the process."""
    from mineru.config import config

    from tasks.ingest.parse.mineru_local import mineru_environment

    for name in OFFLINE_VARS:
        monkeypatch.delenv(name, raising=False)
    before = (config.model.source, config.model.base_dir)
    with mineru_environment(settings.mineru_home):
        assert os.environ["MINERU_MODEL_SOURCE"] == "local" and os.environ["HF_HUB_OFFLINE"] == "1"
        assert (config.model.source, config.model.base_dir) == ("local", str(settings.mineru_home / "models"))
    assert not any(name in os.environ for name in OFFLINE_VARS)
    assert (config.model.source, config.model.base_dir) == before

    from tasks.ingest.parse.mineru_local import parse_with_mineru

    src = _one([REPO / "examples" / "corpus" / "flood_control_report.pdf"], settings)
    assert parse_source(src, settings).key.backend == "mineru"
    (tmp_path / "out").mkdir()
    with pytest.raises(errors.NeedsModelsError):
        parse_with_mineru(make_scanned_pdf(tmp_path / "scan.pdf"), tmp_path / "out", tier="flash",
                          mineru_home=settings.mineru_home)
    assert not any(name in os.environ for name in OFFLINE_VARS)


def test_a_users_mineru_home_is_kept(settings, monkeypatch, tmp_path):
    from tasks.ingest.parse.mineru_local import mineru_environment

    monkeypatch.setenv("MINERU_HOME", str(tmp_path / "models-here"))
    with mineru_environment(settings.mineru_home):
        assert os.environ["MINERU_HOME"] == str(tmp_path / "models-here")
    assert os.environ["MINERU_HOME"] == str(tmp_path / "models-here")
