"""Regenerates every golden case: runs each gen_<group>.py in this directory."""

import glob
import os
import runpy

here = os.path.dirname(os.path.abspath(__file__))
for script in sorted(glob.glob(os.path.join(here, "gen_*.py"))):
    print("running", os.path.basename(script))
    runpy.run_path(script, run_name="__main__")
