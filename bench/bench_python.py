#!/usr/bin/env python3
"""futoin_polyglot (Python) benchmark against plain asyncio equivalents.

Prints, for each workload, ops/s of futoin_polyglot ("ours"), ops/s of the
asyncio equivalent ("peer") and the ratio ours/peer (median of --runs runs,
ours and peer interleaved run by run), then a memory table (tracemalloc and
RSS over 10^5 vs 10^6 steps) and the issue's targets.

    python3 bench/bench_python.py [--runs 5] [--steps 100000] [--flows 10000]
                                  [--mem-steps 1000000] [--only SECTION]
                                  [--no-isolate]

By default every workload runs in its own fresh interpreter (this script
re-executed with --child), so objects one workload leaves behind cannot slow
the next one down; --no-isolate runs everything in this process.

Run it against the installed package (``pip install ./python``) from a
directory other than python/ so the installed build is imported.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import tracemalloc

import futoin_polyglot
from futoin_polyglot import AsyncSteps, FutoInError

perf = time.perf_counter

# --------------------------------------------------------------------------
# harness
# --------------------------------------------------------------------------

_loop: "asyncio.AbstractEventLoop | None" = None


def _get_loop() -> asyncio.AbstractEventLoop:
    global _loop
    if _loop is None:
        _loop = asyncio.new_event_loop()
        asyncio.set_event_loop(_loop)
    return _loop


def _call(fn) -> float:
    """Run one measurement; fn returns the elapsed seconds it measured
    (sync functions run with no event loop running, so AsyncSteps() uses
    the thread's blocking tool; coroutine functions run on the loop)."""
    gc.collect()
    if asyncio.iscoroutinefunction(fn):
        return _get_loop().run_until_complete(fn())
    return fn()


class Pair:
    def __init__(self, section, name, ops, ours, peer_name, peer, target=None):
        self.section = section
        self.name = name
        self.ops = ops
        self.ours = ours
        self.peer_name = peer_name
        self.peer = peer
        self.target = target  # (min ratio, label) or None

    def measure(self, runs: int) -> dict:
        # one warm-up of each, then interleaved runs
        _call(self.ours)
        _call(self.peer)
        ours, peer = [], []
        for _ in range(runs):
            ours.append(self.ops / _call(self.ours))
            peer.append(self.ops / _call(self.peer))
        return {
            "section": self.section, "name": self.name, "peer_name": self.peer_name, "ops": self.ops,
            "ours": statistics.median(ours), "peer": statistics.median(peer),
            "ours_min": min(ours), "ours_max": max(ours), "peer_min": min(peer), "peer_max": max(peer),
            "target": self.target,
        }


# --------------------------------------------------------------------------
# workload bodies
# --------------------------------------------------------------------------

def _noop_step(as_):
    pass


def _success_step(as_):
    as_.success(1)


async def _coro_noop():
    return None


async def _coro_one():
    return 1


# -- peers --

def peer_call_soon_chain(n):
    async def run():
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        left = [n]

        def cb():
            left[0] -= 1
            if left[0]:
                loop.call_soon(cb)
            else:
                fut.set_result(None)

        t = perf()
        loop.call_soon(cb)
        await fut
        return perf() - t
    return run


def peer_await_chain(n):
    async def run():
        f = _coro_noop
        t = perf()
        for _ in range(n):
            await f()
        return perf() - t
    return run


def peer_sleep0_chain(n):
    async def run():
        sleep = asyncio.sleep
        t = perf()
        for _ in range(n):
            await sleep(0)
        return perf() - t
    return run


def peer_await_body_chain(n):
    async def body(i):
        return i

    async def run():
        t = perf()
        for i in range(n):
            await body(i)
        return perf() - t
    return run


def peer_tasks_sequential(n):
    async def run():
        create_task = asyncio.create_task
        t = perf()
        for _ in range(n):
            await create_task(_coro_one())
        return perf() - t
    return run


def peer_tasks_gather(n):
    async def run():
        create_task = asyncio.create_task
        t = perf()
        await asyncio.gather(*[create_task(_coro_one()) for _ in range(n)])
        return perf() - t
    return run


def peer_try_except(n, exc_factory, exc_type):
    async def bad():
        raise exc_factory()

    async def run():
        t = perf()
        for _ in range(n):
            try:
                await bad()
            except exc_type:
                pass
        return perf() - t
    return run


def peer_task_error(n):
    async def bad():
        raise FutoInError("E", "failed")

    async def run():
        create_task = asyncio.create_task
        t = perf()
        for _ in range(n):
            try:
                await create_task(bad())
            except FutoInError:
                pass
        return perf() - t
    return run


# -- ours --

def ours_root_steps_blocking(n, include_adds=True):
    def run():
        t0 = perf()
        root = AsyncSteps()
        add = root.add
        for _ in range(n):
            add(_noop_step)
        t1 = perf()
        root.run()
        t2 = perf()
        return t2 - t0 if include_adds else t2 - t1
    return run


def ours_root_steps_await(n):
    async def run():
        t = perf()
        root = AsyncSteps()
        add = root.add
        for _ in range(n):
            add(_noop_step)
        await root
        return perf() - t
    return run


def ours_inner_steps_await(n):
    """One root step adds n sub-steps from inside its callback."""
    def outer(as_):
        add = as_.add
        for _ in range(n):
            add(_noop_step)

    async def run():
        t = perf()
        await AsyncSteps().add(outer)
        return perf() - t
    return run


def ours_flows_sequential(n):
    async def run():
        t = perf()
        for _ in range(n):
            await AsyncSteps().add(_success_step)
        return perf() - t
    return run


def ours_flows_gather(n):
    async def run():
        t = perf()
        await asyncio.gather(*[AsyncSteps().add(_success_step) for _ in range(n)])
        return perf() - t
    return run


def _recover(as_, code):
    as_.success()


def _fail_error(as_):
    as_.error("E", "failed")


def _fail_raise(as_):
    raise ValueError("failed")


def ours_errors_in_flow(n, body):
    async def run():
        t = perf()
        root = AsyncSteps()
        add = root.add
        for _ in range(n):
            add(body, _recover)
        await root
        return perf() - t
    return run


def ours_flow_errors(n):
    async def run():
        t = perf()
        for _ in range(n):
            try:
                await AsyncSteps().add(_fail_error)
            except FutoInError:
                pass
        return perf() - t
    return run


def _repeat_body(as_, i):
    pass


def ours_repeat_await(n):
    async def run():
        t = perf()
        await AsyncSteps().repeat(n, _repeat_body)
        return perf() - t
    return run


def ours_repeat_blocking(n):
    def run():
        t = perf()
        AsyncSteps().repeat(n, _repeat_body).run()
        return perf() - t
    return run


def ours_loop_await(n):
    async def run():
        left = [n]

        def body(as_):
            left[0] -= 1
            if not left[0]:
                as_.break_loop()

        t = perf()
        await AsyncSteps().loop(body)
        return perf() - t
    return run


def peer_while_await(n):
    async def body():
        return None

    async def run():
        left = n
        t = perf()
        while True:
            await body()
            left -= 1
            if not left:
                break
        return perf() - t
    return run


# --------------------------------------------------------------------------
# workloads
# --------------------------------------------------------------------------

def build_pairs(a) -> "list[Pair]":
    n, f = a.steps, a.flows
    k = f"{n // 1000}k" if n % 1000 == 0 else str(n)
    kf = f"{f // 1000}k" if f % 1000 == 0 else str(f)
    chain = f"loop.call_soon chain x{k}"
    seq = "1 sequential steps"
    return [
        Pair(seq, f"{k} root steps, add+Tool.run() (blocking)", n, ours_root_steps_blocking(n),
             chain, peer_call_soon_chain(n), (5.0, ">=5x call_soon chain")),
        Pair(seq, f"{k} root steps, add+await (asyncio)", n, ours_root_steps_await(n),
             chain, peer_call_soon_chain(n), (5.0, ">=5x call_soon chain")),
        Pair(seq, f"{k} root steps, run only (adds untimed)", n, ours_root_steps_blocking(n, False),
             chain, peer_call_soon_chain(n)),
        Pair(seq, f"{k} steps added in a step, await", n, ours_inner_steps_await(n),
             chain, peer_call_soon_chain(n)),
        Pair(seq, f"{k} root steps, add+await (asyncio)", n, ours_root_steps_await(n),
             f"await coro() x{k}", peer_await_chain(n)),
        Pair("2 whole flows", f"await AsyncSteps().add(step) x{kf}", f, ours_flows_sequential(f),
             f"await create_task(coro()) x{kf}", peer_tasks_sequential(f), (2.0, ">=2x create_task+await")),
        Pair("2 whole flows", f"gather({kf} flows)", f, ours_flows_gather(f),
             f"gather({kf} create_task)", peer_tasks_gather(f)),
        Pair("3 error+recovery", f"as_.error + onerror success x{k}", n, ours_errors_in_flow(n, _fail_error),
             "try/except await coro() raising", peer_try_except(n, lambda: FutoInError("E", "failed"), FutoInError)),
        Pair("3 error+recovery", f"raise ValueError + onerror x{k}", n, ours_errors_in_flow(n, _fail_raise),
             "try/except await coro() raising", peer_try_except(n, lambda: ValueError("failed"), ValueError)),
        Pair("3 error+recovery", f"await failing flow, except x{kf}", f, ours_flow_errors(f),
             "await failing task, except", peer_task_error(f)),
        Pair("4 repeat", f"repeat({k}) awaited", n, ours_repeat_await(n),
             f"for: await body(i) x{k}", peer_await_body_chain(n)),
        Pair("4 repeat", f"repeat({k}) awaited", n, ours_repeat_await(n),
             f"for: await sleep(0) x{k}", peer_sleep0_chain(n)),
        Pair("4 repeat", f"repeat({k}) Tool.run() (blocking)", n, ours_repeat_blocking(n),
             f"for: await body(i) x{k}", peer_await_body_chain(n)),
        Pair("4 repeat", f"loop() x{k}, break_loop, awaited", n, ours_loop_await(n),
             f"while: await body() x{k}", peer_while_await(n)),
    ]


# --------------------------------------------------------------------------
# memory
# --------------------------------------------------------------------------

def _proc_kib(key: str) -> int:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return -1


def _mem_run(fn) -> dict:
    """Measure fn() under tracemalloc: growth of traced memory that stays
    after it (current) and at its highest point (peak), plus RSS growth and
    the process high-water-mark growth (which also sees C allocations)."""
    gc.collect()
    tracemalloc.reset_peak()
    cur0, _ = tracemalloc.get_traced_memory()
    rss0, hwm0 = _proc_kib("VmRSS"), _proc_kib("VmHWM")
    fn()
    gc.collect()
    cur1, peak = tracemalloc.get_traced_memory()
    return {"current": cur1 - cur0, "peak": peak - cur0,
            "rss_kib": _proc_kib("VmRSS") - rss0, "hwm_kib": _proc_kib("VmHWM") - hwm0}


def memory_rows(a) -> "list[dict]":
    big = a.mem_steps
    small = max(1, big // 10)
    loop = _get_loop()

    def repeat_blocking(n):
        return lambda: AsyncSteps().repeat(n, _repeat_body).run()

    def repeat_await(n):
        return lambda: loop.run_until_complete(ours_repeat_await(n)())

    def loop_await(n):
        return lambda: loop.run_until_complete(ours_loop_await(n)())

    def peer_await(n):
        return lambda: loop.run_until_complete(peer_await_body_chain(n)())

    def peer_sleep0(n):
        return lambda: loop.run_until_complete(peer_sleep0_chain(n)())

    fsmall = max(1, a.flows // 10)
    fbig = a.flows

    def flows(n):
        return lambda: loop.run_until_complete(ours_flows_sequential(n)())

    def tasks(n):
        return lambda: loop.run_until_complete(peer_tasks_sequential(n)())

    cases = [
        ("ours", "repeat(n), Tool.run()", repeat_blocking, small, big),
        ("ours", "repeat(n), awaited", repeat_await, small, big),
        ("ours", "loop() n times, awaited", loop_await, small, big),
        ("peer", "for: await body(i) x n", peer_await, small, big),
        ("peer", "for: await sleep(0) x n", peer_sleep0, small, big),
        ("ours", "n awaited flows", flows, fsmall, fbig),
        ("peer", "n awaited create_task", tasks, fsmall, fbig),
    ]
    tracemalloc.start()
    rows = []
    try:
        for who, name, make, n1, n2 in cases:
            make(min(n1, 1000))()  # warm-up: caches, driver, code objects
            m1 = _mem_run(make(n1))
            m2 = _mem_run(make(n2))
            rows.append({"who": who, "name": name, "n1": n1, "n2": n2, "m1": m1, "m2": m2})
    finally:
        tracemalloc.stop()
    return rows


# --------------------------------------------------------------------------
# output
# --------------------------------------------------------------------------

def _fmt_ops(x: float) -> str:
    if x >= 1e6:
        return f"{x / 1e6:7.2f}M"
    if x >= 1e3:
        return f"{x / 1e3:7.1f}k"
    return f"{x:8.0f}"


def _fmt_bytes(b: int) -> str:
    s = "-" if b < 0 else ""
    b = abs(b)
    if b >= 1 << 20:
        return f"{s}{b / (1 << 20):.1f} MiB"
    if b >= 1 << 10:
        return f"{s}{b / (1 << 10):.1f} KiB"
    return f"{s}{b} B"


def _exp(n: int) -> str:
    e = len(str(n)) - 1
    return f"10^{e}" if n == 10 ** e else str(n)


def print_results(results, mem, a):
    print()
    w = 46
    pw = 34
    hdr = f"{'workload (ours)':<{w}} {'ours ops/s':>10}  {'peer (asyncio)':<{pw}} {'peer ops/s':>10}  {'ratio':>7}  spread"
    print(hdr)
    print("-" * len(hdr))
    section = None
    for r in results:
        if r["section"] != section:
            section = r["section"]
            print(f"[{section}]")
        ratio = r["ours"] / r["peer"]
        spread = max((r["ours_max"] - r["ours_min"]) / r["ours"], (r["peer_max"] - r["peer_min"]) / r["peer"])
        print(f"  {r['name']:<{w - 2}} {_fmt_ops(r['ours']):>10}  {r['peer_name']:<{pw}} {_fmt_ops(r['peer']):>10}"
              f"  {ratio:6.2f}x  {spread * 100:4.0f}%")
    print()
    print("ops: steps, flows, errors or iterations per second; median of "
          f"{a.runs} runs; spread = (max-min)/median of the noisier side.")

    if mem:
        print()
        print("memory (tracemalloc: Python allocations only; RSS/HWM: whole process, KiB)")
        mh = (f"{'':4} {'workload':<26} {'n':>6}  {'traced kept':>11} {'traced peak':>11}"
              f" {'RSS +':>8} {'HWM +':>8}")
        print(mh)
        print("-" * len(mh))
        for r in mem:
            for n, m in ((r["n1"], r["m1"]), (r["n2"], r["m2"])):
                print(f"{r['who']:<4} {r['name']:<26} {_exp(n):>6}  {_fmt_bytes(m['current']):>11}"
                      f" {_fmt_bytes(m['peak']):>11} {m['rss_kib']:>8} {m['hwm_kib']:>8}")
            d_cur = r["m2"]["current"] - r["m1"]["current"]
            d_peak = r["m2"]["peak"] - r["m1"]["peak"]
            per = (r["m2"]["current"] - r["m1"]["current"]) / (r["n2"] - r["n1"])
            print(f"{'':4} {'  -> growth big vs small':<26} {'':>6}  {_fmt_bytes(d_cur):>11}"
                  f" {_fmt_bytes(d_peak):>11}   ({per:.1f} B kept per extra op)")

    # targets
    print()
    print("targets (from the issue):")
    for r in results:
        if r["target"]:
            need, label = r["target"]
            ratio = r["ours"] / r["peer"]
            verdict = "MET" if ratio >= need else "NOT MET"
            print(f"  {label:<26} {r['name']:<44} {ratio:6.2f}x  {verdict}")
    if mem:
        for r in mem:
            if r["who"] != "ours" or "flows" in r["name"]:
                continue
            d_cur = r["m2"]["current"] - r["m1"]["current"]
            d_peak = r["m2"]["peak"] - r["m1"]["peak"]
            d_hwm = r["m2"]["hwm_kib"]
            ok = d_cur < 64 * 1024 and d_peak < 64 * 1024 and d_hwm < 1024
            print(f"  {'no growth over ' + _exp(r['n2']) + ' steps':<26} {r['name']:<44}"
                  f" kept {_fmt_bytes(d_cur)}, peak {_fmt_bytes(d_peak)}, HWM +{d_hwm} KiB  "
                  f"{'MET' if ok else 'NOT MET'}")
        for r in mem:
            if r["who"] == "ours" and "flows" in r["name"]:
                per = (r["m2"]["current"] - r["m1"]["current"]) / (r["n2"] - r["n1"])
                print(f"  {'(info) memory per flow':<26} {r['name']:<44} {per:8.1f} B kept per finished flow"
                      f"{'  <- flows are not released' if per > 256 else ''}")


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------

def run_child(a) -> None:
    """--child: run one workload (or the memory part) and print JSON."""
    if a.child == "memory":
        print(json.dumps({"memory": memory_rows(a)}))
        return
    pair = build_pairs(a)[int(a.child)]
    print(json.dumps({"result": pair.measure(a.runs)}))


def _child_cmd(a, which: str) -> "list[str]":
    return [sys.executable, os.path.abspath(__file__), "--child", which, "--runs", str(a.runs),
            "--steps", str(a.steps), "--flows", str(a.flows), "--mem-steps", str(a.mem_steps)]


def _run_isolated(a, which: str) -> dict:
    out = subprocess.run(_child_cmd(a, which), check=True, stdout=subprocess.PIPE, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=5, help="measured runs per workload (median; default 5)")
    p.add_argument("--steps", type=int, default=100_000, help="steps/iterations/errors per workload (default 10^5)")
    p.add_argument("--flows", type=int, default=10_000, help="flows/tasks per flow workload (default 10^4)")
    p.add_argument("--mem-steps", type=int, default=1_000_000, help="steps of the big memory run (default 10^6)")
    p.add_argument("--only", default=None,
                   help="only sections whose name contains this text (e.g. 'flows', 'memory')")
    p.add_argument("--no-isolate", action="store_true", help="run every workload in this process")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.runs < 1:
        p.error("--runs must be >= 1")

    if a.child is not None:
        run_child(a)
        return 0

    print(f"futoin_polyglot {futoin_polyglot.CORE_VERSION} (ABI {futoin_polyglot.ABI_VERSION}) "
          f"from {os.path.dirname(futoin_polyglot.__file__)}")
    print(f"Python {platform.python_version()} ({platform.python_implementation()}), {platform.machine()}, "
          f"{os.cpu_count()} CPUs, {platform.platform()}")
    print(f"runs={a.runs} steps={a.steps} flows={a.flows} mem-steps={a.mem_steps} "
          f"isolate={'no' if a.no_isolate else 'yes (one interpreter per workload)'}; gc enabled")

    pairs = build_pairs(a)
    results = []
    for i, pair in enumerate(pairs):
        if a.only and a.only.lower() not in pair.section.lower():
            continue
        sys.stderr.write(f"  measuring {pair.section}: {pair.name} vs {pair.peer_name}\n")
        sys.stderr.flush()
        if a.no_isolate:
            results.append(pair.measure(a.runs))
        else:
            results.append(_run_isolated(a, str(i))["result"])
    mem = None
    if not a.only or a.only.lower() in "5 memory":
        sys.stderr.write("  measuring 5 memory\n")
        mem = memory_rows(a) if a.no_isolate else _run_isolated(a, "memory")["memory"]
    print_results(results, mem, a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
