"""A table of bad inputs, all in one corpus with good files, ingested in one run: each bad file gets
a clear recorded outcome in `ingest_failures` (error kind + reason), and the good ones land."""
from __future__ import annotations

import io
import os
import shutil
import zipfile
from pathlib import Path

import pytest

from flows.ingest import ingest
from tests.conftest import DOCS, REPO, make_scanned_pdf, need
from warehouse import db

PDF = DOCS / "zh_pdf" / "party_union_rules_1page_table.pdf"
DOCX = DOCS / "zh_docx" / "procurement_contract_headings_table_images.docx"
GOOD_MD = "# 水库说明\n\n本文件说明水库的日常巡查要求，路径里有空格和中文。\n"
LANDED = ("landed", "")


def _write(text: str | bytes):
    def make(path: Path) -> None:
        path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return make


def _password_pdf(path: Path) -> None:
    from pypdf import PdfWriter

    writer = PdfWriter(clone_from=need(PDF))
    writer.encrypt("secret")
    with path.open("wb") as fh:
        writer.write(fh)


def _truncated(source: Path, share: float):
    def make(path: Path) -> None:
        data = need(source).read_bytes()
        path.write_bytes(data[: int(len(data) * share)])
    return make


def _damaged_docx_member(path: Path) -> None:
    """A real DOCX with bytes flipped inside word/document.xml's compressed data (CRC mismatch)."""
    import struct

    data = bytearray(need(DOCX).read_bytes())
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as zf:
        info = zf.getinfo("word/document.xml")
    name_len, extra_len = struct.unpack("<HH", data[info.header_offset + 26:info.header_offset + 30])
    middle = info.header_offset + 30 + name_len + extra_len + info.compress_size // 2
    for i in range(8):
        data[middle + i] ^= 0xFF
    path.write_bytes(bytes(data))


def _zip(entries: dict[str, str]):
    def make(path: Path) -> None:
        with zipfile.ZipFile(path, "w") as zf:
            for name, text in entries.items():
                zf.writestr(zipfile.ZipInfo(name), text)
    return make


def _empty_docx(path: Path) -> None:
    import docx

    docx.Document().save(str(path))


def _symlink(target: str):
    def make(path: Path) -> None:
        os.symlink(target, path)
    return make


def _loop(path: Path) -> None:  # loop_a.md -> loop_b.md -> loop_a.md
    os.symlink(path.with_name("loop_b.md"), path)
    os.symlink(path, path.with_name("loop_b.md"))


def _mineru_folder(text: str):
    def make(path: Path) -> None:
        path.mkdir()
        (path / "doc_content_list.json").write_text(text, encoding="utf-8")
    return make


