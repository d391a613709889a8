"""references/api-usage.md's tool-use loop, run with the anthropic SDK against a local fake Messages API."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

pytest.importorskip("anthropic", reason="the test extra is not installed (make install installs it)")

from conftest import ROOT, index, search  # noqa: E402
from fake_anthropic import FakeMessages  # noqa: E402

EXAMPLE = ROOT / "examples" / "memory_agent.py"


def test_the_documented_code_is_the_file_the_tests_run():
    document = (ROOT / "references" / "api-usage.md").read_text()
    block = re.search(r"```python\n(\"\"\"Answer a question.*?)```", document, re.S).group(1)
    assert "#!/usr/bin/env python3\n" + block == EXAMPLE.read_text()


def test_the_loop_runs_search_py_and_returns_its_json_or_its_error_line(env, memories):
    memories.write("wiki/search/embedding-model.md", "# Embedding model\n\nWe chose voyage-3-large in October.\n",
                   title="Embedding model")
    index(env, memories)
    good = {"query": "which embedding model did we choose", "top": 3}
    bad = {"query": "embedding", "scope": "bogus"}
    with FakeMessages("search_memories", [good, bad]) as fake:
        run_env = {**env, "MEMORIES_DIR": str(memories.root), "MEMORY_SEARCH_DIR": str(ROOT),
                   "ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "test-key"}
        done = subprocess.run([sys.executable, str(EXAMPLE), "What did we decide about the embedding model?"],
                              env=run_env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Answered from the memories."
    first, second = fake.requests
    assert first["tools"][0]["name"] == "search_memories" and first["messages"][0]["role"] == "user"
    assert [block["type"] for block in second["messages"][1]["content"]] == ["tool_use", "tool_use"]
    results = fake.tool_results()
    assert [result["tool_use_id"] for result in results] == ["toolu_0", "toolu_1"]
    hits = json.loads(results[0]["content"])
    assert hits == search(env, memories, good["query"], "--top", "3", "--scope", "all")
    assert hits[0]["title"] == "Embedding model" and "is_error" not in results[0]
    assert results[1]["is_error"] is True
    assert results[1]["content"].startswith("search.py: error: ") and "bogus" in results[1]["content"]
    assert "\n" not in results[1]["content"]
