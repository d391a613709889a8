"""Text, before any database or file: keyword terms for Japanese and English (tokens), Markdown-aware chunks with
their line ranges (chunking), and the links a memory's text holds (links)."""
