"""The compiled search (numba): every module here holds code that runs compiled, the constants it
freezes, and the array layouts it shares with the search's control (search/search.py and the other
modules of search/, which only start, stop and report). The compile cache is keyed by these modules'
code and what they import (lc0_rocm/jit.py), so an edit of the control code never recompiles."""