# (name in the corpus, how to make it, expected error kind or "landed", a phrase of the reason)
CASES = [
    ("zero.txt", _write(b""), "EmptyFileError", "empty file (0 bytes)"),
    ("zero.pdf", _write(b""), "EmptyFileError", "empty file (0 bytes)"),
    ("blank.txt", _write("   \n\n \t \n"), "EmptyDocumentError", "no content to index"),
    ("blank.docx", _empty_docx, "EmptyDocumentError", "no content to index"),
    ("garbage.pdf", _write(bytes(range(256)) * 64), "CorruptFileError", "not a PDF (missing %PDF- header)"),
    ("garbage_body.pdf", _write(b"%PDF-1.7\n" + bytes(range(256)) * 64 + b"\n%%EOF\n"), "CorruptFileError",
     "damaged PDF: PDFium cannot open it"),
    ("truncated.pdf", _truncated(PDF, 0.5), "CorruptFileError", "truncated PDF (no %%EOF marker)"),
    ("truncated.docx", _truncated(DOCX, 0.6), "CorruptFileError", "not a valid .docx (zip) file"),
    ("damaged_member.docx", _damaged_docx_member, "CorruptFileError", "damaged zip member 'word/document.xml'"),
    ("fake.xlsx", _write("name,value\na,1\n"), "CorruptFileError", "not a valid .xlsx (zip) file"),
    ("not_office.docx", _zip({"a.txt": "hello"}), "CorruptFileError", "not an Office Open XML .docx package"),
    ("password.pdf", _password_pdf, "EncryptedFileError", "password-protected PDF"),
    ("password.docx", _write(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(4088)), "EncryptedFileError",
     "password-protected (encrypted) .docx"),
    ("scanned.pdf", make_scanned_pdf, *LANDED),  # no text layer: read by OCR
    ("big.txt", _write("很大的文件。\n" * 100_000), "FileTooLargeError", "exceeds the 1 MB limit (max_file_mb)"),
    ("drawing.dwg", _write(b"AC1032"), "UnsupportedFileError", "unsupported file type '.dwg'"),
    ("README", _write("no extension"), "UnsupportedFileError", "unsupported file type '.README'"),
    ("binary.md", _write(b"# x\n\x00\x01\x02" * 100), "CorruptFileError", "binary content in a text file"),
    ("bad_encoding.txt", _write(b"\xff\xfe\xfa\x80" * 100), "CorruptFileError", "neither UTF-8 nor GB18030"),
    ("loop_a.md", _loop, "SymlinkLoopError", "symlink loop"),
    ("looped_folder", _symlink("."), "UnsupportedFileError", "symlinked folder not followed"),
    ("dangling.pdf", _symlink("nowhere.pdf"), "MissingFileError", "broken symlink"),
    ("evil_mineru.zip", _zip({"doc_content_list.json": "[]", "../evil.txt": "escaped"}), "UnsafeArchiveError",
     "unsafe entry '../evil.txt' (absolute or '..')"),
    ("absolute_mineru.zip", _zip({"doc_content_list.json": "[]", "/tmp/kbflow_evil.txt": "escaped"}),
     "UnsafeArchiveError", "unsafe entry '/tmp/kbflow_evil.txt'"),
    ("plain.zip", _zip({"notes.txt": "hello"}), "UnsupportedFileError", "zip without a MinerU *_content_list.json"),
    ("broken_mineru", _mineru_folder("{not json"), "ImportFormatError", "doc_content_list.json is not valid JSON"),
    # given as a PATH of its own ("../"): inside a folder it would make that folder a MinerU output folder
    ("../x_content_list.json", _write("[]"), "UnsupportedFileError", "pass the MinerU output folder"),
    ("年度 报告 (v2)/水库 说明 文档.md", _write(GOOD_MD), *LANDED),
    ("年度 报告 (v2)/采购 合同.docx", lambda p: shutil.copy(need(DOCX), p), *LANDED),
    ("年度 报告 (v2)/水库 说明 文档（副本）.md", _write(GOOD_MD), "DuplicateFileError",
     "same content as 年度 报告 (v2)/水库 说明 文档.md"),
    ("good.md", lambda p: shutil.copy(REPO / "examples" / "corpus" / "reservoir_maintenance_guide.md", p), *LANDED),
]


@pytest.fixture(scope="module")
def outcomes(prefect_harness, tmp_path_factory):
    """Build every case into one corpus, ingest it once; return name → (kind or "landed", reason)."""
    root = tmp_path_factory.mktemp("bad_inputs")
    corpus = root / "corpus"
    corpus.mkdir()
    for name, make, *_ in CASES:
        (corpus / name).parent.mkdir(parents=True, exist_ok=True)
        make(corpus / name)
    given = [str(corpus / name) for name, *_ in CASES if name.startswith("../")]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KBFLOW_MAX_FILE_MB", "1")
        summary = ingest(paths=[str(corpus), *given], kb="bad", home=str(root / "home"))
    w = root / "home" / "kbflow.duckdb"
    got: dict[str, tuple[str, str]] = {}
    for path, kind, reason in db.query(w, "SELECT path, error_kind, reason FROM ingest_failures WHERE run_id = ?",
                                       [summary.run_id])[1]:
        got[Path(os.path.relpath(path, corpus)).as_posix()] = (kind, reason)
    for (source,) in db.query(w, "SELECT source FROM documents WHERE kb = 'bad'")[1]:
        got[source] = LANDED
    return {"got": got, "summary": summary, "root": root}


def test_the_table_has_at_least_twenty_bad_inputs():
    assert sum(kind != "landed" for _, _, kind, _ in CASES) >= 20


@pytest.mark.parametrize("name,kind,phrase", [(n, k, p) for n, _, k, p in CASES], ids=[c[0] for c in CASES])
def test_each_input_has_a_clear_recorded_outcome(outcomes, name, kind, phrase):
    assert name in outcomes["got"], f"{name}: no outcome recorded (got {sorted(outcomes['got'])})"
    got_kind, reason = outcomes["got"][name]
    assert (got_kind, phrase in reason) == (kind, True), f"{name}: {got_kind}: {reason}"


def test_bad_inputs_do_not_stop_the_good_ones_and_nothing_escapes(outcomes):
    summary = outcomes["summary"]
    landed = {o.source for o in summary.outcomes if o.status == "landed"}
    assert landed == {n for n, _, k, _ in CASES if k == "landed"}
    # the loop_b.md half of the symlink loop is recorded too (one more than the table's rows)
    assert summary.failed == sum(k != "landed" for _, _, k, _ in CASES) + 1
    assert summary.index.chunks > 0 and not any("not indexed" in o.reason for o in summary.outcomes)
    assert not (outcomes["root"] / "evil.txt").exists() and not Path("/tmp/kbflow_evil.txt").exists()
