'use strict';

/**
 * @file AsyncSteps for Node on the futoin-polyglot C core: the API and
 * observable behaviour of futoin-asyncsteps 2.5, with every flow run by the
 * C scheduler on Node's own loop.
 *
 * A root keeps the JS callbacks of its steps in `_fns`; C knows only their
 * indices. C calls back through the dispatchers at the bottom of this file,
 * which run the callback, turn whatever it throws into the flow's error
 * (keeping the thrown value as state.last_exception) and tell C what the
 * callback did.
 */

const N = require('./binding');
const AsyncTool = require('./AsyncTool');
const AsyncToolTest = require('./AsyncToolTest');
const { isProduction, checkFunc, checkOnError, checkLabel } = require('./common');

// what a callback did, read by C (JS_F_* in src/addon.h)
const F_ADDED = 1;
const F_WAIT = 2;
const F_DONE = 4;

const STALE = 'InternalError: Unexpected call, object is out of service';

const MODE_STEP = 0;
const MODE_REPEAT = 2;

/* add a C-known callback pair at index k of root._fns */
/* as.add(cstep): a C step from futoin-polyglot/native */
const addC = (h, step, onerror) => {
    if (onerror !== undefined && onerror !== null) {
        throw new TypeError('a C step takes its C error handler: cstep(lib, name, {onerror})');
    }
    N.addC(h, step.fn, step.onerror, step.data);
};

const isCStep = (f) => f !== null && typeof f === 'object' && typeof f.fn === 'bigint' &&
    f.constructor && f.constructor.name === 'CStep';

const setFns = (root, k, func, onerror) => {
    const fns = root._fns;
    fns[k] = func;
    fns[k + 1] = onerror;
};

const successN = (h, args) => {
    const n = args.length;
    if (n === 0) {
        N.success(h, 0);
    } else if (n <= 4) {
        N.success(h, n, args[0], args[1], args[2], args[3]);
    } else {
        N.success(h, n, Array.from(args));
    }
};

/* error(name, info) shared by roots and steps: state first, then C, then
 * throw, as futoin-asyncsteps does */
const raise = (root, h, name, error_info) => {
    const state = root.state;
    state.error_info = error_info;
    const e = new Error(name);
    state.last_exception = e;
    root._raised = e;
    root._jsErr = true;
    N.error(h, name, error_info === undefined || error_info === null ? undefined : String(error_info));
    throw e;
};

const errorCode = (e) => {
    if (e !== null && typeof e === 'object' && typeof e.message === 'string') {
        return e.message;
    }
    return String(e);
};

/* ---- loops over collections, shared by roots and steps ---- */

const forEachImpl = (asi, map_or_list, func, label) => {
    if (Array.isArray(map_or_list)) {
        const arr = map_or_list;
        asi.repeat(arr.length, (as, i) => {
            func(as, i, arr[i]);
        }, label);
    } else if (map_or_list instanceof Map) {
        const iter = map_or_list.entries();
        asi.loop((as) => {
            const next = iter.next();
            if (next.done) {
                as.break();
            }
            const [key, value] = next.value;
            func(as, key, value);
        }, label);
    } else if (map_or_list !== null && typeof map_or_list === 'object') {
        const obj = map_or_list;
        const keys = Object.keys(obj);
        asi.repeat(keys.length, (as, i) => {
            func(as, keys[i], obj[keys[i]]);
        }, label);
    } else {
        throw new TypeError('forEach() expects an Array, a Map or an object');
    }
};

/* ---- await of a promise ---- */

