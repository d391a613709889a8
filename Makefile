# Set-up and checks. `make demo` and `make test` are all a fresh machine needs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SAMPLE := $(CURDIR)/examples/memories

.PHONY: install lock demo test test-all lint docs test-langbot test-langbot-e2e langbot-plugin bench eval eval-notes eval-time calibrate clean browser

# The stamp, not a file pip writes: an environment the scripts set up on first use lacks the test extra.
# Installed from the lock (requirements/dev.txt: every package pinned with its hashes), not resolved again;
# tools/install.py counts the packages on stderr as pip goes.
INSTALLED := $(VENV)/.installed

$(INSTALLED): pyproject.toml requirements/dev.txt
	$(PYTHON) tools/install.py $(VENV) requirements/dev.txt
	touch $@

install: $(INSTALLED)

# Write the locks again from pyproject.toml, each dependency at the newest release its pin allows (uv, from
# the test extra): requirements/plugin.txt (the plugin's environment: the package and its faces),
# dev.txt (make install, CI: and the test extra), langbot.txt (and the LangBot SDK). Python 3.11, any platform.
LOCK = $(BIN)/uv pip compile pyproject.toml --universal --python-version 3.11 --generate-hashes --upgrade \
	--quiet --custom-compile-command "make lock"
lock: $(INSTALLED)
	$(LOCK) --extra faces -o requirements/plugin.txt
	$(LOCK) --extra faces --extra test -o requirements/dev.txt
	$(LOCK) --extra faces --extra test --extra langbot -o requirements/langbot.txt

# Index the sample memories (embedded PostgreSQL, local model) and search them in both languages.
demo: install
	MEMORIES_DIR=$(SAMPLE) $(BIN)/python scripts/index.py --progress
	MEMORIES_DIR=$(SAMPLE) $(BIN)/python scripts/search.py "セッション要約の保存先" --top 3
	@echo
	MEMORIES_DIR=$(SAMPLE) $(BIN)/python scripts/search.py "how do we tune the HNSW index" --top 3

# Claude Code's CLI, for the plugin checks (skipped with a reason when npm is missing or offline).
CLAUDE := .tools/claude/node_modules/.bin/claude
$(CLAUDE):
	@if command -v npm >/dev/null 2>&1; then \
		npm install --silent --no-audit --no-fund --prefix .tools/claude @anthropic-ai/claude-code@2.1.328 \
		|| echo "note: could not install the claude CLI; the plugin checks that need it are skipped"; \
	else echo "note: npm not found; the plugin checks that need the claude CLI are skipped"; fi

# The fast tier (a few minutes): every behaviour on small inputs. test-all, which .ci/run runs, adds the
# slow tiers (pyproject.toml's markers): size and timeouts, kill -9, the plugin, the team server, end to end.
SLOW_TIERS := slow or crash or plugin or team or e2e
test: install
	$(BIN)/python -m pytest --ignore=tests/langbot -m "not ($(SLOW_TIERS))"

test-all: install $(CLAUDE)
	$(BIN)/python -m pytest --ignore=tests/langbot

# ruff and mypy take their configuration from pyproject.toml; cog checks that the reference pages' generated
# parts (tools/reference_pages.py: each script's options, the environment variables) match the code.
# commit_subjects.py: every commit since the rule began has a subject of at most 72 characters.
GENERATED := references/commands.md references/configuration.md
lint: install
	$(BIN)/ruff check src scripts tools tests integrations
	$(BIN)/mypy
	$(BIN)/cog --check -I tools $(GENERATED)
	$(BIN)/python tools/commit_subjects.py

# Write the reference pages' generated parts again after changing an option or an environment variable.
docs: install
	$(BIN)/cog -r -I tools $(GENERATED)

# The LangBot plugin: its SDK is an optional dependency group of its own.
$(BIN)/lbp: $(INSTALLED) requirements/langbot.txt
	$(PYTHON) tools/install.py $(VENV) requirements/langbot.txt
	touch $@

test-langbot: $(BIN)/lbp
	$(BIN)/python -m pytest tests/langbot

# dist/memory-search-memory-search-<version>.lbpkg: the plugin with the library it adapts.
langbot-plugin: $(BIN)/lbp
	rm -rf build/langbot-plugin && mkdir -p build dist
	cp -R integrations/langbot build/langbot-plugin
	cp -R src/memory_search build/langbot-plugin/memory_search
	rm -rf build/langbot-plugin/memory_search/faces build/langbot-plugin/memory_search/static  # only the library runs there
	find build/langbot-plugin -name __pycache__ -prune -exec rm -rf {} +
	$(BIN)/python -c "import importlib.metadata as m; print(*(r for r in m.requires('memory-search') if 'extra ==' not in r), sep='\n')" >> build/langbot-plugin/requirements.txt
	cd build/langbot-plugin && $(CURDIR)/$(BIN)/lbp build -o $(CURDIR)/dist

