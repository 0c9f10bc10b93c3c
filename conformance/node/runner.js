#!/usr/bin/env node
'use strict';

/**
 * @file conformance-js: runs the scenario corpus with "js" nodes as real JS
 * step fragments of futoin-polyglot (the default language here) and
 * "c"/"c2" nodes through the C host library (libftnconf), all in one flow per
 * scenario, in the virtual time of AsyncToolTest.
 *
 *   node conformance/node/runner.js --ftnconf build/ci/conformance/libftnconf.so conformance/scenarios
 *
 * libftnconf is reached through a small test addon (ftnconf_node.node, built
 * next to libftnconf.so by conformance/node/build.sh). Prints one line per
 * scenario and the closing line "N passed, N failed, N skipped". Scenario
 * format: conformance/README.md. The design mirrors conformance/python/runner.py.
 */

const fs = require('fs');
const path = require('path');
const v8 = require('v8');
const vm = require('vm');

const HOSTED = new Set(['js', 'c', 'c2']);
const USAGE = 'usage: node runner.js --ftnconf LIBFTNCONF.so [--addon ftnconf_node.node] ' +
    '[--package DIR] SCENARIO_OR_DIR...';

// ---- command line ----

const parseArgs = (argv) => {
    const opts = { paths: [] };
    for (let i = 0; i < argv.length; ++i) {
        const a = argv[i];
        const m = /^--(ftnconf|addon|package)(?:=(.*))?$/.exec(a);
        if (m) {
            const v = m[2] !== undefined ? m[2] : argv[++i];
            if (v === undefined) {
                throw new Error(`${a} needs a value\n${USAGE}`);
            }
            opts[m[1]] = v;
        } else if (a === '-h' || a === '--help') {
            console.log(USAGE);
            process.exit(0);
        } else {
            opts.paths.push(a);
        }
    }
    if (!opts.ftnconf || !opts.paths.length) {
        throw new Error(USAGE);
    }
    return opts;
};

/* the futoin-polyglot under test: --package, else the one installed where
 * the runner is started, else the one of this tree */
const packageDir = (opt) => {
    if (opt) {
        return path.resolve(opt);
    }
    try {
        return path.dirname(require.resolve('futoin-polyglot/package.json', { paths: [process.cwd()] }));
    } catch (e) {
        return path.resolve(__dirname, '..', '..', 'node');
    }
};

let $as;
let native;
let T; // AsyncToolTest
let F; // the addon over libftnconf

const load = (opts) => {
    const pkg = packageDir(opts.package);
    $as = require(pkg);
    native = require(path.join(pkg, 'native.js'));
    T = $as.AsyncToolTest;
    $as.installAsyncToolTest(); // roots and sync objects in virtual time
    native.virtualPeriods(true); // the periods of Throttle and Limiter too
    const lib = path.resolve(opts.ftnconf);
    const addon = path.resolve(opts.addon || path.join(path.dirname(lib), 'ftnconf_node.node'));
    if (!fs.existsSync(addon)) {
        throw new Error(`${addon} is missing: build it with ` +
            `"sh ${path.join(__dirname, 'build.sh')} <cmake build dir>"`);
    }
    const linked = path.join(path.dirname(addon), 'libftnconf.so');
    if (!fs.existsSync(lib) || !fs.existsSync(linked) || fs.realpathSync(linked) !== fs.realpathSync(lib)) {
        throw new Error(`${addon} is linked with ${linked}, not with --ftnconf ${lib}`);
    }
    F = require(addon);
    F.registerLang('js', (flow, index) => current.makeFragment(flow, index),
        (kind, id, addr, extra) => current.dispatchFragment(kind, id, addr, extra));
};

// ---- virtual time ----

const noop = () => {};

/* AsyncToolTest's clock (its events carry their deadline) */
const toolNow = () => {
    const h = T.callLater(noop, 0);
    T.cancelCall(h);
    return h.t;
};

// ---- values: JSON encoding -> JS, canonical text ----

const SAFE = BigInt(Number.MAX_SAFE_INTEGER);

const intValue = (val) => {
    const b = BigInt(val);
    return b >= -SAFE && b <= SAFE ? Number(b) : b;
};

const floatValue = (val) => {
    const x = { NaN: NaN, Infinity: Infinity, '-Infinity': -Infinity }[val];
    return x !== undefined ? x : Number(val);
};

