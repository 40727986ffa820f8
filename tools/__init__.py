"""Developer tools of the checkout (benchmarks, the lc0 match, GPU checks), run as scripts:
`python3 tools/NAME.py --help`. A package only so that the tests of a tool import it by name
(`from tools import match`); nothing in lc0_rocm imports it, and the wheel does not ship it.
"""
