"""The compiled board (numba): chess rules on bitboards (`rules`), the int16 move codes and their
policy indices (`move_codes`) and the input-plane encoder over positions chained in arrays (`encode`).
Below the search, which builds its tree on them, and beside it analyse's raw mode, which evaluates
games with them and never imports the search. Their compiled code is cached in the search's folder,
under the search's key (lc0_rocm/jit.py), since the search inlines it."""