const TYPED = {
    i8: Int8Array, i16: Int16Array, i32: Int32Array, u16: Uint16Array, u32: Uint32Array,
    f32: Float32Array, f64: Float64Array, i64: BigInt64Array, u64: BigUint64Array,
};

/* a JSON value as the JS value a JS step passes: numbers (BigInt beyond
 * 2^53), strings, booleans; u8 arrays as Buffers, other numeric arrays as
 * typed arrays, bool and string arrays as Arrays */
const valueFromJson = (v) => {
    if (v === null || typeof v !== 'object') {
        return v;
    }
    const keys = Object.keys(v);
    if (Array.isArray(v) || !keys.length) {
        throw new Error(`unsupported value ${JSON.stringify(v)}`);
    }
    const key = keys[0];
    const val = v[key];
    switch (key) {
    case 'str': case 'str16': case 'str32': return String(val);
    case 'bool': return Boolean(val);
    case 'f32': return Math.fround(floatValue(val));
    case 'f64': return floatValue(val);
    case 'array': {
        const items = (v.items || []).map((i) => valueFromJson({ [val]: i }));
        if (val === 'u8') {
            return Buffer.from(items);
        }
        if (val === 'i64' || val === 'u64') {
            return TYPED[val].from(items, (x) => BigInt(x));
        }
        return TYPED[val] ? TYPED[val].from(items) : items;
    }
    default:
        if (/^[iu](8|16|32|64)$/.test(key)) {
            return intValue(val);
        }
    }
    throw new Error(`unsupported value ${JSON.stringify(v)}`);
};

/* C's "%.<p>g" */
const fmtG = (x, p) => {
    if (x === 0) {
        return Object.is(x, -0) ? '-0' : '0';
    }
    const [mant, exps] = x.toExponential(p - 1).split('e');
    const X = Number(exps);
    const strip = (s) => (s.includes('.') ? s.replace(/\.?0+$/, '') : s);
    if (X < -4 || X >= p) {
        const ax = Math.abs(X);
        return `${strip(mant)}e${X < 0 ? '-' : '+'}${ax < 10 ? '0' : ''}${ax}`;
    }
    return strip(x.toFixed(p - 1 - X));
};

/* integers in decimal, other numbers the shortest "%g" text that reads back
 * to the same value (a FLOAT element: the same float) */
const fmtNumber = (x, isFloat) => {
    if (Number.isNaN(x)) {
        return 'NaN';
    }
    if (!Number.isFinite(x)) {
        return x > 0 ? 'Infinity' : '-Infinity';
    }
    if (!isFloat && Number.isSafeInteger(x) && !Object.is(x, -0)) {
        return String(x);
    }
    for (let p = 1; p <= 17; ++p) {
        const s = fmtG(x, p);
        const back = Number(s);
        if (isFloat ? Math.fround(back) === Math.fround(x) : back === x) {
            return s;
        }
    }
    return String(x);
};

const fmtValue = (v) => {
    switch (typeof v) {
    case 'boolean': return v ? 'true' : 'false';
    case 'bigint': return v.toString();
    case 'number': return fmtNumber(v, false);
    case 'string': return v;
    default: break;
    }
    if (v instanceof Float32Array) {
        return `[${Array.from(v, (x) => fmtNumber(x, true)).join(',')}]`;
    }
    if (Array.isArray(v) || (ArrayBuffer.isView(v) && !(v instanceof DataView))) {
        return `[${Array.from(v, fmtValue).join(',')}]`;
    }
    return '<custom>';
};

const fmtArgs = (args) => args.map(fmtValue).join(',');

const fmtInfo = (info) => (info === undefined || info === null ? '' : String(info));

// ---- what a scenario needs ----

class NotApplicable extends Error {}

/* pre-order over objects, keys and items in document order: the node
 * numbering of libftnconf */
const walkObjects = (v, out) => {
    if (Array.isArray(v)) {
        for (const i of v) {
            walkObjects(i, out);
        }
    } else if (v !== null && typeof v === 'object') {
        out.push(v);
        for (const i of Object.values(v)) {
            walkObjects(i, out);
        }
    }
};

const findLangs = (v, found) => {
    if (Array.isArray(v)) {
        v.forEach((i) => findLangs(i, found));
    } else if (v !== null && typeof v === 'object') {
        if (typeof v.lang === 'string') {
            found.add(v.lang);
        }
        Object.values(v).forEach((i) => findLangs(i, found));
    }
};

