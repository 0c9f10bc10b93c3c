#!/usr/bin/env python3
"""conformance-py: runs the scenario corpus with "py" nodes as real Python
step fragments (the default language here) and "c"/"c2" nodes through the C
host library (libftnconf), all in one flow per scenario.

    python3 runner.py --ftnconf build/ci/conformance/libftnconf.so conformance/scenarios

Prints one line per scenario and the closing line "N passed, N failed,
N skipped". Scenario format: conformance/README.md.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import math
import os
import struct
import sys

import futoin_polyglot as fp
from futoin_polyglot import AsyncSteps, FutoInError, Tool
from futoin_polyglot._futoin import fragment as _py_fragment

HOSTED = {"py", "c", "c2"}


# ---- the C host library ----

class Fragment(ctypes.Structure):
    _fields_ = [("exec", ctypes.c_void_p), ("on_error", ctypes.c_void_p), ("loop", ctypes.c_void_p),
                ("repeat", ctypes.c_void_p), ("data", ctypes.c_void_p), ("destroy", ctypes.c_void_p)]


NOW_FN = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_void_p)
MAKE_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                           ctypes.POINTER(Fragment))


def load_ftnconf(path):
    lib = ctypes.CDLL(path)
    sig = {
        "ftnconf_run_new": (ctypes.c_void_p, [ctypes.c_char_p, NOW_FN, ctypes.c_void_p]),
        "ftnconf_run_free": (None, [ctypes.c_void_p]),
        "ftnconf_node_count": (ctypes.c_size_t, [ctypes.c_void_p]),
        "ftnconf_trace": (None, [ctypes.c_void_p, ctypes.c_char_p]),
        "ftnconf_trace_count": (ctypes.c_size_t, [ctypes.c_void_p]),
        "ftnconf_trace_at": (ctypes.c_char_p, [ctypes.c_void_p, ctypes.c_size_t]),
        "ftnconf_error": (ctypes.c_char_p, [ctypes.c_void_p]),
        "ftnconf_sync_add": (None, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]),
        "ftnconf_flow_new": (ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]),
        "ftnconf_flow_count": (ctypes.c_size_t, [ctypes.c_void_p]),
        "ftnconf_flow_at": (ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_size_t]),
        "ftnconf_flow_name": (ctypes.c_char_p, [ctypes.c_void_p]),
        "ftnconf_flow_root": (ctypes.c_void_p, [ctypes.c_void_p]),
        "ftnconf_flow_outcome": (ctypes.c_char_p, [ctypes.c_void_p]),
        "ftnconf_flow_set_outcome": (None, [ctypes.c_void_p, ctypes.c_char_p]),
        "ftnconf_add_node": (None, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]),
        "ftnconf_live_fragments": (ctypes.c_long, [ctypes.c_char_p]),
        "ftnconf_register_lang": (None, [ctypes.c_char_p, MAKE_FN, ctypes.c_void_p]),
        "ftnconf_state_set_json": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]),
        "ftnconf_state_format": (None, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]),
    }
    for name, (res, args) in sig.items():
        f = getattr(lib, name)
        f.restype = res
        f.argtypes = args
    return lib


def capsule_pointer(cap):
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype = ctypes.c_char_p
    get_name.argtypes = [ctypes.py_object]
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype = ctypes.c_void_p
    get.argtypes = [ctypes.py_object, ctypes.c_char_p]
    return get(cap, get_name(cap))


# ---- values: JSON encoding -> Python, canonical text ----

def value_from_json(v):
    if isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, dict) and v:
        key, val = next(iter(v.items()))
        if key in ("str", "str16", "str32"):
            return val
        if key == "bool":
            return bool(val)
        if key in ("f32", "f64"):
            x = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}.get(val, val)
            x = float(x)
            if key == "f32" and math.isfinite(x):
                x = struct.unpack("f", struct.pack("f", x))[0]
            return x
        if key == "array":
            items = [value_from_json({val: i}) for i in v.get("items", [])]
            return bytes(items) if val in ("u8", "i8") and all(0 <= i < 256 for i in items) else items
        if key[0] in "iu":
            return int(val)
    raise ValueError(f"unsupported value {v!r}")


def fmt_float(x):
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    for prec in range(1, 18):
        s = "%.*g" % (prec, x)
        if float(s) == x:
            return s
    return repr(x)


def fmt_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return fmt_float(v)
    if isinstance(v, str):
        return v
    if isinstance(v, (bytes, bytearray)):
        return "[" + ",".join(str(b) for b in v) + "]"
    if isinstance(v, list):
        return "[" + ",".join(fmt_value(i) for i in v) + "]"
    return "<custom>"


def fmt_args(args):
    return ",".join(fmt_value(a) for a in args)


# ---- one scenario ----

class NotApplicable(Exception):
    pass


def walk_objects(v, out):
    """Pre-order over objects, keys and items in document order: the same
    node numbering as libftnconf."""
    if isinstance(v, dict):
        out.append(v)
        for item in v.values():
            walk_objects(item, out)
    elif isinstance(v, list):
        for item in v:
            walk_objects(item, out)


def find_langs(v, found):
    if isinstance(v, dict):
        if isinstance(v.get("lang"), str):
            found.add(v["lang"])
        for item in v.values():
            find_langs(item, found)
    elif isinstance(v, list):
        for item in v:
            find_langs(item, found)


def find_actions(v, name):
    if isinstance(v, dict):
        return name in v or any(find_actions(i, name) for i in v.values())
    if isinstance(v, list):
        return any(find_actions(i, name) for i in v)
    return False


class Run:
    def __init__(self, lib, text, scenario):
        self.lib = lib
        self.scenario = scenario
        self.tool = Tool(virtual_time=True)
        self._now = NOW_FN(lambda _data: self.tool.now())
        self.host = lib.ftnconf_run_new(text.encode(), self._now, None)
        if not self.host:
            raise ValueError("libftnconf cannot parse the scenario")
        nodes = []
        walk_objects(scenario, nodes)
        if len(nodes) != lib.ftnconf_node_count(self.host):
            raise ValueError("node numbering differs from libftnconf")
        self.nodes = nodes
        self.index = {id(n): i for i, n in enumerate(nodes)}
        self.flows = {}     # C conf_flow* -> python root
        self.syncs = {}
        self.keep = []
        self._make = MAKE_FN(self._make_fragment)
        lib.ftnconf_register_lang(b"py", self._make, None)
        self.errors = []

    # -- shared trace and flows --

    def trace(self, text):
        self.lib.ftnconf_trace(self.host, text.encode())

    def flow_new(self, name, root):
        cflow = self.lib.ftnconf_flow_new(self.host, name.encode(), root.binary())
        self.flows[cflow] = root
        return cflow

    def start_flow(self, cflow, steps):
        root = self.flows[cflow]
        for node in steps or []:
            self.add_node(root, cflow, node)

        def capture(as_, *args):
            self.lib.ftnconf_flow_set_outcome(cflow, ("success:" + fmt_args(args)).encode())

        def unhandled(as_, code):
            info = as_.state["error_info"]
            self.lib.ftnconf_flow_set_outcome(cflow, f"error:{code}:{info}".encode())

        root.add(capture)
        root.execute(unhandled)

    # -- the seam: a py fragment for a C parent --

    def _make_fragment(self, _host, cflow, index, out):
        try:
            node = self.nodes[index]
            cb, eh = self.callbacks(node, cflow)
            f = _py_fragment(cb, eh, self.tool)
            out[0].exec, out[0].on_error, out[0].loop, out[0].repeat, out[0].data, out[0].destroy = f
            return 0
        except Exception as e:  # never across the C frame
            self.errors.append(f"py fragment: {e!r}")
            return -1

    # -- structure: what a py parent does with a node --

    def add_node(self, as_, cflow, node):
        lang = node.get("lang", "py")
        if "copyFrom" in node:
            nodes = self.scenario.get("models", {}).get(node["copyFrom"], [])
            if self.py_model(nodes):
                # the real copy_from() of a model root made of the nodes
                model = AsyncSteps(self.tool)
                for n in nodes:
                    self.add_node(model, cflow, n)
                as_.copy_from(model)
                return
            for n in nodes:
                self.add_node(as_, cflow, n)
            return
        if lang != "py" and "parallel" not in node:
            self.lib.ftnconf_add_node(self.host, cflow, as_.binary(), self.index[id(node)])
            return
        cb, eh = self.callbacks(node, cflow) if lang == "py" else (None, None)
        label = node.get("label")
        if "parallel" in node:
            if lang != "py":
                self.lib.ftnconf_add_node(self.host, cflow, as_.binary(), self.index[id(node)])
                return
            p = as_.parallel(eh)
            for branch in node["parallel"]:
                self.add_node(p, cflow, branch)
        elif "loop" in node:
            as_.loop(cb, label)
        elif "repeat" in node:
            as_.repeat(int(node["repeat"]), cb, label)
        elif "forEach" in node:
            items = node["forEach"]
            as_.for_each(items, lambda as2, k, v: cb(as2, k, v), label)
        elif "sync" in node:
            as_.sync(self.syncs[node["sync"]], cb, eh)
        elif "successStep" in node:
            as_.success_step(*[value_from_json(v) for v in node["successStep"]])
        else:
            as_.add(cb, eh)

    def py_model(self, nodes):
        """a model Python builds alone: its nodes (branches, models copied in) are py"""
        for n in nodes:
            if "copyFrom" in n:
                if not self.py_model(self.scenario.get("models", {}).get(n["copyFrom"], [])):
                    return False
            elif n.get("lang", "py") != "py" or ("parallel" in n and not self.py_model(n["parallel"])):
                return False
        return True

    def callbacks(self, node, cflow):
        run = self
        onerror = node.get("onerror")

        def eh(as_, code):
            run.actions(as_, cflow, onerror, code=code)

        if "loop" in node:
            def cb(as_):
                run.actions(as_, cflow, node["loop"])
        elif "repeat" in node:
            def cb(as_, i):
                run.actions(as_, cflow, node.get("do"), index=i)
        elif "forEach" in node:
            items = node["forEach"]

            def cb(as_, k, v=None):
                if not isinstance(items, dict) and v is None:  # called with (as_, i) by C repeat
                    k, v = k, items[k]
                elif isinstance(items, dict) and v is None:
                    k = list(items.keys())[k]
                    v = items[k]
                run.actions(as_, cflow, node.get("do"), key=k, item=v)
        elif "successStep" in node:
            values = [value_from_json(v) for v in node["successStep"]]

            def cb(as_, *args):
                as_.success(*values)
        elif "await" in node:
            spec = node["await"]

            def cb(as_, *args):
                run.complete(as_, spec, None)
        else:
            def cb(as_, *args):
                run.actions(as_, cflow, node.get("do"), args=args)
        return cb, (eh if onerror is not None else None)

    # -- actions --

    def interpolate(self, as_, text, ctx):
        out = []
        i = 0
        while i < len(text):
            j = text.find("{", i)
            k = text.find("}", j) if j >= 0 else -1
            if j < 0 or k < 0:
                out.append(text[i:])
                break
            out.append(text[i:j])
            name = text[j + 1:k]
            if name == "args":
                out.append(fmt_args(ctx.get("args", ())))
            elif name == "code":
                out.append(ctx.get("code") or "")
            elif name == "info":
                out.append(as_.state["error_info"])
            elif name == "i" or (name == "k" and ctx.get("key") is None):
                idx = ctx.get("index")
                out.append(str(idx if idx is not None else -1))
            elif name == "k":
                out.append(str(ctx["key"]))
            elif name == "v":
                out.append(fmt_value(value_from_json(ctx["item"])) if "item" in ctx else "")
            elif name == "now":
                out.append(str(self.tool.now()))
            elif name.startswith("state."):
                out.append(self.state_text(as_, name[6:]))
            else:
                out.append("{" + name + "}")
            i = k + 1
        return "".join(out)

    def state_text(self, as_, name):
        buf = ctypes.create_string_buffer(512)
        self.lib.ftnconf_state_format(as_.binary(), name.encode(), buf, 512)
        return buf.value.decode()

    def complete(self, as_, spec, pending):
        """A completion from outside after spec['after'] ms (a timer)."""
        box = {}

        def fire():
            box.pop("h", None)
            err = spec.get("error", spec.get("reject"))
            if err is not None:
                as_._fail(err or "PromiseReject", spec.get("info"))
            else:
                vals = spec.get("success", spec.get("resolve")) or []
                as_.success(*[value_from_json(v) for v in vals])

        box["h"] = as_._defer(int(spec.get("after", 0)), fire)

        def on_cancel(_as):
            if "h" in box:
                as_._undefer(box.pop("h"))
            if pending and pending.get("text"):
                self.trace(pending["text"])

        as_.set_cancel(on_cancel)
        return box

    def actions(self, as_, cflow, actions, **ctx):
        if not actions:
            return
        cancel = {}  # the step's one cancel handler: its trace text and timer
        last = len(actions) - 1
        for n, a in enumerate(actions):
            key, v = next(iter(a.items()))
            if key == "trace":
                self.trace(self.interpolate(as_, v, ctx))
            elif key == "success":
                as_.success(*[value_from_json(x) for x in (v or [])])
            elif key == "error":
                if n == last:
                    as_.error(v, a.get("info"))  # raises: the natural Python way
                as_._fail(v, a.get("info"))
            elif key == "setTimeout":
                as_.set_timeout(int(v))
            elif key == "setCancel":
                cancel["text"] = v

                def on_cancel(_as, c=cancel):
                    if "box" in c and "h" in c["box"]:
                        as_._undefer(c["box"].pop("h"))
                    if c.get("text"):
                        self.trace(c["text"])

                as_.set_cancel(on_cancel)
            elif key == "waitExternal":
                as_.wait_external()
            elif key == "complete":
                cancel["box"] = self.complete(as_, v, cancel)
            elif key == "add":
                self.add_node(as_, cflow, v)
            elif key in ("break", "continue"):
                code = "LoopBreak" if key == "break" else "LoopCont"
                if n == last:
                    (as_.break_loop if key == "break" else as_.continue_loop)(v)
                as_._fail(code, v or "")
            elif key == "stack":
                text = v.get("on_free")
                as_.stack(int(v.get("size", 0)), (lambda _buf, t=text: self.trace(t)) if text else None)
            elif key == "state":
                # scenario state is shared by every language of the flow: it
                # lives in binary state variables (FutoInBinaryValue), not in
                # Python's own as_.state mapping
                if "set" in v:
                    self.lib.ftnconf_state_set_json(as_.binary(), v["set"].encode(),
                                                    json.dumps(v["value"]).encode())
                else:
                    self.trace(f"{v['get']}={self.state_text(as_, v['get'])}")
            elif key == "cancelRoot":
                self.flows[cflow].cancel()
            elif key == "executeRoot":
                self.flows[cflow].execute(lambda _as, code: self.trace(f"execute:{code}"))
            elif key == "newInstance":
                root = as_.new_instance()
                nf = self.flow_new(v.get("name", "instance"), root)
                self.start_flow(nf, v.get("steps"))
            else:
                raise ValueError(f"unknown action {key!r}")


def expected_outcome(o):
    if "success" in o:
        return "success:" + fmt_args([value_from_json(v) for v in o["success"]])
    if "error" in o:
        return f"error:{o['error']}:{o.get('info', '')}"
    return "none"


def run_scenario(lib, path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    sc = json.loads(text)
    langs = set()
    find_langs(sc, langs)
    if langs - HOSTED:
        raise NotApplicable(f"needs language '{sorted(langs - HOSTED)[0]}'")
    if find_actions(sc, "misuse"):
        raise NotApplicable("'misuse' calls have no Python form (bad arguments raise TypeError at the call)")
    run = Run(lib, text, sc)
    try:
        for name, d in (sc.get("sync") or {}).items():
            q = d.get("max_queue", None)
            t = d.get("type")
            if t == "mutex":
                obj = fp.Mutex(d.get("max", 1), q, tool=run.tool)
            elif t == "throttle":
                obj = fp.Throttle(d.get("max", 1), d.get("period_ms", 1000), q, tool=run.tool)
            else:
                obj = fp.Limiter(d.get("concurrent", 1), d.get("max_queue", 0) or 0, d.get("rate", 1),
                                 d.get("period_ms", 1000), d.get("burst", 0), tool=run.tool)
            run.syncs[name] = obj
            lib.ftnconf_sync_add(run.host, name.encode(), capsule_pointer(obj._sync))
        flows = sc.get("flows") or [dict(sc, name="main")]
        for fd in flows:
            root = AsyncSteps(run.tool)
            cflow = run.flow_new(fd.get("name", "main"), root)
            start_at = int(fd.get("start_at", 0))
            if "cancel_at" in fd:
                root._defer(int(fd["cancel_at"]), root.cancel)
            if start_at:
                root._defer(start_at, lambda c=cflow, s=fd.get("steps"): run.start_flow(c, s))
            else:
                run.start_flow(cflow, fd.get("steps"))
        run.tool.run()
        end = run.tool.now()

        problems = []
        err = lib.ftnconf_error(run.host).decode()
        if err:
            problems.append(f"runner: {err}")
        problems += run.errors
        got = [lib.ftnconf_trace_at(run.host, i).decode() for i in range(lib.ftnconf_trace_count(run.host))]
        want = sc.get("expect", {}).get("trace", [])
        if got != want:
            i = next((k for k in range(max(len(got), len(want)))
                      if k >= len(got) or k >= len(want) or got[k] != want[k]), 0)
            lines = [f"trace differs at entry {i}:"]
            for k in range(i, min(max(len(got), len(want)), i + 8)):
                e = want[k] if k < len(want) else "(end)"
                g = got[k] if k < len(got) else "(end)"
                lines.append(f"  {'!' if e != g else ' '} [{k}] expected {e:<32} got {g}")
            problems.append("\n".join(lines))
        expect = sc.get("expect", {})
        outcomes = expect.get("outcomes")
        for i in range(lib.ftnconf_flow_count(run.host)):
            cf = lib.ftnconf_flow_at(run.host, i)
            name = lib.ftnconf_flow_name(cf).decode()
            o = outcomes.get(name) if outcomes else (expect.get("outcome") if i == 0 else None)
            if o is None:
                continue
            want_o = expected_outcome(o)
            got_o = lib.ftnconf_flow_outcome(cf).decode()
            if got_o != want_o:
                problems.append(f"outcome of flow '{name}': expected {want_o} got {got_o}")
        if "time" in expect and expect["time"] != end:
            problems.append(f"end time: expected {expect['time']} got {end}")
        return problems
    finally:
        for root in run.flows.values():
            root._free()
        run.flows.clear()
        run.syncs.clear()
        import gc
        gc.collect()
        for tag in (b"c", b"c2"):
            live = lib.ftnconf_live_fragments(tag)
            if live:
                print(f"warning: {live} '{tag.decode()}' fragments alive", file=sys.stderr)
        lib.ftnconf_run_free(run.host)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ftnconf", required=True, help="path of libftnconf.so (the C host)")
    ap.add_argument("paths", nargs="+")
    args = ap.parse_args(argv)
    lib = load_ftnconf(args.ftnconf)
    files = []
    for p in args.paths:
        if os.path.isdir(p):
            for d, _, names in os.walk(p):
                files += [os.path.join(d, n) for n in names if n.endswith(".json")]
        else:
            files.append(p)
    passed = failed = skipped = 0
    for path in sorted(files, key=lambda p: (os.path.basename(p))):
        name = os.path.basename(path)
        try:
            problems = run_scenario(lib, path)
        except NotApplicable as e:
            skipped += 1
            print(f"n/a   {name} ({e})")
            continue
        except Exception as e:  # a broken scenario or runner bug is a failure
            problems = [f"runner exception: {e!r}"]
        if problems:
            failed += 1
            print(f"FAIL  {name}")
            for p in problems:
                print(p)
        else:
            passed += 1
            print(f"pass  {name}")
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
