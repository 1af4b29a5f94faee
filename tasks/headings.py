"""Headings → section_path, from the heading stack of seed 000 §2.3."""
from __future__ import annotations

from schemas.chunk import HEADING, Chunk

SEPARATOR = " > "


def assign_section_paths(chunks: list[Chunk]) -> list[Chunk]:
    """Pop every stacked heading at the new heading's level or deeper, push it, join the titles."""
    stack: list[tuple[int, str]] = []
    for chunk in chunks:
        if chunk.chunk_type == HEADING and chunk.text_level > 0:
            while stack and stack[-1][0] >= chunk.text_level:
                stack.pop()
            stack.append((chunk.text_level, chunk.title or chunk.content))
        chunk.section_path = SEPARATOR.join(title for _, title in stack)
    return chunks