const awaitImpl = (asi, root, promise, onerror) => {
    if (promise === null || typeof promise !== 'object' && typeof promise !== 'function' ||
        typeof promise.then !== 'function') {
        throw new TypeError('await() expects a promise');
    }
    let step_as = undefined;
    let complete = null;
    const fail = (as, reason) => {
        const state = root.state;
        root._jsErr = true;
        if (reason instanceof Error) {
            state.last_exception = reason;
            state.error_info = undefined;
            N.error(as._h, 'PromiseReject', undefined);
        } else {
            const err = reason || 'PromiseReject';
            state.last_exception = new Error(err);
            state.error_info = undefined;
            N.error(as._h, String(err), undefined);
        }
    };
    promise.then(
        (result) => {
            if (step_as) {
                if (N.valid(step_as._h)) {
                    N.success(step_as._h, 1, result);
                }
            } else if (step_as === undefined) {
                complete = (as) => {
                    as.success(result);
                };
            }
        },
        (reason) => {
            if (step_as) {
                if (N.valid(step_as._h)) {
                    fail(step_as, reason);
                }
            } else if (step_as === undefined) {
                step_as = null;
                if (reason instanceof Error) {
                    complete = () => {
                        throw reason;
                    };
                } else {
                    complete = (as) => {
                        as.error(reason || 'PromiseReject');
                    };
                }
            }
        },
    );
    asi.add((as) => {
        if (complete) {
            complete(as);
        } else {
            step_as = as;
            as.setCancel(() => {
                if (step_as) {
                    step_as = null;
                    try {
                        promise.cancel();
                    } catch (e) {
                        // not cancellable
                    }
                }
            });
        }
    }, onerror);
};

/**
 * The interface a step callback receives (futoin-asyncsteps'
 * AsyncStepProtector). Valid while the step is active.
 */
class AsyncStepProtector {
    constructor(root, h) {
        this._root = root;
        this._h = h;
        this.state = root.state;
        this._f = 0;
        this._next = null;
    }

    add(func, onerror) {
        if (typeof func !== 'function' && isCStep(func)) {
            addC(this._h, func, onerror);
            this._f |= F_ADDED;
            return this;
        }
        checkFunc(this, func);
        checkOnError(this, onerror);
        const k = N.add(this._h, onerror !== undefined && onerror !== null);
        setFns(this._root, k, func, onerror);
        this._f |= F_ADDED;
        return this;
    }

    parallel(onerror) {
        checkOnError(this, onerror);
        const p = N.parallel(this._h, onerror !== undefined && onerror !== null);
        setFns(this._root, N.scratch[0], undefined, onerror);
        this._f |= F_ADDED;
        return new ParallelStep(this._root, p);
    }

    success(...args) {
        this._f |= F_DONE;
        successN(this._h, args);
    }

    error(name, error_info) {
        this._f |= F_DONE;
        raise(this._root, this._h, name, error_info);
    }

    setTimeout(timeout_ms) {
        if (typeof timeout_ms !== 'number') {
            throw new TypeError('setTimeout() expects milliseconds');
        }
        N.setTimeout(this._h, timeout_ms);
        this._f |= F_WAIT;
        return this;
    }

    setCancel(oncancel) {
        if (typeof oncancel !== 'function') {
            throw new TypeError('setCancel() expects a function');
        }
        const k = N.setCancel(this._h);
        this._root._fns[k] = oncancel;
        this._f |= F_WAIT;
        return this;
    }

    waitExternal() {
        N.waitExternal(this._h);
        this._f |= F_WAIT;
        return this;
    }

    copyFrom(other) {
        copyModel(this, other);
        const os = other.state;
        const s = this.state;
        for (const k in os) {
            if (s[k] === undefined) {
                s[k] = os[k];
            }
        }
        return this;
    }

    loop(func, label) {
        checkFunc(this, func);
        checkLabel(label);
        const k = N.loop(this._h, label);
        this._root._fns[k] = func;
        this._f |= F_ADDED;
        return this;
    }

    repeat(count, func, label) {
        checkFunc(this, func);
        checkLabel(label);
        if (typeof count !== 'number') {
            throw new TypeError('repeat() expects a count');
        }
        const k = N.repeat(this._h, count, label);
        this._root._fns[k] = func;
        this._f |= F_ADDED;
        return this;
    }

    forEach(map_or_list, func, label) {
        checkFunc(this, func);
        forEachImpl(this, map_or_list, func, label);
        return this;
    }

    break(label) {
        checkLabel(label);
        this._f |= F_DONE;
        const e = new Error('LoopBreak');
        this._root._raised = e;
        N.break(this._h, label);
        throw e;
    }

