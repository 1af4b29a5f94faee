"""Shared by every part: atomic file writes and hashing, text helpers and the jieba tokenizer, HTTP helpers, the OpenAI-compatible client, the home's write lock."""
