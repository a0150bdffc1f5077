"""Benchmark of ldpopt studio's responsiveness: a design after a change (k <= 1000) and the
trade-off curve (101 eps values, k = 100), measured over real HTTP against a local server.

Each line prints the time of the studio's request (the full HTTP round trip through uvicorn:
JSON in, validation, the optimal design with both baselines, JSON out), the time of the
library's own solve for the same input in the same run (the reference: ``optimal_mechanism``
alone, resp. one ``ldpopt.sweep``), their ratio (the studio's overhead), and whether the
studio's value equals the library's.

Pairs: Dirichlet(1) from ``np.random.default_rng(k)``; eps = 2, KL; the curve spans eps 0.1..5.
Medians of ``--repeat`` runs after one warm-up request (numba's compile cache filled).

Run:  python benchmarks/bench_studio.py [--repeat 7]
Targets: design at k <= 1000 under 300 ms; the 101-point curve at k = 100 under 1 s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
import urllib.request

import numpy as np


def start_server():
    import uvicorn

    from ldpopt.studio.app import create_app

    srv = uvicorn.Server(uvicorn.Config(create_app(), host="127.0.0.1", port=0, log_level="warning"))
    threading.Thread(target=srv.run, daemon=True).start()
    while not srv.started:
        time.sleep(0.02)
    return srv, f"http://127.0.0.1:{srv.servers[0].sockets[0].getsockname()[1]}"


def post(url: str, payload: dict) -> dict:
    req = urllib.request.Request(url, json.dumps(payload).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as resp:
        return json.loads(resp.read())


def median_time(fn, repeat: int):
    fn()  # warm-up
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def row(label: str, ours: float, ref: float, same: bool) -> None:
    print(f"{label:48s} {ours * 1e3:7.1f}ms {ref * 1e3:7.1f}ms {ours / ref:6.1f}x  {same}")


def main() -> None:
    import ldpopt
    from ldpopt._validation import check_labelled_pair

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    srv, base = start_server()
    print(f"{'workload':48s} {'studio':>9s} {'library':>9s} {'ratio':>7s}  same value")
    for k in (10, 100, 1000):
        rng = np.random.default_rng(k)
        a, b = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))
        u, v, _ = check_labelled_pair(a, b, normalize=True)  # the pair as the page holds it
        req = {"p0": u.tolist(), "p1": v.tolist(), "eps": 2, "divergence": "kl"}
        ours, res = median_time(lambda req=req: post(base + "/api/design", req), args.repeat)
        ref, lib = median_time(lambda u=u, v=v: ldpopt.optimal_mechanism(u, v, 2.0), args.repeat)
        same = res["value"] == lib.value
        row(f"design, k = {k}, KL, eps = 2", ours, ref, same)
    rng = np.random.default_rng(100)
    u, v, _ = check_labelled_pair(rng.dirichlet(np.ones(100)), rng.dirichlet(np.ones(100)), normalize=True)
    req = {"p0": u.tolist(), "p1": v.tolist(), "eps_min": 0.1, "eps_max": 5, "points": 101}
    ours, res = median_time(lambda: post(base + "/api/curve", req), args.repeat)
    grid = np.linspace(0.1, 5, 101)
    ref, sw = median_time(lambda: ldpopt.sweep([u], [v], grid, progress=False), args.repeat)
    same = res["value"]["optimal"] == sw.values[0].tolist()
    row("curve, k = 100, 101 eps (optimal, binary, k-RR)", ours, ref, same)
    srv.should_exit = True


if __name__ == "__main__":
    main()
