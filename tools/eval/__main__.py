"""The evaluation's one entry point: `python tools/eval COMMAND [ARGS]`, COMMAND one of those below (each is also a
script of its own, tools/eval/COMMAND.py; its --help says what it does). Figures: docs/measurements.md.

  eval             one set, by mode: nDCG@10 and the rest (eval_lib.py)
  eval_all         make eval: every set, this tree against another
  calibrate        make calibrate: refit the relevance score (data/relevance.json)
  fusion_lab       replay hybrid orderings of recorded candidates, leave-one-collection-out
  abstention_sets  questions no document of a set answers
  time_questions   the time-bound set over dated sessions and minutes
  second_signal    a second embedding model as a signal for cross-lingual answers
"""

import runpy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
COMMANDS = ("eval", "eval_all", "calibrate", "fusion_lab", "abstention_sets", "time_questions", "second_signal")

if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS:
    sys.stderr.write(__doc__)
    sys.exit(0 if sys.argv[1:2] in (["-h"], ["--help"]) else 2)
sys.argv = [str(HERE / f"{sys.argv[1]}.py"), *sys.argv[2:]]
runpy.run_path(sys.argv[0], run_name="__main__")
