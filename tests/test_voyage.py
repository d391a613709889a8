"""The Voyage provider, against a local stand-in for its HTTP API."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest
from conftest import index, names, run_script, search
from fake_voyage import GOOD_KEY, FakeVoyage


@pytest.fixture
def voyage():
    with FakeVoyage() as fake:
        yield fake


@pytest.fixture
def voyage_env(env, voyage):
    return dict(env, VOYAGE_API_KEY=GOOD_KEY, MEMORIES_VOYAGE_BASE_URL=voyage.url)


@pytest.fixture
def notes(memories):
    """Two notes whose text is new to the embedding cache, so every test reaches the API."""
    marker = f"(notebook {memories.root.parent.name})"
    memories.write("wiki/garden.md", f"# Garden\n\nWater the tomatoes every morning in summer. {marker}",
                   title="Garden")
    memories.write("wiki/cars.md", f"# Cars\n\nChange the engine oil every ten thousand kilometres. {marker}",
                   title="Cars")
    return memories


def test_voyage_is_the_default_when_a_key_is_set(voyage_env, voyage, notes):
    stats = index(voyage_env, notes)
    assert stats["success"] == 2 and stats["embedded"] == 2
    embed_calls = [request for request in voyage.requests if request["path"].endswith("/embeddings")]
    assert embed_calls[0]["input_type"] == "document"
    assert embed_calls[0]["model"] == "voyage-3-large" and embed_calls[0]["output_dimension"] == 1024
    assert names(search(voyage_env, notes, "when to water tomatoes", "--no-rerank"))[0] == "garden.md"
    query_call = [request for request in voyage.requests if request["path"].endswith("/embeddings")][-1]
    assert query_call["input_type"] == "query"


def test_rerank_runs_by_default_with_a_key_and_orders_the_hits(voyage_env, voyage, notes):
    index(voyage_env, notes)
    hits = search(voyage_env, notes, "engine oil", "--explain")
    assert names(hits)[0] == "cars.md" and "rerank" in hits[0]["explain"]
    assert any(request["path"].endswith("/rerank") and request["model"] == "rerank-2.5"
               for request in voyage.requests)


def test_rerank_failure_keeps_the_fused_order_with_a_warning(voyage_env, voyage, notes):
    index(voyage_env, notes)
    voyage.fail_rerank = True
    result = run_script("search", "engine oil", "--format", "json", env=voyage_env, memories=notes, check=True)
    assert "rerank failed" in result.stderr
    assert names(json.loads(result.stdout))[0] == "cars.md"


def test_a_wrong_key_stops_with_a_clear_message(voyage_env, notes):
    result = run_script("index", env=dict(voyage_env, VOYAGE_API_KEY="wrong"), memories=notes)
    assert result.returncode == 1
    assert "VOYAGE_API_KEY" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_rate_limits_are_retried(voyage_env, voyage, notes):
    voyage.fail_next = [429, 503]
    stats = index(voyage_env, notes)
    assert stats["success"] == 2 and stats["embedded"] == 2
    assert voyage.fail_next == [] and len([r for r in voyage.requests if r["path"].endswith("/embeddings")]) == 3


def test_no_network_says_the_local_provider_works_offline(env, notes):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    offline = dict(env, VOYAGE_API_KEY=GOOD_KEY, MEMORIES_VOYAGE_BASE_URL=f"http://127.0.0.1:{closed_port}/v1")
    result = run_script("index", env=offline, memories=notes)
    assert result.returncode == 1
    assert "cannot reach Voyage AI" in result.stderr and "local" in result.stderr


def test_the_model_that_built_the_index_is_used_for_queries(voyage_env, env, voyage, notes):
    index(voyage_env, notes)
    no_key = dict(env)  # no key now: the index still says voyage, so search asks for the key
    result = run_script("search", "tomatoes", env=no_key, memories=notes)
    assert result.returncode == 1 and "VOYAGE_API_KEY" in result.stderr


def test_a_failed_first_run_does_not_bind_the_index_to_voyage(voyage_env, env, notes):
    assert run_script("index", env=dict(voyage_env, VOYAGE_API_KEY="wrong"), memories=notes).returncode == 1
    local = index(env, notes)  # no key now: the local model builds it
    assert local["success"] == 2
    status = json.loads(run_script("stats", "--json", env=env, memories=notes, check=True).stdout)
    assert status["model"]["provider"] == "local"


def test_a_model_name_alone_means_voyage(env, notes):
    index(env, notes)
    result = run_script("search", "tomatoes", env=dict(env, MEMORIES_EMBEDDING_MODEL="voyage-3.5"), memories=notes)
    assert result.returncode == 1 and "voyage-3.5" in result.stderr and "multilingual-e5-small" in result.stderr


def test_a_service_that_never_answers_costs_seconds_not_minutes(voyage_env, voyage, notes):
    index(voyage_env, notes)
    voyage.hang = True
    started = time.monotonic()
    result = run_script("search", "tomatoes", "--no-rerank", env=voyage_env, memories=notes)
    assert result.returncode == 1 and "did not answer" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert time.monotonic() - started < 30


def test_an_error_body_that_echoes_the_key_is_masked(voyage_env, voyage, notes):
    voyage.echo_key_in_errors = True
    voyage.fail_next = [400]
    result = run_script("index", env=voyage_env, memories=notes)
    assert result.returncode == 1 and "Voyage AI refused" in result.stderr
    assert GOOD_KEY not in result.stderr and "***" in result.stderr


def test_a_server_asks_voyage_once_for_a_question_asked_again_soon(voyage_env, voyage, notes):
    from starlette.testclient import TestClient

    from memory_search.config import Settings
    from memory_search.faces.http_api import Database, create_app
    from memory_search.resources import Resources

    index(voyage_env, notes)
    settings = Settings.from_env(voyage_env).with_overrides(memories_dir=notes.root)
    app = create_app([Database("default", notes.root, "2026-12-01T00:00:00Z", settings)], Resources(4))
    with TestClient(app, base_url="http://127.0.0.1") as client:
        for question, calls in (("when to water tomatoes", 1), ("engine oil", 1), ("when to water tomatoes", 0)):
            before = len(voyage.requests)
            answer = client.get("/api/search", params={"q": question, "db": "default"})
            assert answer.status_code == 200, answer.text
            assert answer.json()["semantic"]
            asked = [request["input"] for request in voyage.requests[before:]
                     if request["path"].endswith("/embeddings")]
            assert asked == [[question]] * calls  # not again when asked again soon


def _until(condition, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_a_server_asks_voyage_for_several_questions_at_once(voyage_env, voyage, notes):
    import threading

    from memory_search.config import Settings
    from memory_search.resources import Resources

    index(voyage_env, notes)
    settings = Settings.from_env(voyage_env).with_overrides(memories_dir=notes.root)
    resources = Resources(4)
    voyage.gate = threading.Event()
    answers = {}

    def ask(question):
        with resources.open(settings) as memories:
            answers[question] = memories.search(question, mode="semantic", rerank=False)

    askers = [threading.Thread(target=ask, args=(question,)) for question in ("watering tomatoes", "engine oil")]
    try:
        for asker in askers:
            asker.start()
        both_asked = _until(lambda: set(voyage.waiting) == {"watering tomatoes", "engine oil"})
    finally:
        voyage.gate.set()
        for asker in askers:
            asker.join(30)
        resources.close()
    assert both_asked, "the second question waited for Voyage's answer to the first"
    assert Path(answers["engine oil"][0].path).name == "cars.md"


@pytest.mark.parametrize("mode, rerank, asked", [("semantic", False, "engine oil"), ("hybrid", False, "engine oil"),
                                                  ("keyword", True, "rerank: engine oil")])
def test_a_server_holds_no_database_connection_while_voyage_answers(voyage_env, voyage, notes, mode, rerank, asked):
    import threading

    from memory_search.config import Settings
    from memory_search.resources import Resources

    index(voyage_env, notes)
    settings = Settings.from_env(voyage_env).with_overrides(memories_dir=notes.root)
    resources = Resources(1)  # one connection for every search of the server
    voyage.gate = threading.Event()
    found = {}

    def search(name, **asking):
        with resources.open(settings) as memories:
            found[name] = memories.search("engine oil", **asking)

    waiting = threading.Thread(target=search, args=("waiting",), kwargs={"mode": mode, "rerank": rerank})
    other = threading.Thread(target=search, args=("other",), kwargs={"mode": "keyword", "rerank": False})
    try:
        waiting.start()
        assert _until(lambda: voyage.waiting == [asked])
        other.start()
        other.join(3)  # within the 5 s Voyage's client waits before it gives up and frees the connection
        answered_meanwhile = "other" in found
    finally:
        voyage.gate.set()
        waiting.join(30)
        other.join(30)
        resources.close()
    assert answered_meanwhile, "another search waited for the connection a search held while Voyage answered"
    assert Path(found["waiting"][0].path).name == "cars.md"