/* actions JS cannot make: NULL pointers (JS has none; bad arguments throw
 * TypeError at the call), execute()/cancel()/free() of a step (a JS step
 * interface has no such methods), and execute() of the running root (the
 * JS execute() has no error callback: a second execute() is a silent no-op) */
const noJsForm = (key, v) => {
    if (key === 'misuse') {
        return /_on_step$/.test(v) ? `misuse '${v}': a JS step interface has no ${v.split('_')[0]}()`
            : `misuse '${v}': NULL pointers have no JS form (bad arguments throw TypeError at the call)`;
    }
    if (key === 'executeRoot') {
        return 'executeRoot: execute() of a JS root has no error callback to report InternalError';
    }
    return null;
};

/* as.error(), as.break() and as.continue() throw: they end a JS callback
 * (an error caught by the callback itself is no error), so nothing can
 * follow them in one */
const RAISING = new Set(['error', 'break', 'continue']);

const checkJsForms = (sc) => {
    const nodes = (list) => {
        for (const n of list || []) {
            node(n);
        }
    };
    const actions = (list, js) => {
        const all = Array.isArray(list) ? list : [];
        all.forEach((a, n) => {
            const key = Object.keys(a)[0];
            const why = js && noJsForm(key, a[key]);
            if (why) {
                throw new NotApplicable(why);
            }
            if (js && RAISING.has(key) && n !== all.length - 1) {
                throw new NotApplicable(`'${key}' is not the last action: in JS it throws and ends the callback`);
            }
            if (key === 'add') {
                node(a.add);
            } else if (key === 'newInstance') {
                nodes(a.newInstance.steps);
            }
        });
    };
    const node = (n) => {
        const js = (n.lang || 'js') === 'js';
        actions(n.do, js);
        actions(n.onerror, js);
        actions(n.loop, js);
        nodes(n.parallel);
    };
    nodes(sc.steps);
    for (const f of sc.flows || []) {
        nodes(f.steps);
    }
    for (const m of Object.values(sc.models || {})) {
        nodes(m);
    }
};

// ---- one scenario ----

let current = null; // the Run in progress (the addon calls into it)
let nextFragId = 1;

const errorCode = (e) => (e instanceof Error ? e.message : String(e));

/* what the runner's own as.error()/break()/continue() threw */
const OWN = Symbol('ftnconf own raise');

const raiseOwn = (fn) => {
    try {
        fn();
    } catch (e) {
        if (e instanceof Error) {
            e[OWN] = true;
        }
        throw e;
    }
};

const isOwn = (e) => e instanceof Error && e[OWN] === true;

/* a JS step interface over the FutoInAsyncSteps* of a step a C parent
 * added: native.wrap() gives an AsyncSteps (add, parallel, loop, ...) over
 * it; while it has no step calls (success, setTimeout, setCancel, ...),
 * the package's own step interface class is put over the same handle */
const stepView = (addr) => {
    const w = native.wrap(addr);
    if (typeof w.success === 'function' && typeof w.setCancel === 'function') {
        return w;
    }
    return new $as.AsyncSteps.AsyncStepProtector(w, w._h);
};

class Run {
    constructor(text, scenario) {
        this.scenario = scenario;
        this.base = toolNow();
        this.host = F.runNew(text, () => this.now());
        const nodes = [];
        walkObjects(scenario, nodes);
        if (nodes.length !== F.nodeCount(this.host)) {
            throw new Error('node numbering differs from libftnconf');
        }
        this.nodes = nodes;
        this.index = new Map(nodes.map((n, i) => [n, i]));
        this.roots = new Map(); // conf_flow* -> JS root of the flows JS made
        this.syncs = {};
        this.frags = new Map(); // js fragments made for C parents
        this.errors = [];
    }

    now() {
        return toolNow() - this.base;
    }

    trace(text) {
        F.trace(this.host, text);
    }


    // -- flows --

    flowNew(name, root) {
        const cflow = F.flowNew(this.host, name, native.binary(root));
        this.roots.set(cflow, root);
        return cflow;
    }

