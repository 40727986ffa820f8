"""`lc0-rocm analyse --ray ADDRESS`: the same analysis on a Ray cluster (Ray Data), merged in game order.

The driver reads the input into units of games (as the local run does) and makes them a Ray Dataset,
a window of units at a time (memory stays bounded at any input size). `map_batches` runs them through
a pool of `AnalyseActor`s, one per GPU (`num_gpus=1`) or, on the CPU backend, one per CPU given
(`num_cpus=1`); each actor opens the net and backend once (`lc0_rocm.api.open_backend`) and runs
the local pipeline (`pipeline.run_raw`, or `search_mode` with `--nodes`) on UNITS_PER_CALL units at
a time (batches fill across them), returning each unit's finished games (a shard). Shards come back in any order; the driver writes them through
the same `writers.Outputs` strictly in game order (so `--resume` works the same), with plots drawn by
the actors (`--plot DIR` must be a folder every node can write: shared storage on a real cluster).

Addresses: `local` (a Ray instance started here: `ray.init()`, the test's two CPU workers), `auto`
(the cluster this node belongs to), `ray://HOST:10001` (Ray Client). Every node needs lc0-rocm
installed (`pip install 'lc0-rocm[ray,rocm]'`) and the weights file at the same path.
"""

from __future__ import annotations

import logging
import pickle
import time
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from .request import AnalyseRequest, BackendChoice

WINDOW_UNITS = 256  # units per Dataset execution
UNITS_PER_CALL = 8  # units an actor analyses in one pipeline run (full batches across them)


class AnalyseActor:
    """A loaded backend on one GPU (or CPU) of the cluster; called with batches of pickled units."""

    def __init__(self, weights, backend, backend_opts, mode, selection, top, finish_cfg, nodes):
        from ..api import open_backend
        from .work import WorkConfig

        self.ev = open_backend(weights, backend, backend_opts)
        self.work = WorkConfig(mode, selection, self.ev.net.input_format, top)
        self.finish = finish_cfg
        self.nodes = nodes
        self.searcher = None
        if nodes:
            from .search_mode import GameSearcher

            self.searcher = GameSearcher(self.ev, nodes)

    def analyse(self, units: list) -> list:
        """[(unit, its GameOutputs)] in order: the units go through the local pipeline together, so
        batches fill across them."""
        from .pipeline import RunConfig, run_raw

        done: list = []
        cfg = RunConfig(inputs=[], work=self.work, finish=self.finish, units=units)
        sink = lambda u, outs: done.append((u, outs))  # noqa: E731
        if self.searcher is None:
            run_raw(self.ev, cfg, sink)
        else:
            from .search_mode import search_units

            search_units(self.searcher, cfg, sink)
        return done

    def __call__(self, batch: dict) -> dict:
        import numpy as np

        units = [pickle.loads(blob) for blob in batch["unit"]]
        results = [pickle.dumps(pair) for pair in self.analyse(units)]
        return {"result": np.array(results, dtype=object)}


