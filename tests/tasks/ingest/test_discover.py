"""Discovery: per-file rejections with reasons, MinerU output folders and zips."""
from __future__ import annotations

import hashlib
import os
import shutil
import zipfile

import pytest

from schemas.settings import load_settings
from tasks.ingest.discover import discover
from tests.conftest import CVPR_DIR, DOCS, SVOLT_DIR, need


def _by_reason(found):
    return {os.path.basename(r.path): (r.error_kind, r.reason) for r in found.rejected}


def test_bad_inputs_are_rejected_with_reasons_and_good_ones_kept(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "good.md").write_text("# 标题\n\n正文。", encoding="utf-8")
    (corpus / "notes.txt").write_text("纯文本。", encoding="utf-8")
    (corpus / "empty.pdf").write_bytes(b"")
    (corpus / "garbage.pdf").write_bytes(os.urandom(2048))
    (corpus / "truncated.pdf").write_bytes(b"%PDF-1.7\n1 0 obj\n<<>>\nendobj\n")
    (corpus / "fake.docx").write_bytes(b"PK\x03\x04 not really a zip")
    (corpus / "photo.xyz").write_bytes(b"abc")
    (corpus / "binary.txt").write_bytes(b"\x00\x01\x02text")
    (corpus / "plain.zip").write_bytes(_zip_bytes({"readme.txt": b"hello"}))
    (corpus / "copy of good.md").write_text("# 标题\n\n正文。", encoding="utf-8")
    (corpus / ".hidden.md").write_text("skipped", encoding="utf-8")
    os.symlink(corpus / "nowhere.pdf", corpus / "dangling.pdf")
    os.symlink(corpus, corpus / "loop")  # a symlinked folder is not followed

    settings = load_settings(tmp_path / "home", max_file_mb=0.004)
    (corpus / "large.txt").write_text("大" * 2000, encoding="utf-8")  # 6 KB > 4 KB limit
    found = discover([corpus, tmp_path / "missing.docx"], settings)

    # files are walked in name order, so the first of two identical files is "copy of good.md"
    assert sorted(s.source for s in found.sources) == ["copy of good.md", "notes.txt"]
    reasons = _by_reason(found)
    assert reasons["empty.pdf"][0] == "EmptyFileError"
    assert reasons["garbage.pdf"] == ("CorruptFileError", "not a PDF (missing %PDF- header)")
    assert reasons["truncated.pdf"][0] == "CorruptFileError" and "truncated" in reasons["truncated.pdf"][1]
    assert reasons["fake.docx"][0] == "CorruptFileError"
    assert reasons["photo.xyz"] == ("UnsupportedFileError", "unsupported file type '.xyz'")
    assert reasons["binary.txt"][0] == "CorruptFileError"
    assert reasons["plain.zip"][0] == "UnsupportedFileError"
    assert reasons["good.md"] == ("DuplicateFileError", "same content as copy of good.md (skipped)")
    assert reasons["dangling.pdf"] == ("MissingFileError", "broken symlink")
    assert reasons["missing.docx"] == ("MissingFileError", "no such file")
    assert reasons["large.txt"][0] == "FileTooLargeError" and "max_file_mb" in reasons["large.txt"][1]
    assert ".hidden.md" not in reasons
    # a symlinked folder is recorded, never walked into (so a link loop cannot trap discovery)
    assert reasons["loop"][0] == "UnsupportedFileError" and "symlinked folder not followed" in reasons["loop"][1]


def test_an_empty_folder_is_rejected_and_named_in_empty_roots(tmp_path, settings):
    (tmp_path / "empty").mkdir()
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "a.md").write_text("# 甲\n\n正文。", encoding="utf-8")
    found = discover([tmp_path / "empty", tmp_path / "full"], settings)
    assert found.empty_roots == [str(tmp_path / "empty")]
    assert _by_reason(found) == {"empty": ("MissingFileError", "folder holds no files")}


def test_real_documents_get_kinds_and_doc_types(settings):
    docx = need(DOCS / "zh_docx" / "procurement_contract_headings_table_images.docx")
    pdf = need(DOCS / "zh_pdf" / "prc_constitution.pdf")
    found = discover([docx, pdf], settings)
    assert [(s.source, s.kind, s.doc_type) for s in found.sources] == [
        (docx.name, "mineru", "word"), (pdf.name, "mineru", "pdf")]
    assert found.sources[0].md5 == hashlib.md5(docx.read_bytes()).hexdigest()
    assert not found.rejected


def test_mineru_output_folders_are_sources_not_walked(tmp_path, settings):
    need(SVOLT_DIR)
    # Given the 2.x `output/` folder, the document is named after <name>, not `auto`.
    found = discover([SVOLT_DIR.parents[1]], settings)
    assert [(s.source, s.kind) for s in found.sources] == [(SVOLT_DIR.parent.name, "mineru_output")]
    # Given the cloud-zip folder itself.
    found = discover([need(CVPR_DIR)], settings)
    assert [(s.source, s.kind) for s in found.sources] == [("zip_contents", "mineru_output")]
    # And a result zip.
    archive = tmp_path / "result.zip"
    shutil.make_archive(str(archive.with_suffix("")), "zip", CVPR_DIR)
    found = discover([archive], settings)
    assert [(s.source, s.kind, s.doc_type) for s in found.sources] == [("result.zip", "mineru_output", "mineru")]


def _zip_bytes(members: dict[str, bytes]) -> bytes:
    import io

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


@pytest.mark.parametrize("name", ["a.docx", "a.pptx", "a.xlsx"])
def test_ooxml_without_content_types_is_corrupt(tmp_path, settings, name):
    path = tmp_path / name
    path.write_bytes(_zip_bytes({"word/document.xml": b"<x/>"}))
    found = discover([path], settings)
    assert found.rejected[0].error_kind == "CorruptFileError"
