"""The bundled demo corpus parses, and every demo question's answer is in its gold source's chunks."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tasks.ingest.content_list import normalize_parsed
from tasks.ingest.discover import discover
from tasks.ingest.parse import parse_source

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.fixture(scope="module")
def chunk_text(tmp_path_factory) -> dict[str, str]:
    from schemas.settings import load_settings

    settings = load_settings(tmp_path_factory.mktemp("home"))
    found = discover([EXAMPLES / "corpus"], settings)
    assert not found.rejected, found.rejected
    text = {}
    for src in found.sources:
        chunks = normalize_parsed(parse_source(src, settings).parsed_dir).chunks
        text[src.source] = "\n".join(f"{c.caption}\n{c.content}" for c in chunks)
    return text


def test_demo_corpus_has_the_four_documents(chunk_text):
    assert sorted(chunk_text) == ["faq.txt", "flood_control_report.pdf", "reservoir_maintenance_guide.md",
                                  "water_management_policy.docx"]


def test_every_demo_answer_is_in_a_gold_source(chunk_text):
    questions = [json.loads(line) for line in (EXAMPLES / "questions.jsonl").read_text(encoding="utf-8").splitlines()
                 if line.strip()]
    assert len(questions) >= 12
    missing = [(q["id"], a) for q in questions for a in q["answers"]
               if not any(a in chunk_text[s] for s in q["gold_sources"])]
    assert missing == []
