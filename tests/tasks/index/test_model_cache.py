"""The user-level model cache: one converted model for every home (not ~460 MB each), checksummed,
with a verified stamp that spares later processes re-hashing the weights while nothing changed."""
from __future__ import annotations

import json

import pytest

from schemas.settings import load_settings
from tasks.index import e5_convert
from tasks.index.embed import resolve_model


def _fake_converted(folder):
    """A folder with a valid converter record (tiny files instead of the real weights)."""
    folder.mkdir(parents=True)
    (folder / "model.safetensors").write_bytes(b"w" * 1000)
    (folder / "config.json").write_text("{}", encoding="utf-8")
    files = {name: e5_convert.file_digest(folder / name, "sha256") for name in ("config.json", "model.safetensors")}
    (folder / e5_convert.CHECKSUM_FILE).write_text(json.dumps({
        "converter_version": e5_convert.CONVERTER_VERSION, "files": files, "checksum": e5_convert._combined(files)}))
    return folder


def test_homes_share_the_user_cache_and_the_stamp_spares_rehashing(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    folder = _fake_converted(cache / e5_convert.MODEL_DIRNAME)
    monkeypatch.setattr(e5_convert, "convert", lambda *a, **k: pytest.fail("must not convert"))
    first = resolve_model(load_settings(tmp_path / "home-a", model_cache_dir=str(cache)))
    second = resolve_model(load_settings(tmp_path / "home-b", model_cache_dir=str(cache)))
    assert first == second == folder
    assert not (tmp_path / "home-a" / "models").exists() and not (tmp_path / "home-b").exists()
    stamp = cache / f".{e5_convert.MODEL_DIRNAME}.verified.json"
    assert stamp.is_file()

    checksum = e5_convert.verify_folder(folder)
    e5_convert._verified.clear()  # a new process: only the stamp is left
    monkeypatch.setattr(e5_convert, "file_digest", lambda *a, **k: pytest.fail("must not re-hash"))
    assert e5_convert.verify_folder(folder) == checksum


def test_a_changed_file_is_rehashed_and_fails(tmp_path):
    folder = _fake_converted(tmp_path / "cache" / e5_convert.MODEL_DIRNAME)
    assert e5_convert.verify_folder(folder)
    e5_convert._verified.clear()
    (folder / "model.safetensors").write_bytes(b"x" * 1000)  # same size, new content and mtime
    assert e5_convert.verify_folder(folder) is None


def test_the_default_cache_is_per_user(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert load_settings(tmp_path / "home").models_dir == tmp_path / "xdg" / "kbflow" / "models"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    assert load_settings(tmp_path / "home").models_dir == tmp_path / "user" / ".cache" / "kbflow" / "models"
