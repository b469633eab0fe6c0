"""NumPy reference for the rerank greedy: Chen, Zhang & Zhou (2018), "Fast
greedy MAP inference for determinantal point process to improve
recommendation diversity", Algorithm 1, with the kernel rows computed on the
fly from the low-rank factors and adapted to the nonsymmetric kernel
L = D + V Vᵀ + B C Bᵀ (items are rows here) as package rerank computes it:
two coefficient families (the incremental LU) instead of one (Cholesky),

    a_t(x) = R(x, y) / s_y,  b_t(x) = R(y, x),  s_x ← s_x − a_t(x)·b_t(x),

R(x, y) = L_xy − Σ_{q<t} a_q(x)·b_q(y), the gain of x being q_x²·s_x and a
Schur complement s_x ≤ GreedyTol(t)·μ_x (μ_x = L_xx + Σ|a·b|) counting as
zero, as in the Go greedy.

Usage: numpy_greedy.py DIR — DIR holds inst.json (n, d, shared, tol factor,
reps, requests: candidates, quality, k) and the model's rows as raw
little-endian float64: v.bin (n×d), b.bin (n×d, absent when shared),
bc.bin (n×d: bᵀC per item), diag.bin (n). Prints JSON: the chosen items per
request and the latency distribution of one request (gathering the
candidates' rows included), p50 and p99 in microseconds of wall time and of
the thread's CPU time (steadier on a shared machine).
"""
import json
import os
import sys
import time

import numpy as np

EPS = 2.0 ** -52


def greedy(V, B, BC, diag, cand, q2, k, zero_factor):
    """Chosen candidate positions for one request."""
    Vc = V[cand]
    Bc = Vc if B is None else B[cand]
    BCc = BC[cand]
    n = len(cand)
    s = np.einsum("ij,ij->i", Vc, Vc) + diag[cand]  # L_xx (bᵀCb = 0)
    mu = s.copy()
    fa = np.empty((k, n))  # a_t(x), Chen's c_i rows
    fb = np.empty((k, n))  # b_t(x)
    live = np.ones(n, dtype=bool)
    chosen = []
    for t in range(k):
        gain = np.where(live & (s > zero_factor * (t + 1) * EPS * mu), q2 * s, -np.inf)
        j = int(np.argmax(gain))
        if not gain[j] > 0 or np.isinf(gain[j]):
            break
        chosen.append(j)
        live[j] = False
        if t == k - 1:
            break
        col = Vc @ Vc[j]  # vₓ·v_y
        row = Bc @ BCc[j]  # b_yᵀC bₓ
        rc = col - row  # L_{x,y}
        rr = col + row  # L_{y,x}
        if t:
            rc -= fb[:t, j] @ fa[:t]
            rr -= fa[:t, j] @ fb[:t]
        a = rc / s[j]
        fa[t], fb[t] = a, rr
        p = a * rr
        s -= p
        mu += np.abs(p)
    return chosen


def main():
    d_ = sys.argv[1]
    with open(os.path.join(d_, "inst.json")) as f:
        inst = json.load(f)
    n, d = inst["n"], inst["d"]

    def load(name):
        return np.fromfile(os.path.join(d_, name), dtype="<f8")

    V = load("v.bin").reshape(n, d)
    B = None if inst["shared"] else load("b.bin").reshape(n, d)
    BC = load("bc.bin").reshape(n, d)
    diag = load("diag.bin")
    reqs = [(np.array(r["candidates"]), np.array(r["quality"]) ** 2, r["k"]) for r in inst["requests"]]
    zf = inst["zero_factor"]
    out = []
    for cand, q2, k in reqs:
        out.append([int(cand[j]) for j in greedy(V, B, BC, diag, cand, q2, k, zf)])
    wall, cpu = [], []
    for _ in range(inst["reps"]):
        for cand, q2, k in reqs:
            c0, t0 = time.thread_time_ns(), time.perf_counter_ns()
            greedy(V, B, BC, diag, cand, q2, k, zf)
            t1, c1 = time.perf_counter_ns(), time.thread_time_ns()
            wall.append(t1 - t0)
            cpu.append(c1 - c0)
    wall, cpu = np.array(wall) / 1e3, np.array(cpu) / 1e3
    cfg = {}
    try:
        from threadpoolctl import threadpool_info

        cfg = threadpool_info()
    except ImportError:
        pass
    print(json.dumps({
        "chosen": out,
        "wall_us": [float(np.percentile(wall, 50)), float(np.percentile(wall, 99))],
        "cpu_us": [float(np.percentile(cpu, 50)), float(np.percentile(cpu, 99))],
        "numpy": np.__version__,
        "threadpool": cfg,
    }))


if __name__ == "__main__":
    main()
