"""The benchmarks' one entry point: `python tools/bench COMMAND [ARGS]`, COMMAND one of those below (each is also
a script of its own, tools/bench/COMMAND.py; its --help says what it measures). Figures: docs/measurements.md.

  speed        make bench: search, index, export and verify speed on synthetic memories (speed_lib.py)
  scale        a real index grown to a million chunks (scale_lib.py)
  faces        MCP round trips and the HTTP API under concurrent clients (faces_lib.py)
  page         the knowledge-base page in a headless Chromium
  help         each script's --help in a fresh process
  long_query   a pasted page as the query
  time_words   reading time words in a fresh process
"""

import runpy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
COMMANDS = ("speed", "scale", "faces", "page", "help", "long_query", "time_words")

if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS:
    sys.stderr.write(__doc__)
    sys.exit(0 if sys.argv[1:2] in (["-h"], ["--help"]) else 2)
sys.argv = [str(HERE / f"{sys.argv[1]}.py"), *sys.argv[2:]]
runpy.run_path(sys.argv[0], run_name="__main__")
