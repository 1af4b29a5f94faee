"""The `import` backend: MinerU output parsed elsewhere (2.x `auto/`, 3.x `office/`/`hybrid_auto/`,
cloud-API result zips with `*_content_list*.json` + `layout.json`), copied into kbflow's layout."""
from __future__ import annotations

import json
import shutil
import stat
import zipfile
from pathlib import Path, PurePosixPath

from schemas import errors

IMPORT_VERSION = "1"
MAX_UNZIPPED_BYTES = 2 * 1024**3  # refuse zip bombs


def safe_extract(archive: Path, dest: Path) -> None:
    """Extract a zip, refusing absolute paths, `..`, symlinks and oversized content."""
    dest = dest.resolve()
    try:
        with zipfile.ZipFile(archive) as zf:
            members = zf.infolist()
            if sum(m.file_size for m in members) > MAX_UNZIPPED_BYTES:
                raise errors.UnsafeArchiveError(str(archive), "unpacks to more than 2 GiB")
            for m in members:
                name = m.filename.replace("\\", "/")
                parts = PurePosixPath(name).parts
                if name.startswith("/") or (parts and parts[0].endswith(":")) or ".." in parts:
                    raise errors.UnsafeArchiveError(str(archive), f"unsafe entry {m.filename!r} (absolute or '..')")
                if stat.S_ISLNK(m.external_attr >> 16):
                    raise errors.UnsafeArchiveError(str(archive), f"symlink entry {m.filename!r}")
                target = (dest / name).resolve()
                if not target.is_relative_to(dest):
                    raise errors.UnsafeArchiveError(str(archive), f"entry {m.filename!r} escapes the target folder")
            for m in members:
                zf.extract(m, dest)
    except zipfile.BadZipFile as exc:
        raise errors.ImportFormatError(str(archive), f"not a valid zip: {exc}") from None


def _one(paths: list[Path], what: str, origin: Path) -> Path | None:
    if len(paths) > 1:
        names = ", ".join(p.name for p in paths)
        raise errors.ImportFormatError(str(origin), f"more than one {what} ({names}); import one document per folder")
    return paths[0] if paths else None


def _check_content_list(path: Path, origin: Path) -> None:
    """A content list must be a JSON array (v1: of items; v2: of pages), else the import fails here."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise errors.ImportFormatError(str(origin), f"{path.name} is not valid JSON ({exc})") from None
    if not isinstance(data, list):
        raise errors.ImportFormatError(str(origin), f"{path.name} is not a MinerU content list (a JSON array), "
                                                    f"but a JSON {type(data).__name__}")


def import_mineru_output(origin: Path, out: Path) -> None:
    """Copy one MinerU result (folder or zip) into `out` under kbflow's standard file names."""
    from tasks.ingest.parse import CONTENT_LIST, CONTENT_LIST_V2, MARKDOWN, MIDDLE_JSON

    if origin.is_file():
        unpacked = out / ".unpacked"
        safe_extract(origin, unpacked)
        files = [p for p in unpacked.rglob("*") if p.is_file()]
    else:
        unpacked = None
        files = [p for p in origin.iterdir() if p.is_file()]

    v1 = _one([p for p in files if p.name.endswith("content_list.json")], "content_list.json", origin)
    v2 = _one([p for p in files if p.name.endswith("content_list_v2.json")], "content_list_v2.json", origin)
    if v1 is None and v2 is None:
        raise errors.ImportFormatError(str(origin), "no *_content_list.json or *_content_list_v2.json found")
    middle = _one([p for p in files if p.name.endswith("_middle.json") or p.name == "layout.json"], "middle json", origin)
    markdown = [p for p in files if p.suffix == ".md"]

    for content_list in (v1, v2):
        if content_list is not None:
            _check_content_list(content_list, origin)
    for src, name in ((v1, CONTENT_LIST), (v2, CONTENT_LIST_V2), (middle, MIDDLE_JSON)):
        if src is not None:
            shutil.copyfile(src, out / name)
    if len(markdown) == 1:
        shutil.copyfile(markdown[0], out / MARKDOWN)
    images = (v1 or v2).parent / "images"
    if images.is_dir() and not images.is_symlink():
        shutil.copytree(images, out / "images", symlinks=False,
                        ignore=lambda d, names: [n for n in names if (Path(d) / n).is_symlink()])
    if unpacked is not None:
        shutil.rmtree(unpacked)