    continue(label) {
        checkLabel(label);
        this._f |= F_DONE;
        const e = new Error('LoopCont');
        this._root._raised = e;
        N.continue(this._h, label);
        throw e;
    }

    successStep(...args) {
        if (this._f & F_ADDED) {
            this.add((as) => {
                as.success(...args);
            });
        } else {
            this._next = args;
        }
        return this;
    }

    await(promise, onerror) {
        checkOnError(this, onerror);
        awaitImpl(this, this._root, promise, onerror);
        return this;
    }

    sync(object, func, onerror) {
        checkFunc(this, func);
        checkOnError(this, onerror);
        if (object === null || typeof object !== 'object' || typeof object.sync !== 'function') {
            throw new TypeError('sync() expects an ISync object');
        }
        object.sync(this, func, onerror);
        this._f |= F_ADDED;
        return this;
    }

    newInstance() {
        return this._root.newInstance();
    }

    isAsyncSteps() {
        return true;
    }
}

/**
 * The object parallel() returns: add() its branches.
 */
class ParallelStep {
    constructor(root, h) {
        this._root = root;
        this._h = h;
    }

    add(func, onerror) {
        if (typeof func !== 'function' && isCStep(func)) {
            addC(this._h, func, onerror);
            return this;
        }
        checkFunc(this, func);
        checkOnError(this, onerror);
        const k = N.add(this._h, onerror !== undefined && onerror !== null);
        setFns(this._root, k, func, onerror);
        return this;
    }

    error(name, error_info) {
        raise(this._root, this._h, name, error_info);
    }

    isAsyncSteps() {
        return true;
    }
}

/* a model's root-level calls, replayed by copyFrom() */
const copyModel = (target, other) => {
    const model = other._model;
    if (!model) {
        throw new TypeError('copyFrom() expects an AsyncSteps model');
    }
    for (const m of model) {
        m(target);
    }
};

/**
 * Root AsyncSteps: add steps, then execute().
 */
class AsyncSteps {
    constructor(state = null, async_tool = AsyncTool) {
        if (state === null) {
            state = function() {
                return this.state;
            };
        }
        this.state = state;
        this._fns = [];
        this._model = [];
        this._raised = null;
        this._jsErr = false;
        this._reject = null;
        this._async_tool = async_tool;
        this._h = this._newHandle(async_tool);
    }

    _newHandle(async_tool) {
        return N.rootNew(this, async_tool === AsyncToolTest);
    }

    add(func, onerror) {
        if (typeof func !== 'function' && isCStep(func)) {
            addC(this._h, func, onerror);
            this._model.push((t) => t.add(func, onerror));
            return this;
        }
        checkFunc(this, func);
        checkOnError(this, onerror);
        const k = N.add(this._h, onerror !== undefined && onerror !== null);
        setFns(this, k, func, onerror);
        this._model.push((t) => t.add(func, onerror));
        return this;
    }

    parallel(onerror) {
        checkOnError(this, onerror);
        const p = N.parallel(this._h, onerror !== undefined && onerror !== null);
        setFns(this, N.scratch[0], undefined, onerror);
        const ps = new ParallelStep(this, p);
        const branches = [];
        ps._model = branches;
        const add = ps.add;
        ps.add = function(func, eh) {
            add.call(this, func, eh);
            branches.push([func, eh]);
            return this;
        };
        this._model.push((t) => {
            const tp = t.parallel(onerror);
            for (const [f, e] of branches) {
                tp.add(f, e);
            }
        });
        return ps;
    }

    sync(object, func, onerror) {
        checkFunc(this, func);
        checkOnError(this, onerror);
        if (object === null || typeof object !== 'object' || typeof object.sync !== 'function') {
            throw new TypeError('sync() expects an ISync object');
        }
        object.sync(this, func, onerror);
        return this;
    }

    error(name, error_info) {
        const state = this.state;
        state.error_info = error_info;
        const e = new Error(name);
        state.last_exception = e;
        throw e;
    }

    copyFrom(other) {
        copyModel(this, other);
        const os = other.state;
        const s = this.state;
        for (const k in os) {
            if (!(k in s)) {
                s[k] = os[k];
            }
        }
        return this;
    }

