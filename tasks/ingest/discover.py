"""Discover: expand the given paths into source files, each with its streamed MD5.

Every path that cannot be ingested becomes a `Rejection` with a reason; nothing here raises for
one bad file. MinerU output folders and result zips are sources of their own (the `import`
backend), never walked into.
"""
from __future__ import annotations

import errno
import hashlib
import os
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from schemas import errors
from schemas.settings import Settings
from tasks.common.files import file_md5, files_md5

# What MinerU 4 flash parses in-process without model weights (text-layer PDFs included).
MINERU_EXTENSIONS = frozenset(
    {"pdf", "doc", "docx", "ppt", "pptx", "xls", "xlsx", "rtf", "odt", "ods", "odp",
     "html", "htm", "shtml", "mhtml", "mht", "csv", "tsv", "epub", "ofd"}
)
MARKDOWN_EXTENSIONS = frozenset({"md", "markdown", "mdx"})
TEXT_EXTENSIONS = frozenset({"txt", "text"})
OOXML_EXTENSIONS = frozenset({"docx", "pptx", "xlsx"})
# Zip containers: their directory is checked against the unpacked-size and member limits before
# anything reads a member (a 3.6 MB DOCX can unpack to a 1 GB document.xml).
ZIP_EXTENSIONS = OOXML_EXTENSIONS | {"odt", "ods", "odp", "epub", "zip"}
# The top folder names of MinerU's own output layouts (2.x `auto/`, 3.x `office/`, `hybrid_auto/`, ...).
MINERU_LAYOUT_DIRS = frozenset({"auto", "office", "hybrid_auto", "vlm", "txt", "ocr", "pipeline"})

DOC_TYPES = {
    "pdf": "pdf", "doc": "word", "docx": "word", "odt": "word", "rtf": "word",
    "ppt": "powerpoint", "pptx": "powerpoint", "odp": "powerpoint",
    "xls": "excel", "xlsx": "excel", "ods": "excel", "csv": "excel", "tsv": "excel",
    "html": "html", "htm": "html", "shtml": "html", "mhtml": "html", "mht": "html",
    "epub": "ebook", "ofd": "ofd", "md": "markdown", "markdown": "markdown", "mdx": "markdown",
    "txt": "text", "text": "text",
}


@dataclass(frozen=True)
class SourceFile:
    path: Path  # absolute
    source: str  # display name, unique within a run: path relative to the given root
    md5: str
    size_bytes: int
    kind: str  # "mineru" (parse with MinerU), "markdown", "text", "mineru_output" (import)
    doc_type: str


@dataclass(frozen=True)
class Rejection:
    path: str
    md5: str
    error_kind: str
    reason: str

    @classmethod
    def of(cls, exc: errors.KbflowError, md5: str = "") -> "Rejection":
        return cls(path=exc.path, md5=md5, error_kind=type(exc).__name__, reason=exc.reason)


@dataclass
class Discovery:
    sources: list[SourceFile] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)
    empty_roots: list[str] = field(default_factory=list)  # given folders that held no file (also rejected)


def mineru_output_files(folder: Path) -> list[Path]:
    """The content lists of a MinerU output folder (any version's naming), empty if it is not one."""
    return sorted(p for p in folder.glob("*content_list*.json") if p.is_file())


def is_mineru_zip(path: Path) -> bool:
    try:
        with zipfile.ZipFile(path) as zf:
            return any(Path(n).name.endswith(("content_list.json", "content_list_v2.json")) for n in zf.namelist())
    except (zipfile.BadZipFile, OSError):
        return False


def folder_md5(files: list[Path]) -> str:
    """Identity of an imported MinerU folder: the MD5 over its content lists' names and bytes."""
    return files_md5(files)


def _check_magic(path: Path, ext: str) -> str | None:
    """Cheap corruption checks: a wrong or truncated container is rejected before parsing. Returns
    the file's MD5 when the bytes read for the check were the whole file (a small text file is read
    once), else None."""
    with path.open("rb") as fh:
        sample = fh.read(65536)
    head = sample[:8]
    if ext == "pdf":
        if not head.startswith(b"%PDF-"):
            raise errors.CorruptFileError(str(path), "not a PDF (missing %PDF- header)")
        with path.open("rb") as fh:
            fh.seek(max(0, path.stat().st_size - 2048))
            if b"%%EOF" not in fh.read():
                raise errors.CorruptFileError(str(path), "truncated PDF (no %%EOF marker)")
        _check_pdf_opens(path)
    elif ext in OOXML_EXTENSIONS and head.startswith(OLE2_MAGIC):
        # Office writes a password-protected .docx/.xlsx/.pptx as an encrypted OLE2 container
        raise errors.EncryptedFileError(
            str(path), f"password-protected (encrypted) .{ext}, or an old binary Office file renamed to .{ext}; "
                       "save it without a password and ingest it again")
    elif ext in OOXML_EXTENSIONS:
        try:
            with zipfile.ZipFile(path) as zf:
                if "[Content_Types].xml" not in zf.namelist():
                    raise errors.CorruptFileError(str(path), f"not an Office Open XML .{ext} package")
                bad = zf.testzip()
                if bad is not None:
                    raise errors.CorruptFileError(str(path), f"damaged zip member {bad!r}")
        except zipfile.BadZipFile as exc:
            raise errors.CorruptFileError(str(path), f"not a valid .{ext} (zip) file: {exc}") from None
        except (zlib.error, EOFError, NotImplementedError) as exc:  # a damaged compressed member
            raise errors.CorruptFileError(str(path), f"damaged .{ext} (zip) content: {exc}") from None
    elif ext in MARKDOWN_EXTENSIONS | TEXT_EXTENSIONS:
        if b"\x00" in sample:
            raise errors.CorruptFileError(str(path), "binary content in a text file")
        try:
            sample.decode("utf-8")
        except UnicodeDecodeError as exc:
            if exc.start < len(sample) - 4:  # a multi-byte char cut at the sample end is fine
                try:
                    sample.decode("gb18030")
                except UnicodeDecodeError:
                    raise errors.CorruptFileError(str(path), "text is neither UTF-8 nor GB18030") from None
    return hashlib.md5(sample).hexdigest() if len(sample) < 65536 else None


