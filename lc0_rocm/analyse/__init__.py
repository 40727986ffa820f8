"""`lc0-rocm analyse`: evaluate every (or every selected) position of a game collection.

The package sits at the top of the layers, beside `lc0_rocm.commands`: it opens its net and backend
through the public API (`lc0_rocm.api.open_backend`) and, in search mode, runs the engine's search
(`lc0_rocm.search.search.Search`). One module per job:

- `request`: `AnalyseRequest`, what one run is asked to do (built by `commands/analyse.py` from the
  command line; nothing here sees argparse).
- `reader`: inputs (PGN, EPD, FEN lists, stdin) → games, split into units of work; `Selection`
  (plies, side, every N); parsing a game (in a worker) and reporting a bad one.
- `records`: the record schema (one record per position before a played move), expected scores,
  judgements (NAGs, thresholds by name) and the centipawn/mate form of a value.
- `accuracy`: lichess's win%, move accuracy and game accuracy formulas.
- `summary`: one game's summary (players, plies, accuracy, average loss, ?!/?/?? per side).
- `work`: what a worker does to a unit: parse, select and encode its positions (`prepare`), and turn
  network outputs into records (`raw_records`).
- `game_arrays`: `work`'s compiled per-game code: replay, legal moves, FEN, SAN, planes, and the records'
  policies, top moves and played ranks (the one module that imports the compiled board's rules and
  encoder; raw mode imports nothing of the search).
- `formats`: one game's records → its JSONL lines, CSV rows and annotated PGN text.
- `pipeline`: the local run: a reader stage, full batches on the backend (two in flight), a writer
  stage; worker processes for parsing/encoding and for records/formatting when asked.
- `sizing`: the default worker processes from the host's cores and the GPUs (measured rates).
- `search_mode`: `--nodes N`: the engine's search per position, one tree per game reused across moves.
- `writers`: the output files, flushed per game, and `--resume` (a sidecar with the offsets of the
  last finished game).
- `plot`: one PNG per game (White's expected score over the moves, mistakes marked).
- `html_report`: `--html FILE`, one self-contained page (games table, graphs, move lists, a board).
- `progress`: the progress bar on the terminal.
- `ray_runner`: `--ray ADDRESS`: the same work on a Ray cluster, merged in game order.
"""