    cancel() {
        N.cancel(this._h);
        this._model = [];
        return this;
    }

    execute() {
        this._model = [];
        N.execute(this._h);
        return this;
    }

    loop(func, label) {
        checkFunc(this, func);
        checkLabel(label);
        const k = N.loop(this._h, label);
        this._fns[k] = func;
        this._model.push((t) => t.loop(func, label));
        return this;
    }

    repeat(count, func, label) {
        checkFunc(this, func);
        checkLabel(label);
        if (typeof count !== 'number') {
            throw new TypeError('repeat() expects a count');
        }
        const k = N.repeat(this._h, count, label);
        this._fns[k] = func;
        this._model.push((t) => t.repeat(count, func, label));
        return this;
    }

    forEach(map_or_list, func, label) {
        checkFunc(this, func);
        forEachImpl(this, map_or_list, func, label);
        return this;
    }

    successStep(...args) {
        return this.add((as) => {
            as.success(...args);
        });
    }

    await(promise, onerror) {
        checkOnError(this, onerror);
        awaitImpl(this, this, promise, onerror);
        return this;
    }

    promise() {
        return new Promise((resolve, reject) => {
            this.add((as, res) => {
                resolve(res);
            });
            this._reject = reject;
            this.execute();
        });
    }

    newInstance() {
        return new AsyncSteps(null, this._async_tool);
    }

    isAsyncSteps() {
        return true;
    }
}

/* ---- dispatchers called by C ---- */

/* a step, loop body or repeat body: fn(as, ...values) */
const onStep = (root, h, k, mode, n, a0, a1, a2, a3) => {
    const fns = root._fns;
    const fn = fns[k];
    if (mode === MODE_STEP) {
        fns[k] = undefined;
    }
    const as = new AsyncStepProtector(root, h);
    try {
        switch (n) {
        case 0: fn(as); break;
        case 1: fn(as, a0); break;
        case 2: fn(as, a0, a1); break;
        case 3: fn(as, a0, a1, a2); break;
        case 4: fn(as, a0, a1, a2, a3); break;
        default: fn(as, ...a0);
        }
    } catch (e) {
        onThrow(root, as, e);
        return F_DONE;
    }
    const f = as._f;
    if (as._next !== null && !(f & (F_DONE | F_ADDED | F_WAIT))) {
        successN(h, as._next);
        return F_DONE;
    }
    return f;
};

const onThrow = (root, as, e) => {
    if (e === root._raised) {
        root._raised = null;
        return;
    }
    if (as._f & F_DONE && e instanceof Error && e.message.startsWith('InternalError')) {
        return;
    }
    root.state.last_exception = e;
    root._jsErr = true;
    as._f |= F_DONE;
    N.error(as._h, errorCode(e), undefined);
};

const onError = (root, h, k, code, info) => {
    const fn = root._fns[k];
    const state = root.state;
    if (root._jsErr) {
        root._jsErr = false;
    } else {
        state.error_info = info;
        state.last_exception = new Error(code);
    }
    if (!isProduction) {
        state.async_stack = [fn];
    }
    const as = new AsyncStepProtector(root, h);
    try {
        fn(as, code);
    } catch (e) {
        onThrow(root, as, e);
        return F_DONE;
    }
    return as._f;
};

const onCancel = (root, h, k) => {
    const fn = root._fns[k];
    try {
        fn(new AsyncStepProtector(root, h));
    } catch (e) {
        // a cancel handler cannot fail the flow any more
        process.emitWarning(`futoin-polyglot: exception in a cancel handler: ${e && e.stack || e}`);
    }
    return 0;
};

/* the flow ended with an unhandled error */
const onFinish = (root, code) => {
    const reject = root._reject;
    if (reject) {
        root._reject = null;
        reject(new Error(code));
    }
    return 0;
};

const onCall = (key) => {
    AsyncToolTest._fire(key);
    return 0;
};

N.scratch = N.init(onStep, onError, onCancel, onFinish, onCall, isProduction);

AsyncSteps.AsyncStepProtector = AsyncStepProtector;
AsyncSteps.ParallelStep = ParallelStep;

module.exports = AsyncSteps;