    startFlow(cflow, steps) {
        const root = this.roots.get(cflow);
        for (const node of steps || []) {
            this.addNode(root, cflow, node);
        }
        root.add((as, ...args) => {
            F.flowSetOutcome(cflow, `success:${fmtArgs(args)}`);
        });
        // an unhandled error rejects promise(); its info is the root's
        // state.error_info, as JS code sees it
        root.promise().catch((e) => {
            F.flowSetOutcome(cflow, `error:${errorCode(e)}:${fmtInfo(root.state.error_info)}`);
        });
    }

    /* flows left waiting are cancelled, roots made by C freed, JS roots
     * left to the garbage collector */
    close() {
        for (const f of F.flows(this.host)) {
            const root = this.roots.get(f.flow);
            if (!root) {
                F.rootFree(f.root);
            } else if (f.outcome === 'none') {
                root.cancel();
            }
        }
        T.resetEvents();
        this.roots.clear();
        this.syncs = {};
        this.frags.clear();
    }

    /* a flow of the scenario: {name, steps, start_at, cancel_at} */
    scheduleFlow(fd) {
        const root = $as();
        const cflow = this.flowNew(fd.name || 'main', root);
        const startAt = Number(fd.start_at || 0);
        if (fd.cancel_at !== undefined) {
            T.callLater(() => root.cancel(), Number(fd.cancel_at));
        }
        if (startAt) {
            T.callLater(() => this.startFlow(cflow, fd.steps), startAt);
        } else {
            this.startFlow(cflow, fd.steps);
        }
    }

    /* the root of a flow: ours, or a JS view of one C made */
    rootOf(cflow) {
        const root = this.roots.get(cflow);
        if (root) {
            return root;
        }
        const f = F.flows(this.host).find((x) => x.flow === cflow);
        return native.wrap(f.root);
    }

    // -- the seam: a js fragment for a C parent --

    makeFragment(cflow, index) {
        try {
            const node = this.nodes[index];
            const { cb, eh } = this.callbacks(node, cflow);
            const id = nextFragId++;
            this.frags.set(id, { node, cb, eh });
            return id * 2 + (eh ? 1 : 0);
        } catch (e) {
            this.errors.push(`js fragment: ${e && e.stack || e}`);
            return -1;
        }
    }

    dispatchFragment(kind, id, addr, extra) {
        const fr = this.frags.get(id);
        if (!fr) {
            this.errors.push(`js fragment ${id} called after its scenario`);
            return;
        }
        const as = stepView(addr);
        try {
            switch (kind) {
            case 0: // execute(args)
                fr.cb(as, ...extra);
                break;
            case 1: // error(code): error_info as the package's own handlers get it
                as.state.error_info = F.errorInfo(addr) || undefined;
                fr.eh(as, extra);
                break;
            case 2: // loop body
                fr.cb(as);
                break;
            default: { // repeat body (forEach: the i-th item)
                const items = fr.node.forEach;
                if (items === undefined) {
                    fr.cb(as, extra);
                } else {
                    const conv = fr.items || (fr.items = convertItems(items));
                    const key = Array.isArray(conv) ? extra : Object.keys(conv)[extra];
                    fr.cb(as, key, conv[key]);
                }
            }
            }
        } catch (e) {
            // the step's own as.error()/break()/continue(): already raised
            // (a wrapped step's calls go to C at once)
            if (!isOwn(e)) {
                this.errors.push(`js fragment: ${e && e.stack || e}`);
                try {
                    as.error('InternalError', errorCode(e));
                } catch (e2) {
                    // raised
                }
            }
        }
    }

    // -- structure: what a JS parent does with a node --