def connect(address: str, num_cpus: Optional[int] = None):
    import os
    import warnings

    os.environ.setdefault("RAY_BACKEND_LOG_LEVEL", "fatal")  # the core worker's own stderr notes
    warnings.filterwarnings("ignore", category=UserWarning, module=r"ray\..*")
    import ray

    if ray.is_initialized():
        return ray
    kw = dict(include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
    try:
        if address == "local":
            ray.init(num_cpus=num_cpus, **kw)
        else:
            ray.init(address=address, **kw)
    except (ConnectionError, ValueError, RuntimeError, TimeoutError) as e:  # no cluster there, no ray[client]
        from ..errors import Lc0RocmError, one_line

        raise Lc0RocmError(f"--ray {address}: {one_line(e)}") from None
    return ray


def actor_resources(backend: str, actors: int, cluster: dict) -> tuple[int, dict]:
    """(actors, resources per actor): one per GPU with `num_gpus=1`, or CPU actors with `num_cpus=1`."""
    gpus = int(cluster.get("GPU", 0))
    if backend != "cpu" and gpus:
        return actors or gpus, {"num_gpus": 1}
    return actors or 2, {"num_cpus": 1}


def run_on_ray(req: AnalyseRequest, progress) -> int:
    """`--ray ADDRESS`: the run of `req` (an `AnalyseRequest`) on the cluster."""
    try:
        import ray.data  # noqa: F401  (Ray Data, not only Ray)
    except ImportError:
        from ..errors import Lc0RocmError

        raise Lc0RocmError("--ray needs Ray Data: pip install 'lc0-rocm[ray]'") from None
    from .run_parts import check_read, open_outputs, summary, write_all
    from .reader import read_units
    from .work import FinishConfig

    _check_backend(req.backend)
    t0 = time.monotonic()
    mode = req.mode
    paths = req.outputs.paths()
    outputs = open_outputs(paths, mode, req.signature, req.outputs.resume, progress)
    try:
        connect(req.scale.ray, num_cpus=None)
    except BaseException:
        outputs.close()
        raise
    try:
        ctx = ray.data.DataContext.get_current()
        ctx.enable_progress_bars = False
        ctx.execution_options.preserve_order = False
        logging.getLogger("ray.data").setLevel(logging.WARNING)
        n_actors, resources = actor_resources(req.backend.name, req.scale.ray_actors, ray.cluster_resources())
        fin = FinishConfig(mode, req.top, req.outputs.wanted(), req.thresholds, req.annotator(), req.outputs.plot)
        kwargs = dict(weights=req.backend.weights, backend=req.backend.name, backend_opts=req.backend.options,
                      mode=mode, selection=req.selection, top=req.top, finish_cfg=fin, nodes=req.nodes)
        units = read_units(list(req.inputs.paths), req.inputs.format, games_per_unit=4,
                           after_game=outputs.after_game, max_games=req.max_games)
        def body():
            while True:
                window = [u for _, u in zip(range(WINDOW_UNITS), units)]
                if not window:
                    break
                _run_window(ray, window, kwargs, n_actors, resources, outputs, progress)

        if write_all(body, outputs, progress, req.max_games) == 130:
            return 130
    finally:
        if req.scale.ray == "local":
            ray.shutdown()
    check_read(progress, outputs, req.inputs.paths)
    summary(progress, time.monotonic() - t0, f"on Ray ({n_actors} actors)")
    return 0


def _check_backend(be: BackendChoice) -> None:
    """The one-line errors the actors would otherwise raise inside Ray (a traceback per actor): the
    backend name, the options string and the weights file, checked here before the cluster starts."""
    import os

    from ..backends.factory import check_backend_name, parse_backend_options
    from ..errors import NetFormatError

    check_backend_name(be.name)
    parse_backend_options(be.options)
    if be.weights and not os.path.isfile(be.weights):
        raise NetFormatError(f"No such file or directory: {be.weights}")


def _run_window(ray, window: list, kwargs: dict, n_actors: int, resources: dict, outputs, progress) -> None:
    """One Dataset over a window of units; shards written in game order as they become contiguous."""
    ds = ray.data.from_items([{"unit": pickle.dumps(u)} for u in window], override_num_blocks=len(window))
    ds = ds.map_batches(AnalyseActor, fn_constructor_kwargs=kwargs, batch_size=UNITS_PER_CALL, concurrency=n_actors,
                        batch_format="numpy", **resources)
    order = [u.first for u in window]
    pending: dict = {}
    nxt = 0
    for row in ds.iter_rows():
        unit, games = pickle.loads(row["result"])
        pending[unit.first] = (unit, games)
        while nxt < len(order) and order[nxt] in pending:
            u, g = pending.pop(order[nxt])
            outputs.write(u, g)
            progress.update(done_bytes=u.done_bytes)
            nxt += 1
    if nxt != len(order):
        from ..errors import Lc0RocmError

        raise Lc0RocmError(f"Ray returned {nxt} of {len(order)} shards")
