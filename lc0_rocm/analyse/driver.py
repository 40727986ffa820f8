"""One `lc0-rocm analyse` run from its request (`request.AnalyseRequest`): load the net (API) while
the GPUs open (`backends.factory.open_devices_early`), start its backend (in raw mode on its own
thread, while the pipeline reads and prepares games), open the outputs (resume) and the progress
line, and run the local pipeline (raw or search mode) or hand over to Ray.

Ctrl-C stops the run between games: the files hold whole games, the resume sidecar is saved, one
line says how to continue, and the exit code is 130.
"""

from __future__ import annotations

import time

from .pipeline import RunConfig, run_raw
from .progress import Progress
from .reader import input_size
from .request import AnalyseRequest
from .run_parts import check_read, open_outputs, summary, write_all
from .sizing import default_workers
from .work import FinishConfig, WorkConfig


def run(req: AnalyseRequest) -> int:
    mode = req.mode
    paths = req.outputs.paths()
    be = req.backend
    progress = Progress(input_size(req.inputs.paths), enabled=req.outputs.progress)
    if req.scale.ray:
        from .ray_runner import run_on_ray

        return run_on_ray(req, progress)
    from ..api import load_for_backend, open_backend
    from ..backends.factory import open_devices_early
    from .pipeline import Opening, check_batch, early_start_options, make_pool

    t0 = time.monotonic()
    workers = req.scale.workers if req.scale.workers >= 0 else default_workers(be.name, be.options)
    pool = make_pool(workers)  # the workers start up while the net loads
    devices = open_devices_early(be.name, be.options)  # and the GPUs open
    opening = None

    def start_backend(options: str, **check):
        if devices is not None:
            devices.join()
        return open_backend(net, be.name, options, check=True, **check)

    try:
        net = load_for_backend(be.weights, be.options)
        if mode == "raw":
            # the backend starts (net conversion, GPU preparation, the start-position check) on its own
            # thread while the reader reads and the workers prepare the first games; with several GPUs
            # it is open once the first is ready
            opening = Opening(lambda: start_backend(early_start_options(be.options),
                                                    check_batch=check_batch(be.batch_size)))
            evaluator = opening
        else:
            evaluator = start_backend(be.options)
    except BaseException:
        if pool is not None:
            pool.terminate()
        raise
    try:
        # on failure `finally` closes the opening
        outputs = open_outputs(paths, mode, req.signature, req.outputs.resume, progress)
        page = html_collector(req, outputs.after_game)
        work = WorkConfig(mode, req.selection, net.input_format, req.top)
        fin = FinishConfig(mode, req.top, req.outputs.wanted(), req.thresholds, req.annotator(), req.outputs.plot,
                           keep_records=page is not None)
        # search mode takes seconds a game: each game is written (and so checkpointed, writers.SAVE_INTERVAL_S) as soon as it is done
        cfg = RunConfig(list(req.inputs.paths), req.inputs.format, work, fin, be.batch_size, workers,
                        outputs.after_game, req.max_games, games_per_unit=16 if mode == "raw" else 1, pool=pool)

        def sink(unit, outs):
            outputs.write(unit, outs)
            if page is not None:
                page.add(unit, outs)
            progress.update(done_bytes=unit.done_bytes)

        def body():
            if mode == "raw":
                run_raw(evaluator, cfg, sink)
            else:
                from .search_mode import run_search_mode

                run_search_mode(evaluator, cfg, req.nodes, sink)

        try:
            code = write_all(body, outputs, progress, req.max_games)
        except BaseException:
            if opening is not None and opening.error is not None:
                outputs.discard()  # the backend never started: no output of this run is left behind
            raise
        if page is not None:
            page.write()
        if code == 130:
            return 130
    finally:
        if opening is not None:
            opening.close()
        else:
            evaluator.close()
        if pool is not None:
            pool.terminate()
    if opening is not None:
        evaluator = opening.value
    dt = time.monotonic() - t0
    check_read(progress, outputs, req.inputs.paths)
    summary(progress, dt, f"({progress.positions / max(dt, 1e-9):,.0f} positions/s), backend {evaluator.backend_name}")
    return 0


def html_collector(req: AnalyseRequest, after_game: int):
    """`--html FILE`: the collector of the page's games (with those an interrupted run wrote when it
    resumes), or None."""
    if not req.outputs.html:
        return None
    from .html_report import Collector
    from .summary import game_summary

    page = Collector(req.outputs.html, summarise=game_summary)
    if after_game:
        page.add_written(req.outputs.jsonl, list(req.inputs.paths), req.inputs.format, after_game)
    return page