# LangBot itself (a pinned release in its own venv) installs the package and retrieves through it, inside
# a private network namespace (tests/langbot/e2e). Needs root and about 2.5 GB; skipped with a reason otherwise.
test-langbot-e2e: langbot-plugin
	LANGBOT_E2E=1 LANGBOT_E2E_VENV=$(CURDIR)/build/langbot-venv LANGBOT_E2E_CACHE=$(CURDIR)/build/langbot-e2e-cache \
		$(BIN)/python -m pytest -rs tests/langbot/e2e

# The graph page's and the knowledge-base page's tests drive a real headless Chromium (Debian's, over the
# DevTools protocol: no driver); without it they are skipped, saying so. fonts-noto-cjk beside it: without a
# CJK font the page's Japanese shows as boxes.
# Not part of `test`: it needs root, apt and a few hundred MB (.ci/run installs it).
browser:
	command -v chromium >/dev/null 2>&1 && fc-list :lang=ja 2>/dev/null | grep -q . \
		|| (apt-get update -qq && apt-get install -y -qq chromium fonts-noto-cjk >/dev/null)

clean:
	rm -rf $(VENV) .pytest_cache .tools build dist

# Speed on synthetic memories (about 15 minutes) and quality on the public sets.
bench: install
	$(BIN)/python tools/bench/speed.py

# Every set (the public ones, examples/eval, our questions over examples/memories, package-notes once
# `make eval-notes` has built it, the time-bound set) by mode, this tree against $(AGAINST): one table of
# nDCG@10 with the differences beyond noise marked and every set where hybrid falls below its better leg flagged,
# then the conversation, best-first and abstention figures (tools/eval/eval_all.py). Reports are kept in
# $(EVAL_WORK), so a re-run measures only what changed; EVAL_SETS=twins-ja,locomo-dev runs a subset.
EVAL ?= ../shared/eval
AGAINST ?= main
EVAL_WORK ?= /tmp/memory-search-eval-all
EVAL_SETS ?=
eval: install
	$(BIN)/python tools/eval/eval_all.py --eval $(EVAL) --notes $(NOTES_SRC)/set --work $(EVAL_WORK) --against $(AGAINST) \
		$(if $(EVAL_SETS),--sets $(EVAL_SETS))

# Each set also with questions no document of it answers (tools/eval/abstention_sets.py): per mode, the share of
# them left with no result at --min-score 0.5, the share of answerable queries keeping their right document,
# and the scores' calibration.
SETS ?= /tmp/memory-search-abstention
UNANSWERABLE = --abstain $(SETS)/unanswerable

# The package-notes set (examples/eval/package-notes): npm READMEs, queries = their descriptions.
NOTES_SRC ?= /tmp/memory-search-package-notes
eval-notes: install
	mkdir -p $(NOTES_SRC)/src
	cp examples/eval/package-notes/package.json examples/eval/package-notes/package-lock.json $(NOTES_SRC)/src/
	cd $(NOTES_SRC)/src && npm ci --ignore-scripts --no-audit --no-fund --silent
	$(BIN)/python examples/eval/package-notes/build.py $(NOTES_SRC)/src/node_modules $(NOTES_SRC)/set
	$(BIN)/python tools/eval/abstention_sets.py $(SETS) --eval $(EVAL) --notes $(NOTES_SRC)/set
	$(BIN)/python tools/eval/eval.py $(NOTES_SRC)/set --split ja $(UNANSWERABLE)/package-notes.jsonl
	$(BIN)/python tools/eval/eval.py $(NOTES_SRC)/set --split en $(UNANSWERABLE)/package-notes.jsonl

# Refit the relevance score (src/memory_search/data/relevance.json) on the development sets.
calibrate: install
	$(BIN)/python tools/eval/calibrate.py --eval $(EVAL) --notes $(NOTES_SRC)/set --write

# Time-bound questions over session summaries and minutes dated relative to today (tools/eval/time_questions.py).
TIME_SET ?= /tmp/memory-search-time-set
eval-time: install
	$(BIN)/python tools/eval/time_questions.py $(TIME_SET)
	$(BIN)/python tools/eval/eval.py $(TIME_SET) --split test --modes keyword,semantic,hybrid,keyword:no-time,semantic:no-time,hybrid:no-time
