"""The embedded default backend: the real MinerU 4, in-process, one file at a time.

MinerU runs with its model source `local` and its home inside kbflow's home (unless the user set
`MINERU_HOME`), so a file that needs model weights (a scanned PDF needing OCR) fails at once with
`NeedsModelsError` instead of reaching for a model hub. That environment is set for one call and
restored after it: nothing else in the process sees it.
"""
from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

from schemas import errors

_OFFLINE_ENV = {
    "MINERU_MODEL_SOURCE": "local",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "MODELSCOPE_OFFLINE": "1",
}


def mineru_version() -> str:
    try:
        return metadata.version("mineru")
    except metadata.PackageNotFoundError:
        return "absent"


@contextlib.contextmanager
def mineru_environment(mineru_home: Path) -> Iterator[None]:
    """MinerU's offline environment for the duration of one call. MinerU reads its configuration
    from the environment when it is first imported, and the processes it starts to render PDF
    pages inherit the environment; so both are set here and restored when the call ends (the
    embedding model's hub checks, for one, must not see `HF_HUB_OFFLINE` left behind by a parse)."""
    user_home = os.environ.get("MINERU_HOME")
    home = Path(user_home).expanduser() if user_home else mineru_home
    home.mkdir(parents=True, exist_ok=True)
    env = {**_OFFLINE_ENV, "MINERU_HOME": str(home)}
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    try:
        from mineru.config import config

        saved_model = (config.model.source, config.model.base_dir)
        config.model.source = "local"
        if not user_home:  # the default was fixed when mineru.config was first imported
            config.model.base_dir = str(home / "models")
        try:
            yield
        finally:
            config.model.source, config.model.base_dir = saved_model
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def parse_with_mineru(path: Path, out: Path, *, tier: str, mineru_home: Path) -> None:
    """Parse `path` with MinerU and write content_list v1/v2, middle json, markdown and images to `out`."""
    if mineru_version() == "absent":
        raise errors.ParseError(str(path), "MinerU is not installed: pip install 'mineru==4.0.12'")
    try:
        with mineru_environment(mineru_home):
            from docvortex.export import materialize_middle
            from mineru.parser import parse
            from mineru.render import RenderFormat, render

            result = parse(path, tier=tier)
        middle, assets = materialize_middle(result.middle_json)
        content_list = render(middle, RenderFormat.CONTENT_LIST)
        content_list_v2 = render(middle, RenderFormat.CONTENT_LIST_V2)
        markdown = render(middle, RenderFormat.MARKDOWN)
    except FileNotFoundError as exc:
        if "Model repo" in str(exc):
            raise errors.NeedsModelsError(
                str(path),
                f"needs MinerU OCR/layout models, not installed under {mineru_home} "
                f"(scanned or image-only pages; tier={tier!r}); parse it where the models are and "
                "ingest the output folder (import backend)",
            ) from None
        raise errors.ParseError(str(path), f"MinerU: {exc}") from None
    except errors.KbflowError:
        raise
    except Exception as exc:  # MinerU raises many types; each is this file's failure, not the run's
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise errors.ParseError(str(path), f"MinerU failed ({type(exc).__name__}): {message[:500]}") from None

    from tasks.ingest.parse import CONTENT_LIST, CONTENT_LIST_V2, MARKDOWN, MIDDLE_JSON

    for relative, payload in assets.items():
        target = (out / relative).resolve()
        if not target.is_relative_to(out.resolve()):
            raise errors.UnsafeArchiveError(str(path), f"asset path escapes the output folder: {relative}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(payload)
    (out / CONTENT_LIST).write_text(json.dumps(content_list, ensure_ascii=False, indent=1), encoding="utf-8")
    (out / CONTENT_LIST_V2).write_text(json.dumps(content_list_v2, ensure_ascii=False, indent=1), encoding="utf-8")
    (out / MIDDLE_JSON).write_text(json.dumps(middle.to_dict(), ensure_ascii=False), encoding="utf-8")
    (out / MARKDOWN).write_text(markdown, encoding="utf-8")