    addNode(as, cflow, node, parallel = false) {
        const lang = node.lang || 'js';
        if (node.copyFrom !== undefined) {
            const nodes = (this.scenario.models || {})[node.copyFrom] || [];
            if (!parallel && this.jsModel(nodes)) {
                // the real copyFrom() of a model root made of the nodes
                const model = $as();
                for (const n of nodes) {
                    this.addNode(model, cflow, n);
                }
                as.copyFrom(model);
                return;
            }
            for (const n of nodes) {
                this.addNode(as, cflow, n, parallel);
            }
            return;
        }
        if (lang !== 'js') {
            F.addNode(this.host, cflow, native.binary(as), this.index.get(node));
            return;
        }
        const { cb, eh } = this.callbacks(node, cflow);
        const label = node.label === null ? undefined : node.label;
        if (parallel) {
            // a parallel object takes add() (and ISync.sync()); other
            // branch kinds are a branch step holding them
            if (node.sync !== undefined) {
                this.syncs[node.sync].sync(as, cb, eh);
            } else if (['parallel', 'loop', 'repeat', 'forEach', 'successStep'].some((k) => k in node)) {
                as.add((bs) => this.addNode(bs, cflow, node));
            } else {
                as.add(cb, eh);
            }
        } else if (node.parallel !== undefined) {
            const p = as.parallel(eh);
            for (const branch of node.parallel) {
                this.addNode(p, cflow, branch, true);
            }
        } else if (node.loop !== undefined) {
            as.loop(cb, label);
        } else if (node.repeat !== undefined) {
            as.repeat(Number(node.repeat), cb, label);
        } else if (node.forEach !== undefined) {
            as.forEach(convertItems(node.forEach), cb, label);
        } else if (node.sync !== undefined) {
            as.sync(this.syncs[node.sync], cb, eh);
        } else if (node.successStep !== undefined) {
            as.successStep(...node.successStep.map(valueFromJson));
        } else {
            as.add(cb, eh);
        }
    }

    /* a model JS builds alone: its nodes (branches, models copied in) are JS */
    jsModel(nodes) {
        return nodes.every((n) => {
            if (n.copyFrom !== undefined) {
                return this.jsModel((this.scenario.models || {})[n.copyFrom] || []);
            }
            return (n.lang || 'js') === 'js' && (n.parallel === undefined || this.jsModel(n.parallel));
        });
    }

    callbacks(node, cflow) {
        let cb;
        const onerror = node.onerror;
        const eh = onerror === undefined || onerror === null ? undefined : (as, code) => {
            this.actions(as, cflow, onerror, { code });
        };
        if (node.loop !== undefined) {
            cb = (as) => {
                this.actions(as, cflow, node.loop, {});
            };
        } else if (node.repeat !== undefined) {
            cb = (as, i) => {
                this.actions(as, cflow, node.do, { index: i });
            };
        } else if (node.forEach !== undefined) {
            const list = Array.isArray(node.forEach);
            const keys = list ? null : Object.keys(node.forEach);
            cb = (as, k, v) => {
                this.actions(as, cflow, node.do, { key: k, item: v, index: list ? k : keys.indexOf(k) });
            };
        } else if (node.successStep !== undefined) {
            const values = node.successStep.map(valueFromJson);
            cb = (as) => {
                as.success(...values);
            };
        } else if (node.await !== undefined) {
            cb = (as) => {
                this.complete(as, node.await, null);
            };
        } else {
            cb = (as, ...args) => {
                this.actions(as, cflow, node.do, { args });
            };
        }
        return { cb, eh };
    }

    // -- actions --