OLE2_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def _check_pdf_opens(path: Path) -> None:
    """Open the PDF with PDFium (MinerU's own PDF library; pages are not loaded): a password or a
    damaged cross-reference table is reported here, with a reason, instead of as a parser crash."""
    try:
        import pypdfium2 as pdfium
    except ImportError:  # MinerU absent: the parse stage says so
        return
    try:
        pdfium.PdfDocument(str(path)).close()
    except pdfium.PdfiumError as exc:
        message = str(exc)
        if "password" in message.lower():
            raise errors.EncryptedFileError(
                str(path), "password-protected PDF: it cannot be opened without its password; decrypt it "
                           "(e.g. `qpdf --decrypt --password=... in.pdf out.pdf`) and ingest the copy") from None
        raise errors.CorruptFileError(str(path), f"damaged PDF: PDFium cannot open it ({message})") from None


def classify(path: Path, settings: Settings) -> tuple[str, str, int, str]:
    """Return (kind, doc_type, size, MD5) for a file, or raise a RejectedFileError."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise errors.MissingFileError(str(path), "no such file") from None
    if not os.access(path, os.R_OK):
        raise errors.RejectedFileError(str(path), "not readable (permission denied)")
    if size == 0:
        raise errors.EmptyFileError(str(path), "empty file (0 bytes)")
    if size > settings.max_file_bytes:
        raise errors.FileTooLargeError(
            str(path), f"{size / 1048576:.1f} MB exceeds the {settings.runtime.max_file_mb:g} MB limit (max_file_mb)")
    ext = path.suffix.lower().lstrip(".")
    if ext in ZIP_EXTENSIONS:
        _check_zip_bounds(path, ext, settings)
    if ext == "zip":
        if is_mineru_zip(path):
            return "mineru_output", "mineru", size, file_md5(path)
        raise errors.UnsupportedFileError(str(path), "zip without a MinerU *_content_list.json")
    if ext == "json" and path.name.endswith(("content_list.json", "content_list_v2.json")):
        raise errors.UnsupportedFileError(str(path), "pass the MinerU output folder, not one of its files")
    if ext in MARKDOWN_EXTENSIONS:
        kind = "markdown"
    elif ext in TEXT_EXTENSIONS:
        kind = "text"
    elif ext in MINERU_EXTENSIONS:
        kind = "mineru"
    else:
        raise errors.UnsupportedFileError(str(path), f"unsupported file type '.{ext or path.name}'")
    md5 = _check_magic(path, ext) or file_md5(path)
    return kind, DOC_TYPES.get(ext, ext), size, md5


def _check_zip_bounds(path: Path, ext: str, settings: Settings) -> None:
    """Reject a zip whose directory promises more than `max_unpacked_mb` or `max_zip_members`: read
    from the central directory only (no member is decompressed), so a zip bomb costs microseconds."""
    try:
        with zipfile.ZipFile(path) as zf:
            members = zf.infolist()
    except (zipfile.BadZipFile, OSError, ValueError):
        return  # not a zip after all: the content checks say why
    limit = settings.runtime
    if len(members) > limit.max_zip_members:
        raise errors.ArchiveTooLargeError(str(path), f".{ext} holds {len(members)} members, more than the "
                                                   f"{limit.max_zip_members} allowed (max_zip_members)")
    unpacked = sum(m.file_size for m in members)
    if unpacked > limit.max_unpacked_mb * 1048576:
        raise errors.ArchiveTooLargeError(
            str(path), f".{ext} unpacks to {unpacked / 1048576:.0f} MB, more than the {limit.max_unpacked_mb:g} MB "
                       f"allowed (max_unpacked_mb): a zip bomb, or a document too large to parse safely")


def printable_path(path: Path | str) -> str:
    """A path as text that can be stored: a name that is not valid UTF-8 shows its bytes escaped."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _valid_utf8(path: Path) -> bool:
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:  # undecodable bytes (surrogate-escaped by the OS layer)
        return False
    return True


