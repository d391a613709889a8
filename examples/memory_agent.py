#!/usr/bin/env python3
"""Answer a question with Claude, letting it search the memories through the memory-search skill."""

import os
import subprocess
import sys

import anthropic

SKILL_DIR = os.environ.get("MEMORY_SEARCH_DIR", os.path.expanduser("~/.claude/skills/memory-search"))
SEARCH_SCRIPT = os.path.join(SKILL_DIR, "scripts", "search.py")
PYTHON = os.path.join(SKILL_DIR, ".venv", "bin", "python")  # the skill's own environment (`make install`)
MODEL = os.environ.get("ANTHROPIC_MODEL", "claude-sonnet-4-6")
SEARCH_TIMEOUT = 60  # seconds; a cold first call starts the embedded database and loads the model
MAX_ROUNDS = 8  # tool calls Claude may make before we stop the loop

SEARCH_TOOL = {
    "name": "search_memories",
    "description": (
        "Searches the user's Markdown memories: summaries of past coding sessions, archived web pages, "
        "meeting minutes and wiki pages, written in Japanese and English. Use it when the user asks what was "
        "decided, done or saved before, or when an answer depends on earlier work. It returns a JSON list of "
        "hits, best first, each with path, title, status, kind, date, start_line, end_line and a short snippet; "
        "an empty list [] means nothing matched. A snippet is a lead, not a quotation, and superseded or "
        "deprecated records are left out unless include_superseded is true."
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "description": "What to look for: a natural-language question or keywords, Japanese or English.",
            },
            "top": {
                "type": "integer",
                "minimum": 1,
                "maximum": 20,
                "description": "How many files to return, best first (default 5).",
            },
            "scope": {
                "type": "string",
                "enum": ["all", "session", "web", "minutes", "wiki"],
                "description": "Only one kind of record: session summaries, web pages, minutes or wiki (default all).",
            },
            "include_superseded": {
                "type": "boolean",
                "description": "Also return superseded and deprecated records, for the history of a decision.",
            },
        },
        "required": ["query"],
    },
}


def search_memories(tool_input: dict) -> tuple[str, bool]:
    """Run search.py for one tool call: (tool_result content, is_error)."""
    try:
        top = max(1, min(20, int(tool_input.get("top", 5))))
    except (TypeError, ValueError):
        top = 5
    argv = [PYTHON, SEARCH_SCRIPT, "--format", "json", "--top", str(top),
            "--scope", str(tool_input.get("scope", "all"))]
    if tool_input.get("include_superseded"):
        argv.append("--include-superseded")
    argv += ["--", str(tool_input["query"])]  # "--": a query starting with "-" stays a query
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=SEARCH_TIMEOUT)
    except subprocess.TimeoutExpired:
        return f"search.py did not finish within {SEARCH_TIMEOUT} s", True
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        return (lines[-1] if lines else f"search.py exited with code {done.returncode}"), True
    return done.stdout, False


def ask(client: anthropic.Anthropic, question: str) -> str:
    messages = [{"role": "user", "content": question}]
    for _ in range(MAX_ROUNDS):
        response = client.messages.create(
            model=MODEL,
            max_tokens=2048,
            system="Answer from the user's memories when they are relevant; cite the path of each record you use.",
            tools=[SEARCH_TOOL],
            messages=messages,
        )
        messages.append({"role": "assistant", "content": response.content})
        if response.stop_reason != "tool_use":
            return "".join(block.text for block in response.content if block.type == "text")
        results = []
        for block in response.content:
            if block.type != "tool_use":
                continue
            if block.name == "search_memories":
                content, failed = search_memories(block.input)
            else:
                content, failed = f"unknown tool {block.name}", True
            result = {"type": "tool_result", "tool_use_id": block.id, "content": content}
            if failed:
                result["is_error"] = True
            results.append(result)
        messages.append({"role": "user", "content": results})
    return "(stopped: too many tool calls)"


if __name__ == "__main__":
    question = " ".join(sys.argv[1:]) or "What did we decide about the embedding model?"
    print(ask(anthropic.Anthropic(), question))  # reads ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL)