    interpolate(as, text, ctx) {
        return String(text).replace(/\{([^}]*)\}/g, (whole, name) => {
            if (name === 'args') {
                return fmtArgs(ctx.args || []);
            }
            if (name === 'code') {
                return ctx.code || '';
            }
            if (name === 'info') {
                return fmtInfo(as.state.error_info);
            }
            if (name === 'i' || (name === 'k' && ctx.key === undefined)) {
                return String(ctx.index === undefined ? -1 : ctx.index);
            }
            if (name === 'k') {
                return String(ctx.key);
            }
            if (name === 'v') {
                return 'item' in ctx ? fmtValue(ctx.item) : '';
            }
            if (name === 'now') {
                return String(this.now());
            }
            if (name.startsWith('state.')) {
                return F.stateFormat(native.binary(as), name.slice(6));
            }
            return whole;
        });
    }

    /* a completion from outside after spec.after ms (an AsyncToolTest event) */
    complete(as, spec, pending) {
        const box = {};
        const fire = () => {
            box.h = null;
            const err = spec.error !== undefined ? spec.error : spec.reject;
            try {
                if (err !== undefined && err !== null) {
                    // from outside a callback: raised at once, then thrown
                    raiseOwn(() => as.error(err || 'PromiseReject', spec.info === null ? undefined : spec.info));
                } else {
                    as.success(...(spec.success || spec.resolve || []).map(valueFromJson));
                }
            } catch (e) {
                if (!isOwn(e)) {
                    this.errors.push(`js: ${e && e.stack || e}`);
                }
            }
        };
        box.h = T.callLater(fire, Number(spec.after || 0));
        as.setCancel(() => {
            if (box.h) {
                T.cancelCall(box.h);
                box.h = null;
            }
            if (pending && pending.text) {
                this.trace(pending.text);
            }
        });
        return box;
    }

    actions(as, cflow, list, ctx) {
        if (!list) {
            return;
        }
        const cancel = {}; // the step's one cancel handler: its trace text and timer
        for (const a of list) {
            const key = Object.keys(a)[0];
            const v = a[key];
            switch (key) {
            case 'trace':
                this.trace(this.interpolate(as, v, ctx));
                break;
            case 'success':
                as.success(...(v || []).map(valueFromJson));
                break;
            case 'error': // throws: the natural JS way (always the last action)
                raiseOwn(() => as.error(v, a.info === null ? undefined : a.info));
                break;
            case 'break':
                raiseOwn(() => as.break(v === null ? undefined : v));
                break;
            case 'continue':
                raiseOwn(() => as.continue(v === null ? undefined : v));
                break;
            case 'setTimeout':
                as.setTimeout(Number(v));
                break;
            case 'setCancel':
                cancel.text = v;
                as.setCancel(() => {
                    if (cancel.box && cancel.box.h) {
                        T.cancelCall(cancel.box.h);
                        cancel.box.h = null;
                    }
                    if (cancel.text) {
                        this.trace(cancel.text);
                    }
                });
                break;
            case 'waitExternal':
                as.waitExternal();
                break;
            case 'complete':
                cancel.box = this.complete(as, v, cancel);
                break;
            case 'add':
                this.addNode(as, cflow, v);
                break;
            case 'stack':
                // JS has no stack(): the FTN12 binary one of this step
                F.stack(native.binary(as), Number(v.size || 0), v.on_free || null);
                break;
            case 'state':
                // scenario state is shared by every language of the flow: it
                // lives in binary state variables, not in the JS as.state
                if (v.set !== undefined) {
                    F.stateSet(native.binary(as), v.set, JSON.stringify(v.value));
                } else {
                    this.trace(`${v.get}=${F.stateFormat(native.binary(as), v.get)}`);
                }
                break;
            case 'cancelRoot':
                this.rootOf(cflow).cancel();
                break;
            case 'newInstance': {
                const root = as.newInstance();
                const nf = this.flowNew(v.name || 'instance', root);
                this.startFlow(nf, v.steps);
                break;
            }
            default:
                throw new Error(`unknown action ${key}`);
            }
        }
    }
}

const convertItems = (items) => {
    if (Array.isArray(items)) {
        return items.map(valueFromJson);
    }
    const out = {};
    for (const [k, x] of Object.entries(items)) {
        out[k] = valueFromJson(x);
    }
    return out;
};

const expectedOutcome = (o) => {
    if ('success' in o) {
        return `success:${fmtArgs((o.success || []).map(valueFromJson))}`;
    }
    if ('error' in o) {
        return `error:${o.error}:${o.info === undefined || o.info === null ? '' : o.info}`;
    }
    return 'none';
};

const settle = () => new Promise((resolve) => setImmediate(resolve));

let gc = null;