def _walk(root: Path, linked_dirs: list[Path] | None = None) -> tuple[list[Path], list[Path]]:
    """Files and MinerU output folders under root; symlinked folders are not followed (no loops),
    and are listed in `linked_dirs` when given."""
    files: list[Path] = []
    mineru_dirs: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(dirpath)
        if mineru_output_files(here):
            mineru_dirs.append(here)
            dirnames[:] = []
            continue
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        if linked_dirs is not None:
            linked_dirs.extend(here / d for d in dirnames if (here / d).is_symlink())
        files.extend(here / f for f in sorted(filenames) if not f.startswith("."))
    return files, mineru_dirs


def _dangling_reason(path: Path) -> tuple[str, str]:
    """(error kind, reason) of a symlink that does not resolve to a file."""
    try:
        path.stat()
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return errors.SymlinkLoopError.__name__, "symlink loop (the link resolves back to itself)"
    return errors.MissingFileError.__name__, "broken symlink"


def _source_name(path: Path, root: Path, kb_root: Path | None = None) -> str:
    """Name a source by its path relative to the KB's root (`../x/a.md` outside it), or, without
    one, relative to the given folder (the file name for a given file)."""
    if kb_root is not None:
        return Path(os.path.relpath(path, kb_root)).as_posix() if path != kb_root else path.name
    return path.name if path == root else path.relative_to(root).as_posix()


def _mineru_dir_source(folder: Path, root: Path, kb_root: Path | None = None) -> str:
    # `<out>/<doc>/auto/` is named after <doc>, not after `auto`.
    named = folder.parent if folder.name in MINERU_LAYOUT_DIRS else folder
    if kb_root is not None:
        return _source_name(named, root, kb_root)
    if folder == root or named == root:
        return named.name
    return _source_name(named, root)


def discover(paths: list[str | os.PathLike], settings: Settings, kb_root: Path | None = None) -> Discovery:
    """`kb_root`: the folder source names are relative to (`tasks.ingest.manifest.resolve_root`)."""
    found = Discovery()
    seen_md5: dict[str, str] = {}
    seen_sources: set[str] = set()

    def add(path: Path, source: str, kind: str, doc_type: str, md5: str, size: int) -> None:
        if source in seen_sources:  # same relative name under two given folders
            source = path.as_posix().lstrip("/")
        seen_sources.add(source)
        if md5 in seen_md5:
            found.rejected.append(Rejection.of(
                errors.DuplicateFileError(str(path), f"same content as {seen_md5[md5]} (skipped)"), md5))
            return
        seen_md5[md5] = source
        found.sources.append(SourceFile(path, source, md5, size, kind, doc_type))

    for given in paths:
        root = Path(given).expanduser().absolute()
        if root.is_dir():
            if mineru_output_files(root):
                files, mineru_dirs = [], [root]
            else:
                linked: list[Path] = []
                try:
                    files, mineru_dirs = _walk(root, linked)
                except OSError as exc:
                    found.rejected.append(Rejection(str(root), "", "RejectedFileError", f"cannot list folder: {exc}"))
                    continue
                for link in linked:
                    found.rejected.append(Rejection(
                        str(link), "", "UnsupportedFileError",
                        "symlinked folder not followed (so a link loop cannot trap the walk); "
                        "give its target as a PATH to ingest it"))
            for folder in mineru_dirs:
                if not _valid_utf8(folder):
                    found.rejected.append(Rejection(printable_path(folder), "", "UnsupportedFileError",
                                                    "folder name is not valid UTF-8; rename it"))
                    continue
                lists = mineru_output_files(folder)
                add(folder, _mineru_dir_source(folder, root, kb_root), "mineru_output",
                    "mineru", folder_md5(lists), sum(p.stat().st_size for p in lists))
            if not files and not mineru_dirs:
                found.rejected.append(Rejection(str(root), "", "MissingFileError", "folder holds no files"))
                found.empty_roots.append(str(root))
        else:
            files = [root]
        for path in files:
            if not _valid_utf8(path):  # recorded, never stored or parsed under an unencodable name
                found.rejected.append(Rejection(printable_path(path), "", "UnsupportedFileError",
                                                "file name is not valid UTF-8; rename it (e.g. `convmv -f GBK "
                                                "-t UTF-8`) and ingest it again"))
                continue
            if path.is_symlink() and not path.exists():
                found.rejected.append(Rejection(str(path), "", *_dangling_reason(path)))
                continue
            try:
                kind, doc_type, size, md5 = classify(path, settings)
            except errors.RejectedFileError as exc:
                found.rejected.append(Rejection.of(exc))
                continue
            except OSError as exc:  # e.g. a symlink loop or a file removed while walking
                found.rejected.append(Rejection(str(path), "", "RejectedFileError", f"cannot read: {exc.strerror or exc}"))
                continue
            except Exception as exc:  # a check tripping over a malformed file must not stop discovery
                found.rejected.append(Rejection(str(path), "", "CorruptFileError",
                                                f"cannot be checked ({type(exc).__name__}: {str(exc)[:200]})"))
                continue
            add(path, _source_name(path, root if root.is_dir() else path, kb_root), kind, doc_type, md5, size)
    return found
