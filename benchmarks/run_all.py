"""Run every benchmark in this folder, one after the other, in one process each.

Each ``bench_*.py`` times audit_core against a named peer in the same run and
prints the ratio; this script only runs them and stops on the first failure.
"""

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

if __name__ == "__main__":
    for script in sorted(HERE.glob("bench_*.py")):
        print(f"\n===== {script.name} =====", flush=True)
        subprocess.run([sys.executable, str(script), *sys.argv[1:]], check=True)