const runScenario = async (file) => {
    const text = fs.readFileSync(file, 'utf8');
    const sc = JSON.parse(text);
    const langs = new Set();
    findLangs(sc, langs);
    const missing = [...langs].filter((l) => !HOSTED.has(l)).sort();
    if (missing.length) {
        throw new NotApplicable(`needs language '${missing[0]}'`);
    }
    checkJsForms(sc);
    const run = new Run(text, sc);
    current = run;
    const problems = [];
    try {
        for (const [name, d] of Object.entries(sc.sync || {})) {
            const q = d.max_queue === undefined ? null : d.max_queue;
            let obj;
            if (d.type === 'mutex') {
                obj = new $as.Mutex(d.max === undefined ? 1 : d.max, q);
            } else if (d.type === 'throttle') {
                obj = new $as.Throttle(d.max === undefined ? 1 : d.max,
                    d.period_ms === undefined ? 1000 : d.period_ms, q);
            } else {
                const opt = (k, dflt) => (d[k] === undefined || d[k] === null ? dflt : d[k]);
                obj = new $as.Limiter({
                    concurrent: opt('concurrent', 1), max_queue: opt('max_queue', 0), rate: opt('rate', 1),
                    period_ms: opt('period_ms', 1000), burst: opt('burst', 0),
                });
            }
            run.syncs[name] = obj;
            F.syncAdd(run.host, name, obj._s);
        }
        for (const fd of sc.flows || [Object.assign({}, sc, { name: 'main' })]) {
            run.scheduleFlow(fd);
        }
        let events = 0;
        while (T.hasEvents()) {
            T.nextEvent();
            if (++events > 1000000) {
                problems.push('runner: the loop does not run out of work');
                break;
            }
        }
        const end = run.now();
        await settle(); // promise() rejections: the unhandled errors

        const err = F.error(run.host);
        if (err) {
            problems.push(`runner: ${err}`);
        }
        problems.push(...run.errors);
        const got = F.traces(run.host);
        const expect = sc.expect || {};
        const want = expect.trace || [];
        if (got.length !== want.length || got.some((g, k) => g !== want[k])) {
            let i = 0;
            while (i < got.length && i < want.length && got[i] === want[i]) {
                ++i;
            }
            const lines = [`trace differs at entry ${i}:`];
            for (let k = i; k < Math.min(Math.max(got.length, want.length), i + 8); ++k) {
                const e = k < want.length ? want[k] : '(end)';
                const g = k < got.length ? got[k] : '(end)';
                lines.push(`  ${e !== g ? '!' : ' '} [${k}] expected ${e.padEnd(32)} got ${g}`);
            }
            problems.push(lines.join('\n'));
        }
        const outcomes = expect.outcomes;
        F.flows(run.host).forEach((f, i) => {
            const o = outcomes ? outcomes[f.name] : (i === 0 ? expect.outcome : undefined);
            if (o === undefined || o === null) {
                return;
            }
            const wantO = expectedOutcome(o);
            if (f.outcome !== wantO) {
                problems.push(`outcome of flow '${f.name}': expected ${wantO} got ${f.outcome}`);
            }
        });
        if (expect.time !== undefined && expect.time !== end) {
            problems.push(`end time: expected ${expect.time} got ${end}`);
        }
        return problems;
    } finally {
        run.close();
        if (gc) {
            // C fragments of level-0 C nodes live in the root's memory, freed
            // when the JS root is collected
            for (let i = 0; i < 3; ++i) {
                gc();
                await settle();
            }
        }
        for (const tag of ['c', 'c2', 'js']) {
            const live = F.liveFragments(tag);
            if (live && (gc || tag !== 'js')) {
                process.stderr.write(`warning: ${live} '${tag}' fragments alive after ${path.basename(file)}\n`);
            }
        }
        current = null;
        F.runFree(run.host);
    }
};

const collect = (p, out) => {
    if (fs.statSync(p).isDirectory()) {
        for (const n of fs.readdirSync(p)) {
            const q = path.join(p, n);
            if (fs.statSync(q).isDirectory()) {
                collect(q, out);
            } else if (n.endsWith('.json')) {
                out.push(q);
            }
        }
    } else {
        out.push(p);
    }
};

const main = async (argv) => {
    let opts;
    try {
        opts = parseArgs(argv);
        load(opts);
    } catch (e) {
        console.error(e.message);
        return 2;
    }
    try {
        v8.setFlagsFromString('--expose-gc');
        gc = vm.runInNewContext('gc');
    } catch (e) {
        gc = null;
    }
    const files = [];
    for (const p of opts.paths) {
        collect(p, files);
    }
    const base = (f) => path.basename(f);
    files.sort((a, b) => (base(a) < base(b) ? -1 : base(a) > base(b) ? 1 : 0));
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    for (const file of files) {
        const name = base(file);
        let problems;
        try {
            problems = await runScenario(file);
        } catch (e) {
            if (e instanceof NotApplicable) {
                ++skipped;
                console.log(`n/a   ${name} (${e.message})`);
                continue;
            }
            problems = [`runner exception: ${e && e.stack || e}`];
        }
        if (problems.length) {
            ++failed;
            console.log(`FAIL  ${name}`);
            for (const p of problems) {
                console.log(p);
            }
        } else {
            ++passed;
            console.log(`pass  ${name}`);
        }
    }
    console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
    return failed ? 1 : 0;
};

if (require.main === module) {
    main(process.argv.slice(2)).then((code) => {
        process.exitCode = code;
    });
}

module.exports = { main, valueFromJson, fmtValue };
