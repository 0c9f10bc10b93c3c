'use strict';

/**
 * @file AsyncSteps for Node on the futoin-polyglot C core: the API and
 * observable behaviour of futoin-asyncsteps 2.5, with every flow run by the
 * C scheduler on Node's own loop.
 *
 * JS callbacks stay in the registry (lib/registry.js); C knows only their
 * indices. A root collects its steps in JS until execute() hands them to C
 * in one call; inside a step callback, add() and friends are queued in
 * shared memory and applied by C when the callback returns. C calls back
 * through the dispatchers at the bottom of this file, which run the
 * callback, turn whatever it throws into the flow's error (keeping the
 * thrown value as state.last_exception) and tell C what the callback did.
 */

const { AsyncResource } = require('async_hooks');
const N = require('./binding');
const reg = require('./registry');
const AsyncTool = require('./AsyncTool');
const AsyncToolTest = require('./AsyncToolTest');
const { isProduction, checkFunc, checkOnError, timerMs } = require('./common');
const NATIVE_SYNC = require('./syncobj').nativeSync;

// what a callback did, read by C (JS_F_* in src/addon.h)
const F_ADDED = 1;
const F_WAIT = 2;
const F_DONE = 4;
const F_BATCH = 128; // a batch of steps ran: BATCH more than one (JS_F_BATCH)
const F_MERGED = 256; // JS only: its one sub-step ran as part of its step (mergeInner)
const F_ITERS = 1024; // a loop body ran SH_ITER more iterations of its loop (JS_F_ITERS)
const F_AWAIT = 4096; // JS only: its await() made the step itself wait (awaitImpl)
const F_OUT = 8192; // JS only: a cancel handler's interface, its step completes no more
const F_THREW = 16384; // JS only: its callback failed (with F_DONE): its state stays until it ends
const F_YIELD = 32768; // JS only (hostCall()): the burst ends after this callback (promise() took it)

const MODE_STEP = 0;
const HOST_TEST = 8; // SH[8] bits for hostNext()/hostDone() (JS_HOST_* in src/addon.h)
const HOST_TAKE = 16;
const HOST_FINISH = 32;
const HOST_NESTED = 64;
const HOST_MORE = 512; // hostDone, nested: tell in SH_MORE whether other work is ready (await only)
const HOST_ERRORS = 2048; // hostDone, nested: take only error handlers (an error raised from outside)
const CODE_SAME = 1; // low bits of an error handler's code: the error is root._jsErr
const CODE_NUM1 = 6; // low bits of a step code: one number in reg.nums[0] (JS_CODE_NUM1)
const MODE_REPEAT_BITS = 16; // MODE_REPEAT (2) << 3 in a step code
const MODE_ERROR_BITS = 24; // an error handler: (code, error_info) in HOST_ARGS
const SH_ITER = 7; // SH_* in src/addon.h
const SH_BUDGET = 12; // the steps the burst still allows (a loop body: the iterations)
const SH_BATCH = 13;
const SH_TOUCH = 14;
const SH_MORE = 15;
const MORE_PAR_FAILED = 2; // SH_MORE: a branch failed a parallel whose handlers wait
const MORE_QUEUED = 4; // SH_MORE: the flow itself goes on later (a strand of it is queued)
const BURST = 100; // the steps a burst runs, as futoin-asyncsteps' EXEC_BURST
const REACTION_BURST = BURST; // steps that await()s' promise reactions run between two loop turns of ours
const OP_BATCH = 2; // OP_ADD, OP_FOLLOW: a batch (src/addon.h)
const DEAD_H = -2; // the handle of a batch's step that ended: never live, never CUR (-1 between callbacks)

const { FNS, FREE, ROOTS, SLOT, OP_ADD, OP_PAR, OP_PADD, OP_WAIT, OP_TIMEOUT, OP_CANCEL } = reg;
const { SH_OPS, SH_OPS_N, SH_NUM_N, OP_SUCCESS, OP_FOLLOW, OP_SYNC, THROTTLES } = reg;
const allocK = reg.allocK;
const SLOT_MASK = SLOT - 1;
let LIVE = null; // reg.LIVE, once init() ran
let GENS = null; // reg.GENS
/* a handle whose step, root or parallel object has not ended */
const isLive = (h) => LIVE[h & SLOT_MASK] === h;
/* a step interface still names its step: the handle's generation bits wrap
 * after 1024 reuses of the slot, the slot's use count does not */
const isLiveAs = (as) => {
    const h = as._h;
    return LIVE[h & SLOT_MASK] === h && GENS[h & SLOT_MASK] === as._g;
};
const queue = reg.queue;
/* reg.SH[SH_OWNER], reg.SH[SH_OWNER_BR]: who owns the burst, as
 * futoin-asyncsteps' g_burst_owner: a root handle and its branch (C sets
 * them when a flow, or a parallel branch, goes on from an event of its own;
 * src/steps.c burst_takes()): an error from outside on it goes on inside
 * that call, a step timeout inside the timer's callback */
const SH_OWNER = reg.SH_OWNER;
const SH_OWNER_BR = reg.SH_OWNER_BR;
const SH_TICKET = reg.SH_TICKET; // after a success() from outside: the ticket of its event (src/steps.c n_success)

// the handle of the step whose callback runs now (its calls are queued),
// and its root
let CUR = -1;
let CUR_ROOT = null;
let STEP_H = -1; // the step whose callback started last (stepStarts()), -1 in an error handler or after promise()
// promise() of a root inside a callback of another flow takes the burst, as
// futoin-asyncsteps' promise() takes g_burst_owner for good: the steps
// ready then go on at a later event (counted, so a callback can tell)
let STEALS = 0;
// the step whose callback cancelled its own flow: out of service from then
// on, as in futoin-asyncsteps (a number: no write barrier per step)
let CANCELLED_H = -1;
// the interface of a step whose callback failed, with a cancel handler: it
// shows the state in that handler, as futoin-asyncsteps' does until unwound
let THREW_AS = null;

const STALE = 'InternalError: Unexpected call, object is out of service';
const AFTER_SUCCESS = 'handle_error() after success()'; // the misuse's error_info in core/src/steps.c

/* as futoin-asyncsteps: inside a step, the interface of another step of
 * the same sequence is out of bounds (parallel branches are sequences of
 * their own, as the reference's branches are AsyncSteps of their own) */
const sanity = isProduction ? () => {} : (asp) => {
    if ((asp._f & F_OUT) !== 0) {
        // a cancel handler's: its step is off the stack there. The flow
        // ends or unwinds anyway: its state keeps the error it unwinds
        throw new Error('InternalError');
    }
    checkActiveAs(asp);
    if (CUR_ROOT === asp._root && CUR_ROOT !== null) {
        if ((asp._h !== CUR || (asp._f & F_MERGED) !== 0) && N.rootId(asp._h) === N.rootId(CUR)) {
            const e = stateError(CUR_ROOT.state, signalError('InternalError'), 'Invalid call (sanity check)', true);
            deferRaise(CUR_ROOT, e, RAISE_ERROR, 'InternalError', 'Invalid call (sanity check)');
            throw e;
        }
    } else if (asp._h !== CUR && !asp._root._foreign && ((asp._f & (F_AWAIT | F_MERGED)) !== 0 ||
        (asp._f & F_ADDED) !== 0 && !N.isTop(asp._h))) {
        // from outside its flow, while its sub-steps run: the flow fails
        // where it is, as futoin-asyncsteps' root.error() from an event (a
        // parallel branch where that branch is: the reference runs it as a
        // root of its own)
        rootError(asp._root, 'InternalError', 'Invalid call (sanity check)', N.inBranch(asp._h) ? asp._h : undefined);
    }
};

// root-level operations kept in JS until execute(): an add() without
// onerror is its function alone (one entry, and a run of them is the batch
// itself), any other is three entries: Q_*, then two values
const Q_ADD = 0;
const Q_PAR = 1;
const Q_CALL = 2; // needs a C root: fn(root) on it at execute(), or copy(target) for copyFrom()

const hasEh = (onerror) => !!onerror; // any falsy value is none, as in futoin-asyncsteps

/* as.add(cstep): a C step from futoin-polyglot/native */
const isCStep = (f) => f !== null && typeof f === 'object' && typeof f.fn === 'bigint' &&
    f.constructor !== undefined && f.constructor.name === 'CStep';

/* a C step's error handler: its C one (cstep(lib, name, {onerror})) or a
 * JS one given to add(), not both */
const checkCEh = (owner, step, onerror) => {
    if (hasEh(onerror)) {
        checkOnError(owner, onerror);
        if (step.onerror) {
            throw new TypeError('a C step takes one error handler: a JS one here, or a C one as ' +
                'cstep(lib, name, {onerror})');
        }
    }
};

const addC = (h, step, onerror) => {
    if (hasEh(onerror)) {
        // the C function gets its own data; the handler is a JS one
        N.addC(h, step.fn, 0n, step.data, register(undefined, onerror));
    } else {
        N.addC(h, step.fn, step.onerror, step.data);
    }
};

/* a JS callback pair, registered: its index */
const register = (func, onerror) => {
    const k = allocK();
    FNS[k] = func;
    FNS[k + 1] = onerror;
    return k;
};

/* a flow completed from outside goes on in a setImmediate() of its own, as
 * futoin-asyncsteps' callImmediate() per completion: behind the callbacks
 * queued before, with microtasks and nextTicks between it and another flow
 * resumed in the same event; the last one runs whatever else is ready */
const resumeFlow = (root, ticket) => {
    reg.reactionSteps = 0; // a loop turn of ours
    const last = reg.immediateRuns();
    let again = false;
    // the strand the ticket is owed to: nothing when it went on meanwhile
    // or its branch was cancelled (the reference's immediate finds nothing)
    if (root._running && root._h !== undefined && N.resumeNow(root._h, ticket)) {
        runAlone(root._test, HOST_MORE);
        const more = reg.SH[SH_MORE];
        if ((more & MORE_PAR_FAILED) !== 0) {
            parallelHandlersNow(root);
            again = resumeLater(root); // what its handlers left
        } else if ((more & MORE_QUEUED) !== 0) {
            // its parallel ended, its burst was used up: the rest in a
            // callImmediate() of its own there too
            again = resumeLater(root);
        }
    }
    if (!again && last) {
        N.runNow(true); // whatever else is ready
    }
    reg.sweep();
};

/* the ticket of the event JS owes now to the strands of root's flow queued
 * with no turn on their way (claimQueued()); 0: none */
const claimTicket = (root) => (root._running ? N.claimQueued(root._h) : 0);

/* those strands go on in a setImmediate() of their own, as
 * futoin-asyncsteps' callImmediate(); false when there were none */
const resumeLater = (root) => {
    const ticket = claimTicket(root);
    if (ticket !== 0) {
        reg.queueImmediate(resumeFlow, root, ticket);
    }
    return ticket !== 0;
};

/* the strands of root that `ticket` names go on in a setImmediate() of
 * their own queued now (a completion from outside: the event C owes
 * them); with none, whatever is ready goes on in our shared turn */
const resumeOwed = (root, ticket) => {
    if (ticket !== 0) {
        reg.queueImmediate(resumeFlow, root, ticket);
    } else {
        reg.armImmediate();
    }
};

/* root's strands queued with no turn on their way (resumeLater()), else
 * anything ready in our shared turn */
const goOnLater = (root) => resumeOwed(root, claimTicket(root));

const SUCCESS_OUTSIDE = 1 << 30; // N.success(): the count's flag of a success() from outside (src/steps.c)

/* queueable: h is the step whose callback runs or just returned; root: its
 * root, when completed from outside */
const successN = (h, args, queueable, root) => {
    if (queueable && reg.queueSuccess(h, args)) {
        return;
    }
    const n = args.length;
    // SUCCESS_OUTSIDE: from outside its callback, which may run still (a
    // flow executed there completed it: C leaves the rest to a later event)
    const o = queueable ? 0 : SUCCESS_OUTSIDE;
    if (n === 0) {
        N.success(h, o);
    } else if (n <= 4) {
        N.success(h, n | o, args[0], args[1], args[2], args[3]);
    } else {
        N.success(h, n | o, Array.from(args));
    }
    if (queueable) {
        return;
    }
    if (root !== undefined && !root._test && !root._foreign) {
        reg.queueImmediate(resumeFlow, root, reg.SH[SH_TICKET]);
    } else {
        reg.armImmediate(); // from outside: the flow goes on as after callImmediate()
    }
};

/* the error JS raises on step h: C keeps the code and info it last saw
 * the same as the root's _jsErr and _jsInfo (src/steps.c jerr_set) */
const errorInC = (root, h, code, info) => {
    root._jsErr = code;
    root._jsInfo = info;
    keepAsyncStack(root);
    N.error(h, code, info);
};

/* on an error, handled or not, state.async_stack shows the step functions
 * run so far, as futoin-asyncsteps' _handle_error() */
const keepAsyncStack = (root) => {
    if (isProduction) {
        root.state.async_stack = NO_EXEC_STACK;
    } else if (root._es !== undefined) {
        root.state.async_stack = root._es;
    }
};

/* production mode keeps no step functions; handlers that pass async_stack
 * on still find an empty one, as futoin-asyncsteps' stand-in */
const NO_EXEC_STACK = Object.freeze(new class {
    push() {}

    get length() {
        return 0;
    }

    set length(l) {}
}());

/* the Error that error() throws: its stack starts at the caller of `top`
 * (the error() called), not in the engine. In production mode it has no
 * frames: V8 summarizes every optimized frame it walks (the user's step is
 * often inlined into the engine's), which costs several times the rest of
 * the error path */
const signalError = (name, top) => {
    const limit = Error.stackTraceLimit;
    if (typeof limit !== 'number' || !(limit > 0)) {
        return new Error(name);
    }
    let e;
    let frozen = false;
    try {
        // not a number: V8 walks no frame at all for the Error itself (0
        // still summarizes this optimized frame) and leaves it no stack,
        // which captureStackTrace() gives it next (production: the message alone)
        Error.stackTraceLimit = isProduction ? 0 : undefined;
    } catch {
        frozen = true; // frozen intrinsics: the limit stays, and so do the frames
    }
    try {
        e = new Error(name);
    } finally {
        if (!frozen) {
            Error.stackTraceLimit = limit;
        }
    }
    if (!isProduction || frozen) {
        Error.captureStackTrace(e, top || signalError);
    }
    return e;
};

/* what error(name, info) leaves in the state, as futoin-asyncsteps: the
 * Error it throws (last_exception only when raised at once, from outside a
 * callback; inside one it is set when the Error leaves the callback) */
const stateError = (state, e, error_info, deferred) => {
    state.error_info = error_info;
    if (!deferred) {
        state.last_exception = e;
    }
    return e;
};

// root._raised when no error() is on its way out of a callback (null is a
// value user code may throw)
const NOT_RAISED = Object.freeze({});
const RAISE_ERROR = 0;
const RAISE_BREAK = 1;
const RAISE_CONT = 2;
const LOOP_BREAK = 'LoopBreak'; // the codes break() and continue() raise
const LOOP_CONT = 'LoopCont';

/* inside a callback an error takes effect when its exception leaves the
 * callback (a step may catch its own error() and go on, as in
 * futoin-asyncsteps) */
const deferRaise = (root, e, kind, code, info) => {
    root._raised = e;
    root._raiseKind = kind;
    root._raiseCode = code;
    root._raiseInfo = info;
};

/* break()/continue() raised on step h: the cancel handlers on the way hear
 * of it as the root's error, which the state keeps out (the error handlers
 * see it as last_exception, onError()) */
const loopCtlInC = (root, h, kind, label, e) => {
    root._jsErr = kind === RAISE_BREAK ? LOOP_BREAK : LOOP_CONT;
    root._jsInfo = undefined;
    root._loopE = e;
    keepAsyncStack(root); // set by every error, LoopBreak and LoopCont too, as futoin-asyncsteps
    if (kind === RAISE_BREAK) {
        N.break(h, label);
    } else {
        N.continue(h, label);
    }
};

/* a call on the interface of a step that ended throws, state untouched */
const checkActive = (h) => {
    if (h !== CUR ? !isLive(h) : h === CANCELLED_H) {
        throw new Error(STALE);
    }
};

/* success()/error() from outside its callback on a step completed already
 * from outside, cancelled, or ended (production too: never another step of
 * the slot) */
const outOfService = (as) => as._h !== CUR && ((as._f & (F_DONE | F_OUT)) !== 0 || !isLiveAs(as));

/* the interface of an outer step, used inside a callback of its own flow
 * while its sub-steps run: its setCancel() and waitExternal() change nothing
 * there, as in futoin-asyncsteps, which has no check on them */
const outerInFlow = (as) => CUR_ROOT === as._root &&
    ((as._f & F_MERGED) !== 0 || (as._h !== CUR && !N.isTop(as._h)));

/* inside its callback after its success() or its root's cancel(): out of
 * service for error(), setTimeout(), successStep(), await(), break(),
 * continue(), as in futoin-asyncsteps, in production mode too (after a
 * success(), a second success() and add() fail the flow instead) */
const cancelledInCallback = (as) => as._h === CUR && as._h === CANCELLED_H;
const endedInCallback = (as) => cancelledInCallback(as) || (as._h === CUR && (as._f & F_DONE) !== 0);

/* add() and the loops after success() in the callback: out of service, as
 * futoin-asyncsteps' sanity check throws before it checks the arguments */
const checkNotEnded = (as) => {
    if (endedInCallback(as)) {
        throw new Error(STALE);
    }
};

/* a call from outside on a step whose sub-steps run, not added through
 * this interface: an error from outside ran its handler, which added steps */
const movedOn = (as) => as._h !== CUR && (as._f & F_ADDED) === 0 && as._root._ehAdded !== 0 &&
    N.runsSubsteps(as._h);

const checkActiveAs = (as) => {
    if (as._h !== CUR ? !isLiveAs(as) : as._h === CANCELLED_H) {
        throw new Error(STALE);
    }
};

/* error_info for C: as a string, even when its conversion throws (the
 * state keeps the value itself, as futoin-asyncsteps) */
const infoArg = (error_info) => {
    if (error_info === undefined || error_info === null) {
        return undefined;
    }
    try {
        return String(error_info);
    } catch (e) {
        return '[object]';
    }
};

/* error(name, info) of a step: state first, then the caller throws e, as
 * futoin-asyncsteps does; from outside a callback the error is raised at
 * once. (A function that always throws never returns to V8's tiering
 * check, so it stays in the interpreter: the work is here, the throw is in
 * the caller.) */
const raise = (root, h, name, error_info, e) => {
    checkActive(h);
    stateError(root.state, e, error_info, h === CUR);
    if (h === CUR) {
        // the handlers get the thrown Error's message, as in futoin-asyncsteps
        deferRaise(root, e, RAISE_ERROR, e.message, infoArg(error_info));
    } else {
        errorInC(root, h, name, infoArg(error_info));
        errorsNow(root);
    }
    return e;
};

/* a success() from outside completed the running root's last step: its
 * flow ends now, as in futoin-asyncsteps (the root is idle again); true
 * when it did (drainFin() tells the root) */
const finishDone = (root) => CUR_ROOT !== root && !root._foreign && root._h !== undefined &&
    N.finishDone(root._h);

/* root's _running as it is now: runs that ended (drainFin()), and a flow
 * ended by finishDone() */
const settle = (root) => {
    reg.drainFin();
    if (root._running && finishDone(root)) {
        reg.drainFin();
    }
};

/* error from outside on the step the running root's flow waits at that JS
 * does not know (a C step, a sync object's queue), or (at: a handle) at
 * the step the sequence of step `at` waits at: whether raised */
const failWaiting = (root, code, error_info, at) => {
    if (root._foreign || root._h === undefined) {
        return false;
    }
    const info = infoArg(error_info);
    if (!N.failWaiting(root._h, code, info, at)) {
        return false;
    }
    root._jsErr = code;
    root._jsInfo = info;
    keepAsyncStack(root);
    return true;
};

/* root.error(name, error_info); at: the handle of a step in a parallel
 * branch whose sequence fails instead of the flow's */
const rootError = (root, name, error_info, at) => {
    settle(root); // a run that ended leaves a handle that is gone
    // inside a callback of its own flow the thrown Error fails the step
    // that runs, as in futoin-asyncsteps, not the one that waits
    const mine = CUR_ROOT === root;
    const h = mine ? undefined : takeWaiting(root);
    // in a parallel branch: failWaiting() fails the parallel step (with
    // `at`, that branch's waiting step), as futoin-asyncsteps runs each
    // branch as a root of its own
    if (h !== undefined && !N.inBranch(h)) {
        // as futoin-asyncsteps: the running flow fails at its waiting step
        throw raise(root, h, name, error_info, signalError(name, AsyncSteps.prototype.error));
    }
    const failed = root._running && !mine && failWaiting(root, name, error_info, at);
    if (root._running && !mine && !failed && (root._foreign || !N.goesOnLater(root._h))) {
        // a callback of the flow runs (a nested execute()): the error
        // fails nothing, the running flow's state stays its own
        throw new Error(name);
    }
    const e = stateError(root.state, signalError(name, AsyncSteps.prototype.error), error_info, mine);
    if (!root._running) {
        // as futoin-asyncsteps: the queued steps are dropped, the
        // state shows the (last run's) executed steps
        root._ops = [];
        root._slow = false;
        root.state.async_stack = root._exec_stack;
    } else if (failed) {
        errorsNow(root); // failWaiting() failed its waiting step
    } else if (!mine) {
        // its next step waits for a later turn: as futoin-asyncsteps,
        // the error cancels the flow (no handler runs)
        root.cancel();
    }
    throw e;
};

/* root's step that waits for an event (taken: it waits no more), else undefined */
const takeWaiting = (root) => {
    const h = root._waitH;
    root._waitH = undefined;
    // a handler may have moved it on (an await() rejected, a step timeout)
    return root._running && h !== undefined && h !== CUR && isLive(h) && N.waiting(h) ? h : undefined;
};

/* step h completes from outside: no longer the root's waiting step */
const doneWaiting = (root, h) => {
    if (root._waitH === h) {
        root._waitH = undefined;
    }
    dropToolTimeout(h);
};

/* ---- step timeouts on another event tool ----
 * As futoin-asyncsteps sets every step timeout with its root's event tool,
 * callLater() of a custom tool (new AsyncSteps(state, tool)), of a replaced
 * AsyncTool.callLater(), or of AsyncTool while the global setTimeout() is a
 * fake one (node:test mock.timers, @sinonjs/fake-timers, Jest's fake
 * timers) sets them here: the C scheduler's timers keep real time. A
 * wrapper of Node's own timers (an instrumenting agent) changes nothing. */
const NODE_SET_TIMEOUT = require('timers').setTimeout;
const NODE_CLEAR_TIMEOUT = require('timers').clearTimeout; // not the global: a fake one knows no Node timer
const CALL_LATER = AsyncTool.callLater;
const CANCEL_CALL = AsyncTool.cancelCall;
const NO_CANCEL = () => {};
// Node's Timeout class, learnt once timers look mocked (a timer set at load
// would arm Node's timers handle early: a JS timer due after a step timeout
// could then run before it in a loop turn that came late)
let NodeTimeout = null;
const nodeTimeoutClass = () => {
    if (NodeTimeout === null) {
        const t = NODE_SET_TIMEOUT(NO_CANCEL, 0);
        NODE_CLEAR_TIMEOUT(t);
        NodeTimeout = t.constructor;
    }
    return NodeTimeout;
};

// step handle -> its timeout on an event tool: [handle, tool, step interface]
const TOOL_TIMEOUTS = new Map();

/* a check of the global timer function `name`: whether it is a fake one
 * (its timers are no Node Timeout; a wrapper of Node's own, as an
 * instrumenting agent installs, changes nothing), asked once per function */
const fakeTimerCheck = (name, clearName, nodeFn) => {
    let seen = nodeFn;
    let fake = false;
    return () => {
        const fn = globalThis[name];
        if (fn === nodeFn) {
            return false;
        }
        if (fn !== seen) {
            seen = fn;
            fake = false;
            try {
                const t = fn(NO_CANCEL, 0);
                globalThis[clearName](t);
                fake = !(t instanceof nodeTimeoutClass());
            } catch (e) {
                // not a timer function: Node's own is used
            }
        }
        return fake;
    };
};

const timersMocked = fakeTimerCheck('setTimeout', 'clearTimeout', NODE_SET_TIMEOUT);

/* the event tool that sets root's step timeouts, or null: the C scheduler
 * (in virtual time for AsyncToolTest) */
const timerTool = (root) => {
    const tool = root._async_tool;
    if (root._test) {
        return null;
    }
    if (tool !== AsyncTool) {
        return tool !== null && typeof tool === 'object' && typeof tool.callLater === 'function' &&
            typeof tool.cancelCall === 'function' ? tool : null;
    }
    return AsyncTool.callLater !== CALL_LATER || AsyncTool.cancelCall !== CANCEL_CALL || timersMocked() ?
        AsyncTool : null;
};

/* the step ended (or set another timeout): its timer goes */
const dropToolTimeout = (h) => {
    if (TOOL_TIMEOUTS.size === 0) {
        return; // the usual case: no map lookup
    }
    const t = TOOL_TIMEOUTS.get(h);
    if (t !== undefined) {
        TOOL_TIMEOUTS.delete(h);
        t[1].cancelCall(t[0]);
    }
};

/* the timeouts on an event tool of steps that ended meanwhile (through
 * their sub-steps, a cancel, an error further out): cancelled, as
 * futoin-asyncsteps does however a step ends (a pending timer would keep
 * the process alive, a fake one counts as pending) */
const sweepToolTimeouts = () => {
    for (const [h, t] of TOOL_TIMEOUTS) {
        if (!isLiveAs(t[2])) {
            TOOL_TIMEOUTS.delete(h);
            t[1].cancelCall(t[0]);
        }
    }
};

const toolTimeout = (as, ms, tool) => {
    dropToolTimeout(as._h);
    if (as._ck === -1) {
        as.setCancel(NO_CANCEL); // it waits, and onCancel() hears when it is cancelled
    }
    const t = [undefined, tool, as];
    t[0] = tool.callLater(() => {
        if (TOOL_TIMEOUTS.get(as._h) === t) {
            TOOL_TIMEOUTS.delete(as._h);
        }
        toolTimeoutFires(as);
    }, ms);
    TOOL_TIMEOUTS.set(as._h, t);
};

/* as futoin-asyncsteps' on_timeout(): the step fails with Timeout, its
 * cancel and error handlers run now */
const toolTimeoutFires = (as) => {
    if (outOfService(as) || as._h === CANCELLED_H) {
        return;
    }
    if (as._h === CUR) {
        // the tool's clock moved inside the step's own callback: as soon as it returns
        queue(CUR, OP_TIMEOUT, 0, 0);
        N.flush();
        return;
    }
    const root = as._root;
    stateError(root.state, signalError('Timeout'), undefined, false);
    errorInC(root, as._h, 'Timeout', undefined);
    errorsNow(root);
};

/* an error raised on a step from outside a callback: its handlers run now,
 * as futoin-asyncsteps runs them in error(); the steps after them wait for
 * a turn, as after any completion from outside (virtual time: no event used
 * up; inside a cancel handler the test tool runs, as soon as it returns) */
const errorsNow = (root) => {
    if (root._foreign || root._h === undefined) {
        if (!root._test) {
            N.runNow();
        }
    } else if (N.flowNow(root._h, true)) {
        const owner = reg.SH[SH_OWNER];
        const ownerBr = reg.SH[SH_OWNER_BR];
        runAlone(root._test, HOST_ERRORS | HOST_MORE);
        reg.SH[SH_OWNER] = owner;
        reg.SH[SH_OWNER_BR] = ownerBr;
        // what the handlers left: the strand that owns the burst (the failed
        // step's, or the one whose parallel a failed branch ended, as the
        // reference's root that owns it goes on in its error()) goes on now;
        // the others in a turn of their own
        if (root._running && N.ownerNow(root._h)) {
            runAlone(root._test, HOST_MORE);
        }
        if (!root._test && resumeLater(root)) {
            return; // the steps after its handlers
        }
        if (reg.SH[SH_MORE] === 0) {
            return; // nothing to go on with (the flow ended): no turn armed ahead of later ones
        }
    } else if (root._test) {
        reg.afterEvent.push(root);
    } else {
        N.runNow();
    }
    if (!root._test) {
        reg.armImmediate();
    }
};

/* a thrown value for a message: its stack, else itself as a string, even
 * when reading or converting it throws */
const describe = (e) => {
    try {
        return String((e && e.stack) || e);
    } catch (x) {
        return typeof e === 'object' ? '[object]' : typeof e;
    }
};

/* any value as a string, even one whose conversion throws */
const codeString = (v) => {
    try {
        return String(v);
    } catch (e) {
        return 'InternalError';
    }
};

/* anything with a sync() method is a sync object (a class with a static one too) */
const checkSyncObject = (object) => {
    if (object === null || (typeof object !== 'object' && typeof object !== 'function') ||
        typeof object.sync !== 'function') {
        throw new TypeError('sync() expects an ISync object');
    }
};

/* a code as C has it (src/addon.c js_strdup()) */
const cCode = (v) => (v === undefined || v === null || typeof v === 'symbol' ? '' : codeString(v));

/* the code of a thrown value: an Error's message (of any type but
 * undefined, as futoin-asyncsteps), else the value as a string (also when
 * reading its message throws: a getter, a Proxy) */
const errorCode = (e) => {
    if (e !== null && typeof e === 'object') {
        let m;
        try {
            m = e.message;
        } catch (x) {
            m = undefined;
        }
        if (m !== undefined) {
            return m;
        }
    }
    return codeString(e);
};

/* a step timeout on the real clock, as Node's setTimeout() takes it: below
 * 1 ms (0, negative, NaN) 1 ms, so it never fires in the turn that set it;
 * a fraction waits until that many whole ms have passed. AsyncToolTest's
 * virtual clock takes whole ms from 0, as its callLater() there */
const stepMs = (root, ms) => {
    if (root._test) {
        return ms > 0x7fffffff ? 0x7fffffff : (ms >= 0 ? Math.floor(ms) : 0);
    }
    return ms >= 1 ? (ms > 0x7fffffff ? 0x7fffffff : Math.ceil(ms)) : 1;
};

/* milliseconds of setTimeout(), as futoin-asyncsteps hands them to Node's
 * setTimeout(): coerced as there (no number: the shortest delay; a Symbol or
 * a BigInt throws TypeError there too) */
const msOf = (ms, test) => {
    const n = ms * 1;
    if (Number.isNaN(n)) {
        return 0;
    }
    // AsyncToolTest's virtual clock takes any delay, as futoin-asyncsteps'
    // (stepMs() caps it): Node's rule for a huge one is for its real timers
    return test ? n : timerMs(n);
};

/* repeat(count): futoin-asyncsteps runs the body while `i < count`, so a
 * numeric string counts and 2.5 means 3; what is no number would never end
 * there and is refused here */
const countOf = (count) => {
    // there the body runs until `i >= count`: a BigInt, a boolean, null, a
    // numeric (also empty) string or an object that converts to a number
    // (new Number(2), a valueOf()) compare as their number
    const t = typeof count;
    let n = NaN;
    if (t === 'number') {
        n = count;
    } else if (t !== 'undefined' && t !== 'symbol') {
        try {
            n = Number(count);
        } catch (e) {
            // its valueOf() or toString() threw: no count
        }
    }
    if (Number.isNaN(n)) {
        throw new TypeError('repeat() expects a count');
    }
    return n > 0 ? Math.ceil(n) : 0;
};

/* loop labels: any value, matched by identity (===) as in futoin-asyncsteps.
 * C matches C strings, so each label becomes a string without NUL that no
 * label of another type or value shares: a plain string stays itself, other
 * values get a tagged key (\u001f, then n: number, b: BigInt, t: true,
 * y: registered symbol, s: a string with a NUL or the tag in front, o: any
 * other symbol or object, numbered in a WeakMap, so nothing is kept after
 * its loop). A falsy label is none (break(0) acts on the innermost loop
 * there too). */
const LABEL_TAG = '\u001f';
const LABEL_KEYS = new WeakMap();
let labelCount = 0;
const labelKey = (label) => {
    if (!label) {
        return undefined;
    }
    switch (typeof label) {
    case 'string':
        return label[0] === LABEL_TAG || label.includes('\u0000') ? `${LABEL_TAG}s${JSON.stringify(label)}` : label;
    case 'number': return `${LABEL_TAG}n${label}`;
    case 'bigint': return `${LABEL_TAG}b${label}`;
    case 'boolean': return `${LABEL_TAG}t`;
    case 'symbol': {
        const name = Symbol.keyFor(label);
        if (name !== undefined) {
            return `${LABEL_TAG}y${JSON.stringify(name)}`;
        }
        break;
    }
    }
    let k = LABEL_KEYS.get(label);
    if (k === undefined) {
        k = `${LABEL_TAG}o${++labelCount}`;
        LABEL_KEYS.set(label, k);
    }
    return k;
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
    } else if (map_or_list !== null && map_or_list !== undefined) {
        // anything else by its own keys, as futoin-asyncsteps (a string by index)
        const obj = map_or_list;
        const keys = Object.keys(obj);
        asi.repeat(keys.length, (as, i) => {
            func(as, keys[i], obj[keys[i]]);
        }, label);
    } else {
        throw new TypeError('forEach() expects an Array, a Map or an object, got ' + map_or_list);
    }
};

/* ---- await of a promise ---- */

/* the promise of a waiting await() step rejected */
const awaitFailed = (root, as, reason) => {
    const state = root.state;
    if (reason instanceof Error) {
        state.last_exception = reason;
        state.error_info = undefined;
        errorInC(root, as._h, 'PromiseReject', undefined);
    } else {
        // the handlers get the reason itself, as in futoin-asyncsteps
        const err = reason || 'PromiseReject';
        state.last_exception = new Error(codeString(err));
        state.error_info = undefined;
        errorInC(root, as._h, err, undefined);
    }
};

/* a settled await(): the flow of root goes on alone if awaited() or
 * flowNow() ran it (`ran`), then whatever it made ready meanwhile (a flow it
 * let into a Mutex); else a scheduler turn runs it (virtual time: the next
 * test event) */
/* a branch failed a parallel of root while its flow ran: the handlers now
 * (those C did not run yet), the steps after them later, as futoin-asyncsteps */
const parallelHandlersNow = (root) => {
    if (N.flowNow(root._h, true)) {
        runAlone(root._test, HOST_ERRORS);
    }
};

const goOn = (root, ran) => {
    if (ran) {
        reg.reactionSteps += runAlone(root._test, HOST_MORE);
        const more = reg.SH[SH_MORE];
        if ((more & MORE_PAR_FAILED) !== 0) {
            parallelHandlersNow(root);
            // what its handlers left: in a setImmediate() of its own, queued
            // now, as futoin-asyncsteps' callImmediate() there
            if (!root._test) {
                goOnLater(root);
            }
            return;
        }
        if (more === 0) {
            return;
        }
        if ((more & MORE_QUEUED) !== 0 && !root._test && resumeLater(root)) {
            return; // its parallel ended (the await() went on in a branch)
        }
    } else if (root._test) {
        return;
    }
    if (reg.SH[reg.SH_IMM] === 0) {
        N.runNow(); // (else our setImmediate() turn queued runs it)
    }
};

/* fn(root, arg) from a promise reaction; own: the reaction runs in root's
 * async context (then() was called in its step), no scope to enter again */
const inReaction = (own, root, fn, arg) => {
    if (!own || root._ar === undefined) {
        fn(root, arg);
        return;
    }
    const prev = IN_AR;
    IN_AR = root._ar;
    try {
        fn(root, arg);
    } finally {
        IN_AR = prev;
    }
};

const awaitImpl = (asi, root, promise, onerror) => {
    const then = promise !== null && (typeof promise === 'object' || typeof promise === 'function') ?
        promise.then : undefined; // read once, as then() is called (a getter, a Proxy)
    if (typeof then !== 'function') {
        throw new TypeError('await() expects a promise');
    }
    let step_as = undefined;
    let complete = null;
    // a reaction runs in the async context then() was called in: in a step,
    // its flow's (no AsyncResource scope to enter again)
    const own = asi !== root;
    then.call(
        promise,
        (result) => {
            if (step_as) {
                const as = step_as;
                step_as = null; // not kept by the async_stack that holds its step function
                if (!isLiveAs(as)) {
                    // gone: the late result with it
                } else if (reg.reactionSteps >= REACTION_BURST) {
                    // promise reactions ran a burst's steps since our last
                    // loop turn: the flow goes on in the next one (virtual
                    // time: the next test event), so they cannot hold the
                    // microtask queue for good, as futoin-asyncsteps'
                    // shared burst count yields too
                    N.awaited(as._h, result, true);
                    if (!root._test) {
                        resumeOwed(root, reg.SH[SH_TICKET]);
                    }
                } else {
                    // the flow goes on in this promise reaction, as in
                    // futoin-asyncsteps, not a loop turn (or test event) later
                    inReaction(own, root, goOn, N.awaited(as._h, result, false));
                }
            } else {
                // before its step runs: the last settlement counts, as in
                // futoin-asyncsteps (a thenable may call both)
                complete = (as) => {
                    as.success(result);
                };
            }
        },
        (reason) => {
            if (step_as) {
                // an error from outside may have moved the step on: the
                // rejection goes, silently, as in futoin-asyncsteps
                if (isLiveAs(step_as) && N.waiting(step_as._h)) {
                    const as = step_as;
                    step_as = null; // its cancel handler cancels the promise no more, as in futoin-asyncsteps
                    awaitFailed(root, as, reason);
                    // its handlers run now, the steps after them on a later
                    // event, as after any error from outside (futoin-asyncsteps)
                    inReaction(own, root, errorsNow);
                }
            } else {
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
    // its step function is ours: a new closure each time, whose arity a
    // check would read from V8's runtime
    const inner = (as) => {
        if (as === undefined) {
            step_as = undefined; // awaitSubstep(): the step is a sub-step after all
        } else if (complete) {
            complete(as);
        } else {
            step_as = as;
            if (typeof promise.cancel !== 'function') {
                as.waitExternal(); // nothing to cancel: a late settlement finds the step gone
                return;
            }
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
    };
    if (asi._h === STEP_H && asi._h === CUR && asi._f === 0 && asi._next === null && onerror === undefined &&
        complete === null && step_as === undefined && typeof promise.cancel !== 'function') {
        // the await() that ends a step: the step itself waits for the promise,
        // as the sub-step it would add does, one engine step and callback less
        // (its step function goes to the async_stack when the callback
        // returns: awaitReturned())
        step_as = asi;
        asi._f = F_WAIT | F_AWAIT;
        asi._aw = inner;
        queue(CUR, OP_WAIT, 0, 0);
        return;
    }
    const add = asi instanceof AsyncStepProtector ? (onerror = checkOnError(asi, onerror), asi._add) : asi.add;
    add.call(asi, inner, onerror);
};

/* the step `as` adds a step in its callback after its await() made it wait
 * itself: the await() becomes the sub-step it is in futoin-asyncsteps,
 * first in line (from outside the step is that sub-step, waiting) */
const awaitSubstep = (as) => {
    if (as._h !== CUR) {
        return;
    }
    const inner = as._aw;
    as._aw = null;
    as._f &= ~F_AWAIT;
    inner(undefined);
    const SH = reg.SH;
    const n = SH[SH_OPS_N];
    if (reg.target === as._h && n >= 6 && SH[SH_OPS + n - 3] === OP_WAIT) {
        SH[SH_OPS_N] = n - 3; // its wait, still queued: gone (else sub-steps go first anyway)
        as._f &= ~F_WAIT;
    }
    as._add(inner, undefined);
};

/* a sync object's own sync() adds its step through the native one: the
 * interface has added a step, after the sub-step of an await() before it */
reg.stepAdds = (as) => {
    if (as instanceof AsyncStepProtector) {
        if ((as._f & F_AWAIT) !== 0) {
            awaitSubstep(as);
        }
        as._f |= F_ADDED;
    }
};

/* the callback of step `as` returned after its await() made it wait: the
 * async_stack gets the step function of the sub-step futoin-asyncsteps
 * runs now */
const awaitReturned = (as) => {
    if (!isProduction) {
        execStack(as._root, as._aw, MODE_STEP);
    }
};

/**
 * The interface a step callback receives (futoin-asyncsteps'
 * AsyncStepProtector). Valid while the step is active.
 */
class AsyncStepProtector {
    constructor(root, h) {
        this._root = root;
        this._h = h;
        this._g = GENS[h & SLOT_MASK];
        this._f = 0;
        this._next = null;
        this._ck = -1; // the FNS index of its cancel handler
        this._aw = null; // F_AWAIT: the sub-step its await() did not add (awaitSubstep())
    }

    /* the flow's state while the step runs or waits, null once it ended
     * (its handle freed, or success() called), as futoin-asyncsteps' _cleanup() */
    get state() {
        return isLiveAs(this) && (this._f & (F_DONE | F_THREW)) !== F_DONE && this._h !== CANCELLED_H ? this._root.state : null;
    }

    set state(value) {
        Object.defineProperty(this, 'state', { value, writable: true, enumerable: true, configurable: true });
    }

    add(func, onerror) {
        sanity(this);
        checkNotEnded(this);
        if ((this._f & F_AWAIT) !== 0) {
            awaitSubstep(this);
        }
        if (typeof func !== 'function' && isCStep(func)) {
            checkCEh(this, func, onerror);
            const values = takeNext(this);
            if (values !== null) {
                // a step of its own hands them to the C step (converted as
                // from any JS step)
                this.add((as) => {
                    as.success(...values);
                });
            }
            addC(this._h, func, onerror);
            this._f |= F_ADDED;
            return this;
        }
        checkFunc(this, func);
        onerror = checkOnError(this, onerror);
        return this._add(func, onerror);
    }

    /* add() of a step function of ours (no check of its arity) */
    _add(func, onerror) {
        if ((this._f & F_AWAIT) !== 0) {
            awaitSubstep(this);
        }
        const values = takeNext(this);
        if (values !== null) {
            func = withValues(func, values);
        }
        const k = register(func, onerror);
        if (this._h === CUR) {
            queue(CUR, OP_ADD, k, hasEh(onerror) ? 1 : 0);
        } else {
            N.add(this._h, k, hasEh(onerror));
        }
        this._f |= F_ADDED;
        return this;
    }

    parallel(onerror) {
        sanity(this);
        checkNotEnded(this);
        onerror = checkOnError(this, onerror);
        if ((this._f & F_AWAIT) !== 0) {
            awaitSubstep(this);
        }
        const k = register(undefined, onerror);
        const p = N.parallel(this._h, k, hasEh(onerror));
        this._f |= F_ADDED;
        return new ParallelStep(this._root, p);
    }

    success(...args) {
        sanity(this);
        if (outOfService(this) || cancelledInCallback(this)) {
            throw new Error(STALE); // (in production mode also after root.cancel() in its callback)
        }
        if (this._f & (F_ADDED | F_AWAIT)) {
            this.error('InternalError', 'Invalid success() call');
        }
        if (movedOn(this)) {
            // futoin-asyncsteps' success() finds the sub-steps there too
            throw new Error('InternalError');
        }
        this._f |= F_DONE;
        doneWaiting(this._root, this._h);
        successN(this._h, args, this._h === CUR, this._root);
        if (this._ck >= 0 && this._h !== CUR) {
            // completed from outside: a cancel() before its flow goes on
            // has nothing of it to cancel, as in futoin-asyncsteps
            FNS[this._ck] = CANCEL_DONE;
        }
    }

    error(name, error_info) {
        sanity(this);
        if (outOfService(this) || endedInCallback(this)) {
            throw new Error(STALE);
        }
        if (movedOn(this)) {
            throw new Error(name); // fails nothing, as root.error() between steps
        }
        doneWaiting(this._root, this._h);
        throw raise(this._root, this._h, name, error_info, signalError(name, AsyncStepProtector.prototype.error));
    }

    setTimeout(timeout_ms) {
        sanity(this);
        if ((this._f & F_OUT) !== 0 || endedInCallback(this)) {
            throw new Error(STALE); // (production mode: a cancel handler's)
        }
        timeout_ms = msOf(timeout_ms, this._root._test);
        const tool = timerTool(this._root);
        if (tool !== null) {
            toolTimeout(this, timeout_ms, tool);
        } else if (this._h === CUR) {
            // applied now, not when the callback returns: the deadline
            // counts from this call, as a setTimeout() of Node's does
            queue(CUR, OP_TIMEOUT, stepMs(this._root, timeout_ms), 0);
            N.flush();
        } else {
            N.setTimeout(this._h, stepMs(this._root, timeout_ms));
        }
        this._f |= F_WAIT;
        return this;
    }

    setCancel(oncancel) {
        if (typeof oncancel !== 'function') {
            throw new TypeError('setCancel() expects a function');
        }
        if ((this._f & F_OUT) !== 0 || (this._h !== CUR ? !isLiveAs(this) : endedInCallback(this)) ||
            outerInFlow(this)) {
            return this; // harmless on a step that ended, as in futoin-asyncsteps
        }
        const k = register(oncancel, undefined);
        this._ck = k;
        if (this._h === CUR) {
            queue(CUR, OP_CANCEL, k, 0);
        } else {
            N.setCancel(this._h, k);
        }
        this._f |= F_WAIT;
        return this;
    }

    waitExternal() {
        if (this._h === CUR && (this._f & F_MERGED) === 0) {
            if (endedInCallback(this)) {
                return this; // harmless after success(), as in futoin-asyncsteps
            }
            queue(CUR, OP_WAIT, 0, 0);
        } else if ((this._f & F_OUT) !== 0 || !isLiveAs(this) || outerInFlow(this)) {
            return this; // harmless on a step that ended, as in futoin-asyncsteps
        } else {
            N.waitExternal(this._h);
        }
        this._f |= F_WAIT;
        return this;
    }

    copyFrom(other) {
        sanity(this);
        copyModel(this, other);
        const os = other.state;
        const s = this._root.state;
        for (const k in os) {
            if (s[k] === undefined) {
                s[k] = os[k];
            }
        }
        return this;
    }

    loop(func, label) {
        sanity(this);
        checkNotEnded(this);
        checkFunc(this, func);
        if ((this._f & F_AWAIT) !== 0) {
            awaitSubstep(this);
        }
        N.loop(this._h, register(func, undefined), labelKey(label));
        this._f |= F_ADDED;
        return this;
    }

    repeat(count, func, label) {
        sanity(this);
        checkNotEnded(this);
        checkFunc(this, func);
        const n = countOf(count);
        if (n === 0) {
            return this; // no step, as futoin-asyncsteps: values pass it by
        }
        if ((this._f & F_AWAIT) !== 0) {
            awaitSubstep(this);
        }
        N.repeat(this._h, register(func, undefined), n, labelKey(label));
        this._f |= F_ADDED;
        return this;
    }

    forEach(map_or_list, func, label) {
        checkFunc(this, func);
        forEachImpl(this, map_or_list, func, label);
        return this;
    }

    break(label) {
        this._loopCtl(label, LOOP_BREAK, RAISE_BREAK);
    }

    continue(label) {
        this._loopCtl(label, LOOP_CONT, RAISE_CONT);
    }

    _loopCtl(label, code, kind) {
        sanity(this);
        if (endedInCallback(this)) {
            throw new Error(STALE);
        }
        label = labelKey(label);
        checkActiveAs(this);
        const e = new Error(code);
        // a loop that takes it leaves no exception behind, nor error_info,
        // as in futoin-asyncsteps
        const state = this._root.state;
        state.error_info = undefined; // first: a new state gets its keys in the reference's order
        state.last_exception = null;
        if (this._h === CUR) {
            deferRaise(this._root, e, kind, label, undefined);
        } else {
            // from an event: the handlers on the way run now, as for error()
            this._root._waitH = undefined;
            loopCtlInC(this._root, this._h, kind, label, e);
            errorsNow(this._root);
        }
        throw e;
    }

    successStep(...args) {
        sanity(this);
        if (outOfService(this) || endedInCallback(this)) {
            throw new Error(STALE);
        }
        if (this._f & (F_ADDED | F_AWAIT)) {
            this.add((as) => {
                as.success(...args);
            });
        } else {
            this._next = args;
        }
        return this;
    }

    await(promise, onerror) {
        sanity(this);
        if (endedInCallback(this)) {
            throw new Error(STALE);
        }
        onerror = checkOnError(this, onerror);
        awaitImpl(this, this._root, promise, onerror);
        return this;
    }

    sync(object, func, onerror) {
        sanity(this);
        checkFunc(this, func);
        onerror = checkOnError(this, onerror);
        checkSyncObject(object);
        if (object.sync === NATIVE_SYNC) {
            // Mutex, Throttle, Limiter (sync() not overridden): checked already
            checkNotEnded(this);
            if ((this._f & F_AWAIT) !== 0) {
                awaitSubstep(this);
            }
            const values = takeNext(this);
            if (values !== null) {
                func = withValues(func, values); // the section's step, as add()
            }
            object._add(this._root, this._h, func, onerror, this._h === CUR);
            this._f |= F_ADDED;
        } else {
            // an object of the user's: what it calls on the interface counts
            object.sync(this, func, onerror);
        }
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
        this._h = h; // undefined: a root's parallel kept in JS until execute()
        this._branches = h === undefined ? [] : null;
    }

    add(func, onerror) {
        if (typeof func !== 'function' && isCStep(func)) {
            checkCEh(this, func, onerror);
            if (this._h === undefined) {
                this._branches.push(func, onerror);
                this._root._slow = true; // applied on a C root at execute()
            } else {
                addC(this._h, func, onerror);
            }
            return this;
        }
        checkFunc(this, func);
        onerror = checkOnError(this, onerror);
        if (this._h === undefined) {
            this._branches.push(func, onerror);
        } else {
            N.add(this._h, register(func, onerror), hasEh(onerror));
        }
        return this;
    }

    error(name, error_info) {
        throw stateError(this._root.state, signalError(name, ParallelStep.prototype.error), error_info, false);
    }

    isAsyncSteps() {
        return true;
    }
}

/* a model's root-level calls, replayed by copyFrom() */
const copyModel = (target, other) => {
    const ops = other !== null && typeof other === 'object' ? other._ops : undefined;
    if (!Array.isArray(ops)) {
        throw new TypeError('copyFrom() expects an AsyncSteps model');
    }
    const n = ops.length; // copyFrom() of itself appends to this very array
    for (let i = 0; i < n; i += 3) {
        const kind = ops[i];
        if (typeof kind === 'function') {
            target.add(kind);
            i -= 2;
        } else if (kind === Q_ADD) {
            target.add(ops[i + 1], ops[i + 2]);
        } else if (kind === Q_PAR) {
            const p = target.parallel(ops[i + 2]);
            const br = ops[i + 1]._branches;
            if (p._h === undefined) {
                // the model's very branches, also those added later, as
                // futoin-asyncsteps' copy refers to the model's parallel
                p._branches = br;
                target._slow = true; // C steps among them are replayed
            } else {
                for (let j = 0; j < br.length; j += 2) {
                    p.add(br[j], br[j + 1]);
                }
            }
        } else {
            ops[i + 2](target);
        }
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
        this._ops = [];
        this._slow = false;
        this._running = false;
        this._h = undefined;
        this._raised = NOT_RAISED;
        this._jsErr = null;
        this._jsInfo = undefined;
        this._reject = null;
        this._async_tool = async_tool;
        this._test = async_tool === AsyncToolTest;
        // every field from the start: one hidden class for all roots
        this._foreign = false;
        this._direct = false;
        this._es = undefined;
        this._esLoop = undefined;
        this._raiseKind = RAISE_ERROR;
        this._raiseCode = undefined;
        this._raiseInfo = undefined;
        this._syncs = undefined;
        this._syncLast = undefined;
        this._waitH = undefined; // the step that waits last (error() on the running root)
        this._held = undefined; // idle: the callbacks its flow keeps (sweepIdle)
        this._cancelling = false; // inside cancel(): its handlers may add steps
        this._rerun = false; // execute() called meanwhile
        this._ehAdded = 0; // error handlers that added sub-steps (movedOn())
        this._loopE = null; // the Error break()/continue() threw last
        this._ar = undefined; // a run that went past its first burst: the async context execute() ran in
    }

    /* a root-level call on a running root: true when it goes into the
     * running flow, as futoin-asyncsteps appends to its queue then (none of
     * its steps in progress; in production mode always); InternalError
     * while a step is in progress; false: kept for the next execute() */
    _checkIdle() {
        if (!this._running || this._cancelling) {
            return false;
        }
        settle(this);
        if (!this._running) {
            return false;
        }
        if (isProduction || N.atTop(this._h)) {
            return true;
        }
        this.error('InternalError', 'Top level add in execution');
    }

    /* a C root now (binary(), sync objects, loops, C steps before execute()) */
    _materialize() {
        if (this._h !== undefined && !this._running && !this._foreign) {
            reg.drainFin(); // a finished run leaves a handle that is gone
        }
        if (this._h === undefined) {
            this._h = N.rootNew(this._test);
            cleanup.register(this, this._h, this);
        }
        return this._h;
    }

    add(func, onerror) {
        if (typeof func !== 'function' && isCStep(func)) {
            checkCEh(this, func, onerror);
            if (this._foreign || this._direct) {
                addC(this._h, func, onerror);
                return this;
            }
            return this._call((t) => addC(t._materialize(), func, onerror), (t) => t.add(func, onerror));
        }
        checkFunc(this, func);
        onerror = checkOnError(this, onerror);
        if (this._foreign || this._direct) {
            N.add(this._h, register(func, onerror), hasEh(onerror));
            return this;
        }
        if (this._checkIdle()) {
            N.add(this._h, register(func, onerror), hasEh(onerror));
            return this;
        }
        if (onerror === undefined) {
            this._ops.push(func);
        } else {
            this._ops.push(Q_ADD, func, onerror);
        }
        return this;
    }

    /* fn(root) on the C root, at once or at execute(); copy(target) makes the
     * same call on whatever copies this model (copyFrom(), in its order) */
    _call(fn, copy) {
        if (this._foreign || this._direct) {
            fn(this);
            return this;
        }
        if (this._checkIdle()) {
            fn(this);
            return this;
        }
        this._ops.push(Q_CALL, fn, copy);
        this._slow = true;
        return this;
    }

    parallel(onerror) {
        onerror = checkOnError(this, onerror);
        if (this._foreign || this._direct) {
            return new ParallelStep(this, N.parallel(this._h, register(undefined, onerror), hasEh(onerror)));
        }
        if (this._checkIdle()) {
            return new ParallelStep(this, N.parallel(this._h, register(undefined, onerror), hasEh(onerror)));
        }
        const p = new ParallelStep(this, undefined);
        this._ops.push(Q_PAR, p, onerror);
        return p;
    }

    sync(object, func, onerror) {
        if (!isProduction) {
            this._checkIdle(); // Top level add in execution, before anything else, as futoin-asyncsteps
        }
        checkFunc(this, func);
        onerror = checkOnError(this, onerror);
        checkSyncObject(object);
        object.sync(this, func, onerror);
        return this;
    }

    error(name, error_info) {
        rootError(this, name, error_info, undefined);
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
        this._ops = [];
        this._slow = false;
        if (this._h !== undefined) {
            if (CUR_ROOT === this) {
                CANCELLED_H = CUR; // inside a step of this flow: that step ends now
            }
            // its cancel handlers may add steps and execute() it again, as
            // in futoin-asyncsteps: that run starts once the flow is gone
            this._cancelling = true;
            try {
                N.cancel(this._h);
            } finally {
                this._cancelling = false;
            }
            if (TOOL_TIMEOUTS.size !== 0) {
                sweepToolTimeouts();
            }
            if (this._rerun) {
                this._rerun = false;
                this.execute();
            }
        }
        return this;
    }

    execute() {
        this._run();
        return this;
    }

    /* execute(): the handle of the run (one that ended inside is swept
     * already: its root's _h is gone) */
    _run() {
        settle(this);
        if (this._running) {
            this._rerun = this._cancelling; // from its cancel handlers: once cancel() ended the flow
            return this._h;
        }
        // async_stack goes on from the last run's, as futoin-asyncsteps'
        // exec stack (kept short by execStack())
        this._esLoop = undefined;
        this._jsErr = null;
        if (this._foreign) {
            N.execute(this._h, false, this);
            drainHost(this._test);
            return this._h;
        }
        const ops = this._ops;
        this._ops = [];
        let h = this._h;
        if (this._slow || h !== undefined) {
            // replay with direct calls on a C root
            h = this._materialize();
            this._replay(ops);
        } else {
            for (let i = 0; i < ops.length; i += 3) {
                const kind = ops[i];
                if (typeof kind === 'function') {
                    const j = batchEnd(ops, i);
                    if (j > i + 1) {
                        queue(0, OP_ADD, register(batchOf(ops, i, j), undefined), OP_BATCH);
                    } else {
                        queue(0, OP_ADD, register(kind, undefined), 0);
                    }
                    i = j - 3;
                    continue;
                }
                const eh = ops[i + 2];
                if (kind === Q_ADD) {
                    queue(0, OP_ADD, register(ops[i + 1], eh), hasEh(eh) ? 1 : 0);
                } else {
                    queue(0, OP_PAR, register(undefined, eh), hasEh(eh) ? 1 : 0);
                    const br = ops[i + 1]._branches;
                    for (let j = 0; j < br.length; j += 2) {
                        queue(0, OP_PADD, register(br[j], br[j + 1]), hasEh(br[j + 1]) ? 1 : 0);
                    }
                }
            }
        }
        this._running = true;
        const test = this._test;
        // its first JS step comes back at once; a promise() hears of an
        // unhandled error even when JS raised it
        reg.SH[8] = HOST_TAKE | HOST_NESTED | (this._reject !== null ? HOST_FINISH : 0);
        const owner = reg.SH[SH_OWNER]; // C gives the burst to this flow
        const ownerBr = reg.SH[SH_OWNER_BR];
        h = N.execute(h, test, this);
        this._h = h;
        if (ROOTS[h % SLOT] === undefined) {
            ++reg.running;
        }
        ROOTS[h % SLOT] = this;
        if (!probing) {
            probeArm();
        }
        // its first burst runs now, alone (inside a step too), as in
        // futoin-asyncsteps; other flows' steps wait for their own turn
        runAlone(test);
        reg.SH[SH_OWNER] = owner; // execute() gives the burst back, as there
        reg.SH[SH_OWNER_BR] = ownerBr;
        if (this._running && !reg.finPending(this)) {
            if (!test && !draining[0] && N.readyNow()) {
                // its next step is ready (a parallel ended): it goes on through
                // a setImmediate() of its own queued now, as futoin-asyncsteps'
                // callImmediate() (inside a turn, that turn goes on with it)
                goOnLater(this);
            }
            // it goes on later, from our loop turns: there its callbacks see
            // the AsyncLocalStorage stores of here, as a task's callbacks
            this._ar = new AsyncResource('FutoInAsyncSteps');
            ++reg.arFlows;
        }
        return h;
    }

    /* apply root-level operations kept in JS to the C root, in order */
    _replay(ops) {
        const h = this._h;
        this._slow = false;
        cleanup.unregister(this);
        for (let i = 0; i < ops.length; i += 3) {
            const kind = ops[i];
            if (typeof kind === 'function') {
                N.add(h, register(kind, undefined), false);
                i -= 2;
            } else if (kind === Q_ADD) {
                const eh = ops[i + 2];
                N.add(h, register(ops[i + 1], eh), hasEh(eh));
            } else if (kind === Q_PAR) {
                const eh = ops[i + 2];
                const p = N.parallel(h, register(undefined, eh), hasEh(eh));
                const br = ops[i + 1]._branches;
                for (let j = 0; j < br.length; j += 2) {
                    if (typeof br[j] !== 'function') {
                        addC(p, br[j], br[j + 1]);
                    } else {
                        N.add(p, register(br[j], br[j + 1]), hasEh(br[j + 1]));
                    }
                }
            } else {
                ops[i + 1](this);
            }
        }
    }

    /* binary(): the C root now, with every step so far; later root-level
     * calls go to it at once, so C and JS additions keep their order */
    _binary() {
        if (!this._foreign && !this._direct) {
            const ops = this._ops;
            this._ops = [];
            this._materialize();
            this._replay(ops);
            this._direct = true;
            cleanup.register(this, this._h, this);
        }
        return this._h;
    }

    /* futoin-asyncsteps' internals its own tests read: the steps queued
     * before execute() as [func, onerror] (a parallel or a loop as a
     * function of its own), the step functions run so far, and the success
     * of no step, an InternalError */
    get _queue() {
        const q = [];
        const ops = this._ops;
        if (Array.isArray(ops)) {
            for (let i = 0; i < ops.length; i += 3) {
                const kind = ops[i];
                if (typeof kind === 'function') {
                    q.push([kind, undefined]);
                    i -= 2;
                    continue;
                }
                q.push(kind === Q_ADD ? [ops[i + 1], ops[i + 2]] :
                    [queuedCall, kind === Q_PAR ? ops[i + 2] : undefined]);
            }
        }
        return q;
    }

    get _exec_stack() {
        if (isProduction) {
            return NO_EXEC_STACK;
        }
        return this._es || (this._es = []); // [] before execute() too, as the reference
    }

    /* _handle_success(), _burst_success(), _handle_error(): futoin-asyncsteps'
     * internals FutoIn libraries call on the root; they complete the step
     * that waits for an event (futoin-executor ends a request with
     * _burst_success()). _waiting(): that step, else undefined; then, as in
     * the reference, the rest of a running flow is dropped */
    _waiting() {
        const h = takeWaiting(this);
        if (h === undefined && this._running && CUR_ROOT !== this) {
            this.cancel();
        }
        return h;
    }

    _handle_success(args = []) {
        const h = this._waiting();
        if (h === undefined) {
            this.error('InternalError', 'Invalid success completion');
        }
        successN(h, args, false, this);
    }

    _burst_success(args = []) {
        const h = this._waiting();
        if (h !== undefined) {
            successN(h, args, false);
            // the flow goes on inside this call, as in futoin-asyncsteps
            goOn(this, !this._foreign && this._h !== undefined && N.flowNow(this._h));
        }
    }

    _handle_error(name) {
        const h = takeWaiting(this);
        if (h !== undefined) {
            try {
                raise(this, h, name, undefined, signalError(name)); // its handlers run now
            } catch (e) {
                // a step that ended meanwhile (checkActive()): nothing to fail
            }
        } else if (this._running && CUR_ROOT !== this) {
            if (failWaiting(this, name, undefined)) {
                errorsNow(this);
            } else {
                this.cancel(); // as _waiting()
            }
        }
    }

    loop(func, label) {
        checkFunc(this, func);
        const key = labelKey(label);
        return this._call((t) => N.loop(t._materialize(), register(func, undefined), key),
            (t) => t.loop(func, label));
    }

    repeat(count, func, label) {
        checkFunc(this, func);
        const n = countOf(count);
        if (n === 0) {
            return this; // no step, as futoin-asyncsteps: values pass it by
        }
        const key = labelKey(label);
        return this._call((t) => N.repeat(t._materialize(), register(func, undefined), n, key),
            (t) => t.repeat(n, func, label));
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
        onerror = checkOnError(this, onerror);
        awaitImpl(this, this, promise, onerror);
        return this;
    }

    promise() {
        this._checkIdle(); // at the call, as futoin-asyncsteps' sanity check
        if (CUR_ROOT !== null && CUR_ROOT !== this) {
            ++STEALS; // in a callback of another flow
            STEP_H = -1; // its await() then adds the sub-step that runs later
        }
        return new Promise((resolve, reject) => {
            this.add((as, res) => {
                resolve(res);
            });
            this._reject = reject;
            const h = this._run();
            if (h !== undefined) {
                reg.SH[SH_OWNER] = h; // promise() keeps the burst, as there (its run may have ended)
                reg.SH[SH_OWNER_BR] = 0;
            }
        });
    }

    newInstance() {
        return new AsyncSteps(null, this._async_tool);
    }

    isAsyncSteps() {
        return true;
    }
}

/* root-level steps without onerror from ops[i] on: where they end */
const batchEnd = (ops, i) => {
    let j = i + 1;
    while (j < ops.length && typeof ops[j] === 'function') {
        ++j;
    }
    return j;
};

/* their functions: a batch, one step to C (runBatch runs them from `at`);
 * the operations themselves when they are all plain steps (execute() took
 * them over) */
const batchOf = (ops, i, j) => {
    const fns = i === 0 && j === ops.length ? ops : ops.slice(i, j);
    // lead: how often in a row its first step to run did more than complete
    return { fns, at: 0, lead: 0 };
};

/* what _queue shows for a queued parallel() or loop */
const queuedCall = function queuedCall(as) {};

/* C roots made before execute() and never run go with their JS object */
const cleanup = new FinalizationRegistry((h) => {
    N.rootFree(h);
});

/* ---- idle flows ----
 * A flow waiting for an event that nothing can deliver any more goes with
 * the garbage collector in futoin-asyncsteps. Ours are held by C and by the
 * registries here, so after major garbage collections the flows that only a
 * call on their steps can move on (src/steps.c sweep) are held weakly: the
 * root through a WeakRef, the callbacks their flow keeps inside the root
 * (FNS holds HELD for them). Any native call on a handle of such a flow
 * wakes it (onWake) before it does anything; a collected root ends its flow
 * without JS (abandon). */
const { WEAK } = reg;
const HELD = function held() {}; // FNS entry of a callback its root holds
const abandoned = new FinalizationRegistry((h) => {
    WEAK.delete(h % SLOT);
    N.abandon(h);
});

const sweepIdle = () => {
    const list = N.sweep();
    for (let i = 0; i < list.length;) {
        const slot = list[i];
        const h = slot + list[i + 1] * SLOT;
        const n = list[i + 2];
        i += 3;
        const root = ROOTS[slot];
        if (root === undefined || root._h !== h) {
            i += n; // not ours to hold (cannot happen): it stays as it is
            N.valid(h); // wakes it in C
            continue;
        }
        const held = [];
        for (const end = i + n; i < end; ++i) {
            const k = list[i];
            if (FNS[k] !== HELD) {
                held.push(k, FNS[k], FNS[k + 1]);
                FNS[k] = HELD;
                FNS[k + 1] = HELD;
            }
        }
        root._held = held;
        ROOTS[slot] = undefined;
        --reg.running;
        WEAK.set(slot, new WeakRef(root));
        abandoned.register(root, h, root);
    }
};

/* after a major garbage collection (the one that can take flows that waited
 * long), the flows that became idle since the last sweep: an old probe
 * object dies with it. A probe is old once it survived two collections of
 * the young generation, which a young probe tells. (A sweep after every
 * young collection held most flows of a burst of waiting ones weakly, and
 * woke them again: about 4 us a flow.) */
let probing = false;
let probeHeld = null; // the old probe while it ages
let probeAge = 0;
const probe = new FinalizationRegistry(() => {
    probing = false;
    if (reg.running >= 16) {
        sweepIdle();
    }
    if (reg.running !== 0) {
        probeArm();
    }
});
const youngProbe = new FinalizationRegistry(() => {
    if (probeHeld !== null) {
        if (++probeAge >= 2) {
            probeHeld = null; // old now: it goes with the next major collection
        } else {
            youngProbe.register({}, 0);
        }
    }
});
const probeArm = () => {
    probing = true;
    probeHeld = {};
    probeAge = 0;
    probe.register(probeHeld, 0);
    youngProbe.register({}, 0);
};

/* C: the weak root in `slot` is used again */
const onWake = (slot) => {
    const w = WEAK.get(slot);
    const root = w !== undefined ? w.deref() : undefined;
    WEAK.delete(slot);
    if (root === undefined) {
        return 0;
    }
    abandoned.unregister(root);
    const held = root._held;
    root._held = undefined;
    for (let i = 0; i < held.length; i += 3) {
        const k = held[i];
        FNS[k] = held[i + 1];
        FNS[k + 1] = held[i + 2];
    }
    ROOTS[slot] = root;
    ++reg.running;
    if (!probing) {
        probeArm(); // the sweep that held it weakly may have left none armed
    }
    return 0;
};

/* ---- dispatchers called by C ---- */

const rootOf = (r) => {
    if (typeof r !== 'number') {
        return r;
    }
    const root = ROOTS[r];
    if (root === undefined && WEAK.has(r)) {
        onWake(r); // woken without a call on its handles (cannot happen): held again
        return ROOTS[r];
    }
    return root;
};

/* a step, loop body or repeat body: fn(as, ...values) */
/* fn(as, ...values) as the step `as` of `root`: its calls are queued
 * meanwhile; what it throws becomes the flow's error (non-zero result) */
const invoke = (root, as, fn, n, a0, a1, a2, a3) => {
    const prev = CUR;
    const prevRoot = CUR_ROOT;
    CUR = as._h;
    CUR_ROOT = root;
    try {
        call(as, fn, n, a0, a1, a2, a3);
    } catch (e) {
        thrown(root, as, e, prev, prevRoot);
        return 1;
    }
    if ((as._f & F_AWAIT) !== 0) {
        awaitReturned(as);
    }
    if (CANCELLED_H === CUR) {
        CANCELLED_H = -1; // its handle goes with the flow
    }
    CUR = prev;
    CUR_ROOT = prevRoot;
    return 0;
};

/* the callback of step `as` threw e: back to the step that ran before,
 * then e becomes the flow's error */
const thrown = (root, as, e, prev, prevRoot) => {
    CUR = prev;
    CUR_ROOT = prevRoot;
    onThrow(root, as, e);
};

/* fn(as, ...values): n values in a0..a3, or -1 and an array in a0; an
 * error handler (n = CALL_HANDLER) gets this === null, as there */
const CALL_HANDLER = -2;
const call = (as, fn, n, a0, a1, a2, a3) => {
    switch (n) {
    case 0: fn(as); break;
    case CALL_HANDLER: fn.call(null, as, a0); break;
    case 1: fn(as, a0); break;
    case 2: fn(as, a0, a1); break;
    case 3: fn(as, a0, a1, a2); break;
    case 4: fn(as, a0, a1, a2, a3); break;
    default: fn(as, ...a0);
    }
};

/* room: the steps the burst allows after this one (undefined: C called) */
const onStep = (r, h, code, a0, a1, a2, a3, room) => {
    const root = rootOf(r);
    const k = code >>> 5;
    const fn = FNS[k];
    if ((code & 24) === MODE_STEP) {
        FNS[k] = undefined;
        if (typeof fn !== 'function') {
            return runBatch(root, h, fn, (code & 7) - 1, a0, a1, a2, a3, room);
        }
    }
    const n = (code & 7) - 1;
    const as = stepStarts(root, h, fn, code & 24);
    const touch = reg.SH[SH_TOUCH];
    if (invoke(root, as, fn, n, a0, a1, a2, a3) !== 0) {
        return F_DONE;
    }
    if (room === undefined) {
        return stepFlags(root, as, h);
    }
    if ((code & 24) !== MODE_STEP) {
        return runIters(root, as, h, fn, code & 24, a0, room, touch);
    }
    if (as._f === F_ADDED) {
        const last = mergeInner(root, as, h, Math.min(room, reg.SH[SH_BUDGET]), touch, false);
        if (MERGED !== 0) {
            BATCH = MERGED;
            return (last === null ? F_DONE : stepFlags(root, last, h)) | F_BATCH;
        }
    }
    return stepFlags(root, as, h);
};

/* the queue holds nothing but a success() of numbers by step h, which JS
 * can take itself (runBatch, runIters) */
const onlySuccessOf = (SH, h) => SH[SH_OPS_N] === 6 && SH[SH_OPS + 3] === OP_SUCCESS && reg.target === h;

/* what was queued was taken here: C never sees it */
const dropQueued = (SH) => {
    SH[SH_OPS_N] = 0;
    SH[SH_NUM_N] = 0;
};

// the loop body whose further iterations runIters runs, and how many ran
// beyond the one C handed over (onThrow tells C of them first)
let ITER_H = -1;
let ITER_K = 0;

/* A loop or repeat body h (iteration i) ran (`as`): while it only
 * completes (success() of numbers or nothing), its next iterations run here
 * as part of it, and so do sub-steps it added that mergeInner can run; not
 * when a native call touched a flow, nor past the steps C allows
 * (SH_BUDGET: the burst, and what a repeat has left) or `room` allows.
 * C counts the iterations at hostDone (F_ITERS, their number in SH_ITER),
 * or before a later one's break, continue or error (onThrow), and spends
 * the merged sub-steps (F_BATCH). Each iteration has an interface of its
 * own, ended when the next one starts, as from C. */
const runIters = (root, as, h, fn, mode, i, room, touch) => {
    const SH = reg.SH;
    const n = mode === MODE_REPEAT_BITS ? 1 : 0;
    const iters = SH[SH_BUDGET];
    const prevH = ITER_H;
    const prevK = ITER_K;
    ITER_H = h;
    ITER_K = 0;
    const mark = MERGED_AS.length;
    let left = room;
    let k = 0;
    let merged = 0;
    for (;;) {
        if (as._f === F_ADDED) {
            as = mergeInner(root, as, h, left, touch, true);
            merged += MERGED;
            left -= MERGED;
            if (as === null || MERGED === 0) {
                break; // it threw, or C runs its sub-steps
            }
        }
        if (as._f > F_DONE || as._next !== null) {
            break;
        }
        if (SH[SH_OPS_N] !== 0) {
            if (!onlySuccessOf(SH, h)) {
                break;
            }
            dropQueued(SH); // a body's success() values go nowhere
        }
        if (k + merged >= iters || left <= 0 || SH[SH_TOUCH] !== touch) {
            break;
        }
        as._f |= F_DONE;
        as._h = DEAD_H; // as a body C ended
        if (MERGED_AS.length !== mark) {
            mergedDrop(mark, true);
        }
        ITER_K = ++k;
        --left;
        as = stepStarts(root, h, fn, mode);
        // a loop() body gets no value (`i` is what its step got, any type)
        if (invoke(root, as, fn, n, n !== 0 ? i + k : undefined) !== 0) {
            as = null; // onThrow told C of the iterations
            break;
        }
    }
    if (MERGED_AS.length !== mark) {
        mergedDrop(mark, false);
    }
    ITER_H = prevH;
    ITER_K = prevK;
    let f = merged !== 0 ? F_BATCH : 0;
    BATCH = merged;
    if (as === null) {
        return f | F_DONE;
    }
    if (k !== 0) {
        f |= F_ITERS;
        SH[SH_ITER] = k;
    }
    return stepFlags(root, as, h) | f;
};

let MERGED = 0; // the sub-steps mergeInner ran
const MERGED_AS = []; // interfaces of steps done by way of merged sub-steps (runBatch marks them ended)

/* Step h's callback returned having added one plain JS sub-step without
 * onerror and done nothing else: that sub-step is the next and last to run
 * under h, and h completes as it does. It runs now as part of h (its calls
 * go to h, which has the same error handler above it), one engine step less;
 * again while the sub-step does the same. So does the section of a sync()
 * on a Throttle that lets the flow in now: a Throttle has nothing to unlock. Not when a native call touched a
 * flow meanwhile (`touch`: SH_TOUCH before the callback), nor past `left`,
 * the steps the burst allows. Returns the interface of the last step run
 * (its _f tells what h did), null if it threw (the flow's error then);
 * MERGED: how many ran. inBatch: h goes on after them (the interfaces of
 * the merged parents go to MERGED_AS, for runBatch to end them). */
const mergeInner = (root, as, h, left, touch, inBatch) => {
    const SH = reg.SH;
    let merged = 0;
    while (merged < left && as._f === F_ADDED && as._next === null && SH[SH_OPS_N] === 6 &&
        reg.target === h && SH[SH_TOUCH] === touch) {
        const op = SH[SH_OPS + 3];
        let k = SH[SH_OPS + 4];
        if (op === OP_SYNC) {
            const b = SH[SH_OPS + 5]; // k | has onerror
            if ((b & 1) !== 0 || THROTTLES[k] !== true || !N.throttleEnter(k)) {
                break; // the engine's sync step takes it (and may wait)
            }
            k = b;
        } else if (op !== OP_ADD || SH[SH_OPS + 5] !== 0) {
            break;
        }
        const fn = FNS[k];
        if (typeof fn !== 'function') {
            break;
        }
        SH[SH_OPS_N] = 0;
        FNS[k] = undefined;
        FREE.push(k);
        // out of bounds from now on, as a parent step inside its sub-step
        as._f = F_ADDED | F_MERGED;
        if (inBatch) {
            MERGED_AS.push(as);
        }
        as = stepStarts(root, h, fn, MODE_STEP);
        ++merged;
        if (invoke(root, as, fn, 0) !== 0) {
            as = null;
            break;
        }
    }
    MERGED = merged;
    return as;
};

/* drop the interfaces of MERGED_AS from `mark` on; ended: their steps
 * ended while step h goes on (else they end with h) */
const mergedDrop = (mark, ended) => {
    for (let i = MERGED_AS.length - 1; i >= mark; --i) {
        const as = MERGED_AS.pop();
        if (ended) {
            as._f |= F_DONE;
            as._h = DEAD_H;
        }
    }
};

/* the interface of step h, whose callback fn (of `mode`) is about to run */
const stepStarts = (root, h, fn, mode) => {
    root._jsErr = null; // a step runs: any earlier error was handled
    if (!isProduction) {
        execStack(root, fn, mode);
    }
    STEP_H = h;
    return new AsyncStepProtector(root, h);
};

/* what the step h did, for C, once its callback returned */
const stepFlags = (root, as, h) => {
    const f = as._f;
    if ((f & (F_WAIT | F_DONE)) === F_WAIT) {
        root._waitH = h;
    }
    if (as._next !== null && !(f & (F_DONE | F_ADDED | F_WAIT))) {
        successN(h, as._next, true); // successStep(): as a success() inside the callback
        return F_DONE;
    }
    return f;
};

let BATCH = 0; // the steps runBatch ran beyond the first (SH_BATCH)

/* A batch: root-level steps without onerror that execute() gave C as one
 * step h. They run here one after another while each only completes (no
 * values, successStep(), success() of numbers) and no native call touched a
 * flow meanwhile; each gets the values of the one before, as from C. The
 * step that does more is the step h from then on, and the rest of the batch
 * is queued right after it. Every step of it counts against the burst, as
 * a step C hands over one by one. */
const runBatch = (root, h, batch, n, a0, a1, a2, a3, room) => {
    const SH = reg.SH;
    const fns = batch.fns;
    let left = room === undefined ? fns.length : Math.min(room, SH[SH_BUDGET]);
    if (SH[SH_OPS_N] !== 0) {
        left = 0; // success() values are read back from an empty queue only
    }
    const touch = SH[SH_TOUCH];
    const at = batch.at;
    let i = at;
    let as;
    // every step of the batch is step h of root (invoke() for all of them)
    const prev = CUR;
    const prevRoot = CUR_ROOT;
    CUR = h;
    CUR_ROOT = root;
    let merged = 0;
    const mark = MERGED_AS.length;
    for (;;) {
        const fn = fns[i];
        as = stepStarts(root, h, fn, MODE_STEP);
        try {
            call(as, fn, n, a0, a1, a2, a3);
        } catch (e) {
            thrown(root, as, e, prev, prevRoot);
            BATCH = i - at + merged; // set after the callbacks: they may run batches too
            return F_DONE | F_BATCH; // the rest goes with the error
        }
        if ((as._f & F_AWAIT) !== 0) {
            awaitReturned(as);
        }
        ++i;
        if (as._f === F_ADDED && left !== 0) {
            const last = mergeInner(root, as, h, left, touch, true);
            merged += MERGED;
            left -= MERGED;
            if (last === null) {
                mergedDrop(mark, false);
                CUR = prev;
                CUR_ROOT = prevRoot;
                BATCH = i - 1 - at + merged;
                return F_DONE | F_BATCH;
            }
            as = last;
        }
        const f = as._f;
        if (i === fns.length || left === 0 || (f & (F_ADDED | F_WAIT)) !== 0 || SH[SH_TOUCH] !== touch) {
            break;
        }
        if (SH[SH_OPS_N] !== 0) {
            // only its success() of numbers: the next step takes them
            if (!onlySuccessOf(SH, h)) {
                break;
            }
            n = SH[SH_OPS + 4];
            const first = SH[SH_OPS + 5];
            const nums = reg.nums;
            a0 = n > 0 ? nums[first] : undefined;
            a1 = n > 1 ? nums[first + 1] : undefined;
            a2 = n > 2 ? nums[first + 2] : undefined;
            a3 = n > 3 ? nums[first + 3] : undefined;
            dropQueued(SH);
        } else if ((f & F_DONE) !== 0) {
            break; // not a success() this batch can see
        } else if (as._next !== null) {
            const v = as._next; // successStep()
            n = v.length;
            if (n > 4) {
                n = -1;
                a0 = v;
            } else {
                a0 = v[0];
                a1 = v[1];
                a2 = v[2];
                a3 = v[3];
            }
        } else {
            n = 0;
        }
        as._f = f | F_DONE;
        as._h = DEAD_H; // as a step C freed
        if (MERGED_AS.length !== mark) {
            mergedDrop(mark, true);
        }
        --left;
    }
    if (MERGED_AS.length !== mark) {
        mergedDrop(mark, false);
    }
    CUR = prev;
    CUR_ROOT = prevRoot;
    if (CANCELLED_H === h) {
        CANCELLED_H = -1;
    }
    BATCH = i - 1 - at + merged;
    if (i < fns.length) {
        // the rest goes right after this step (queued steps go in front)
        if (i === at + 1 && (as._f & F_ADDED) !== 0 && ++batch.lead >= 2) {
            // its steps keep adding steps: each the engine's own step from now
            // on (steps that wait stay a batch: thousands of flows waiting
            // hold one engine step each, not one per step left)
            for (let j = fns.length - 1; j >= i; --j) {
                queue(h, OP_FOLLOW, register(fns[j], undefined), 0);
            }
        } else {
            if (i !== at + 1) {
                batch.lead = 0;
            }
            batch.at = i; // this step's batch object is its rest's now
            queue(h, OP_FOLLOW, register(batch, undefined), OP_BATCH);
        }
    }
    return stepFlags(root, as, h) | F_BATCH;
};

const onThrow = (root, as, e) => {
    const succeeded = (as._f & F_DONE) !== 0 && e !== root._raised;
    dropToolTimeout(as._h);
    as._f |= F_DONE;
    if (as._h === CANCELLED_H || !isLiveAs(as)) {
        // its flow was cancelled meanwhile: nothing handles it, as in futoin-asyncsteps
        CANCELLED_H = -1;
        if (e !== root._raised) {
            root.state.last_exception = e;
        }
        root._raised = NOT_RAISED;
        return;
    }
    if (as._h === ITER_H && ITER_K !== 0) {
        N.loopRan(ITER_H, ITER_K); // a continue goes on after this iteration
        ITER_K = 0;
    }
    if (e === root._raised) {
        root._raised = NOT_RAISED;
        const kind = root._raiseKind;
        if (kind === RAISE_ERROR) {
            root.state.last_exception = e;
            keepStateForCancel(as);
            errorInC(root, as._h, root._raiseCode, root._raiseInfo);
        } else {
            loopCtlInC(root, as._h, kind, root._raiseCode, e);
        }
        return;
    }
    root.state.last_exception = e;
    if (succeeded) {
        // thrown after its success(): the misuse C reports (InternalError),
        // with the thrown value kept as last_exception
        root.state.error_info = AFTER_SUCCESS;
        errorInC(root, as._h, 'InternalError', AFTER_SUCCESS);
        return;
    }
    // a thrown exception leaves error_info as it was, as in futoin-asyncsteps:
    // C keeps the same, so every handler further out sees it
    keepStateForCancel(as);
    errorInC(root, as._h, errorCode(e), infoArg(root.state.error_info));
};

/* a step that failed in its callback: its cancel handler, which C runs on a
 * handle of its own, still reads the state through the step's interface */
const keepStateForCancel = (as) => {
    if (as._ck >= 0) {
        as._f |= F_THREW;
        THREW_AS = as;
    }
};

/* the values of a successStep() before the first sub-step `as` adds, which
 * gets them (as in futoin-asyncsteps), else null */
const takeNext = (as) => {
    const values = as._next;
    if (values === null || (as._f & F_ADDED) !== 0) {
        return null;
    }
    as._next = null;
    return values;
};

/* func, called with `values` whatever it is handed */
const withValues = (func, values) => function(as) {
    return func.call(this, as, ...values);
};

/* the error is the one JS raised (its state is set already), or else one of
 * C (a C step, Timeout, a misuse): then the state is set as futoin-asyncsteps'
 * error() would */
const syncErrorState = (root, code, info) => {
    const state = root.state;
    const SH = reg.SH;
    const fresh = SH[reg.SH_ERR_FRESH] !== 0;
    SH[reg.SH_ERR_FRESH] = 0;
    if (root._jsErr !== code && typeof root._jsErr !== 'string' && cCode(root._jsErr) === code) {
        code = root._jsErr; // an Error's message that is not a string: the handlers get it as it is
    }
    // '' and no error_info are the same to C
    if (root._jsErr !== code || (root._jsInfo || undefined) !== info) {
        state.error_info = info;
        state.last_exception = new Error(code);
    } else if (fresh) {
        // out of a parallel branch: raised anew on the parallel step with
        // the error_info the state has, as futoin-asyncsteps' ParallelStep
        // does with error(code, state.error_info): a new Error
        state.last_exception = new Error(code);
    }
    root._jsErr = code; // handlers further out see the same error
    root._jsInfo = info;
    return code;
};

/* the handlers on the way of a break()/continue() see the Error it threw,
 * and its label as error_info */
const showLoopCtl = (root, code) => {
    const e = root._loopE;
    root.state.last_exception = e !== null && e.message === code ? e : new Error(code);
    root.state.error_info = root._jsInfo;
};

/* state.async_stack: the step functions run so far (a loop body restarts
 * from where its loop began), as futoin-asyncsteps keeps outside production */
const execStack = (root, fn, mode) => {
    let es = root._es;
    if (es === undefined) {
        es = root._es = [];
    }
    if (mode !== MODE_STEP) {
        const mark = root._esLoop;
        if (mark !== undefined && mark.fn === fn) {
            const len = mark.len;
            if (es.length !== len + 1) {
                // the body added steps: back to [..., body] (pop() is cheap,
                // a store to length is a runtime call)
                while (es.length > len + 1) {
                    es.pop();
                }
                if (es.length <= len) {
                    es.push(fn);
                }
            }
            return; // the body of the same loop again
        }
        root._esLoop = { fn, len: es.length };
    } else if (es.length >= 1000) {
        es.splice(0, 500);
    }
    es.push(fn);
};

/* code undefined: the error is root._jsErr, its state set already */
const onError = (r, h, k, code, info) => {
    const root = rootOf(r);
    const fn = FNS[k];
    const state = root.state;
    if (code === undefined) {
        code = root._jsErr;
    } else {
        code = syncErrorState(root, code, info);
    }
    if (!isProduction) {
        const es = root._es || (root._es = []);
        es.push(fn);
        state.async_stack = es;
    } else {
        state.async_stack = NO_EXEC_STACK;
    }
    const loopCtl = code === LOOP_BREAK || code === LOOP_CONT;
    if (loopCtl) {
        showLoopCtl(root, code);
    }
    const as = new AsyncStepProtector(root, h);
    STEP_H = -1; // its await() adds a sub-step, as futoin-asyncsteps
    if (invoke(root, as, fn, CALL_HANDLER, code) !== 0) {
        return F_DONE;
    }
    if ((as._f & F_ADDED) !== 0) {
        ++root._ehAdded; // movedOn() asks C from now on
    }
    if (loopCtl && (as._f & (F_ADDED | F_WAIT | F_DONE)) === 0) {
        // on to its loop, which leaves no exception behind, nor its label
        // in error_info, as futoin-asyncsteps (as after a cancel handler)
        state.last_exception = null;
        state.error_info = undefined;
    }
    return as._f;
};

const CANCEL_DONE = () => {}; // FNS entry of a cancel handler whose step completed from outside

/* code: the error that unwinds, true for the root's own (_jsErr), undefined
 * when none (a cancel()) */
const onCancel = (r, h, k, code, info) => {
    const root = rootOf(r); // first: a weak root's callbacks come back with it
    dropToolTimeout(h);
    let loopCtl = false;
    if (code !== undefined && root) {
        if (code === true) {
            code = root._jsErr;
        } else {
            code = syncErrorState(root, code, info); // an error from C unwinds (a Timeout): C told it once
            keepAsyncStack(root); // as every error does in futoin-asyncsteps, also with no handler after
        }
        loopCtl = code === LOOP_BREAK || code === LOOP_CONT;
    }
    const fn = FNS[k];
    if (fn === CANCEL_DONE) {
        return 0;
    }
    if (loopCtl) {
        // on their way to a loop, which leaves no exception behind: seen
        // only here, as in futoin-asyncsteps
        showLoopCtl(root, code);
    }
    const as = new AsyncStepProtector(root, h);
    as._f = F_OUT;
    const ar = root ? root._ar : undefined;
    const threw = THREW_AS;
    let threwH = 0;
    let threwG = 0;
    if (threw !== null) {
        THREW_AS = null;
        if (threw._ck === k) {
            // its step lives on in this call's handle while the handler runs
            threwH = threw._h;
            threwG = threw._g;
            threw._h = h;
            threw._g = as._g;
        }
    }
    try {
        if (ar === undefined || ar === IN_AR) {
            fn.call(null, as); // this === null, as futoin-asyncsteps
        } else {
            inFlowContext(ar, fn, as);
        }
    } catch (e) {
        // a cancel handler cannot fail the flow any more
        process.emitWarning(`futoin-polyglot: exception in a cancel handler: ${describe(e)}`);
    }
    if (threwH !== 0) {
        threw._h = threwH;
        threw._g = threwG;
    }
    if (loopCtl) {
        root.state.last_exception = null;
        root.state.error_info = undefined;
    }
    return 0;
};

/* the flow ended with an unhandled error */
const onFinish = (r, code, info) => {
    const root = rootOf(r);
    if (root) {
        syncErrorState(root, code, info);
        if (code === LOOP_BREAK || code === LOOP_CONT) {
            showLoopCtl(root, code); // no loop took it: the Error it threw stays, as futoin-asyncsteps
        }
        keepAsyncStack(root);
    }
    const reject = root && root._reject;
    if (reject) {
        root._reject = null;
        reject(new Error(codeString(root._jsErr)));
    }
    return 0;
};

/* key < 0: the period of the Throttle or Limiter of sync id -key starts:
 * while setInterval() looks mocked (a test's fake clock), on it, as
 * futoin-asyncsteps runs each period on the global setInterval() of the
 * time: 1 (else 0: C's timer); key > 0: an AsyncToolTest event is due */
const onCall = (key, ms) => {
    if (key < 0) {
        return periodStart(-key, ms);
    }
    AsyncToolTest._fire(key);
    return 0;
};

const intervalMocked = fakeTimerCheck('setInterval', 'clearInterval', require('timers').setInterval);

const periodStart = (id, ms) => {
    const ref = reg.PERIODIC[id];
    const obj = ref !== undefined ? ref.deref() : undefined;
    if (obj === undefined || !intervalMocked()) {
        return 0;
    }
    const s = obj._s;
    const iv = globalThis.setInterval(() => {
        if (!N.syncPeriodEnd(s)) {
            globalThis.clearInterval(iv);
        }
    }, ms);
    return 1;
};

/* plain JS steps the engine set aside: run them here, one call into C each
 * (hostDone() goes on with the flow and hands over the next one) */
const HOST_ARGS = [undefined, undefined, undefined, undefined];

// a drain in progress takes the steps that nested calls set aside; one
// drain runs a burst of 100 steps, the rest waits for a later loop turn
const draining = [false, false];

/* one step or error handler C handed over (r: its root, or its slot) */
const hostCall = (r, h, code, a0, budget) => {
    const steals = STEALS;
    const flags = (code & 24) === MODE_ERROR_BITS ?
        onError(r, h, (code >>> 5) + 1, (code & 7) === CODE_SAME ? undefined : HOST_ARGS[0], HOST_ARGS[1]) :
        onStep(r, h, code, a0, HOST_ARGS[1], HOST_ARGS[2], HOST_ARGS[3], budget - 1);
    return steals === STEALS ? flags : flags | F_YIELD;
};

/* this library's own code threw while it ran step h (user code's
 * exceptions never get here: a state object that refuses a write, say):
 * the step fails with InternalError, as a step C calls does
 * (src/steps.c report_js_exception), and the drain goes on; else C would
 * hand the step out for ever */
const hostCallFailed = (h, e) => {
    CUR = -1;
    CUR_ROOT = null;
    let info;
    try {
        info = String(e instanceof Error ? e.message : e);
    } catch {
        info = 'exception in futoin-polyglot';
    }
    N.error(h, 'InternalError', info);
    if (!LIB_THREW) {
        LIB_THREW = true; // thrown on once the drain is over, as futoin-asyncsteps throws it
        LIB_EXC = e;
    }
    return F_DONE;
};
let LIB_THREW = false;
let LIB_EXC;

/* the exception hostCallFailed() took, out of the outermost drain */
const throwLibExc = () => {
    if (LIB_THREW) {
        const e = LIB_EXC;
        LIB_THREW = false;
        LIB_EXC = undefined;
        throw e;
    }
};

/* the AsyncResource whose scope JS runs in now (a flow's _ar), if any */
let IN_AR;

/* fn(...args) in the async context of a flow (root._ar) */
const inFlowContext = (ar, fn, ...args) => {
    const prev = IN_AR;
    IN_AR = ar;
    try {
        return ar.runInAsyncScope(fn, null, ...args);
    } finally {
        IN_AR = prev;
    }
};

/* run the JS steps C hands over, the first one's code in SH[9], until
 * none is left or the burst of 100 is used up; nested: HOST_NESTED (only
 * the steps of the flow that execute() started inside a step) or 0. Returns
 * how much of the burst it used */
const runHost = (testBit, nested) => {
    const SH = reg.SH;
    const NUMS = reg.nums;
    let budget = BURST;
    let code = SH[9];
    while (code !== 0) {
        const h = SH[5];
        const own = SH[11]; // a step without error handler: its index is ours to free
        let a0 = HOST_ARGS[0];
        if ((code & 7) === CODE_NUM1) {
            a0 = NUMS[0]; // one number, in shared memory
            code -= CODE_NUM1 - 2;
        } else if ((code & 24) === MODE_REPEAT_BITS) {
            a0 = SH[7]; // the iteration (-1: past int32, in HOST_ARGS[0])
            if (a0 < 0) {
                a0 = HOST_ARGS[0];
            }
        }
        const root = reg.arFlows === 0 ? undefined : rootOf(SH[6]);
        const ar = root !== undefined ? root._ar : undefined;
        let flags;
        try {
            flags = ar === undefined || ar === IN_AR ? hostCall(SH[6], h, code, a0, budget) :
                inFlowContext(ar, hostCall, root, h, code, a0, budget);
        } catch (e) {
            flags = hostCallFailed(h, e);
        }
        if ((flags & F_BATCH) !== 0) {
            budget -= BATCH;
            SH[SH_BATCH] = BATCH;
        }
        if ((flags & F_ITERS) !== 0) {
            budget -= SH[SH_ITER];
        }
        if (own !== 0) {
            FREE.push(code >>> 5); // onStep cleared FNS[k]; FNS[k + 1] is empty
        }
        SH[5] = h; // a nested drain may have changed it
        SH[8] = (flags & ~F_YIELD) | testBit | nested | (--budget > 0 && (flags & F_YIELD) === 0 ? HOST_TAKE : 0);
        N.hostDone();
        code = SH[9];
    }
    if (TOOL_TIMEOUTS.size !== 0) {
        sweepToolTimeouts();
    }
    return BURST - budget;
};

/* the steps of one flow, the first one's code in SH[9] (execute(),
 * flowNow()), nested in a drain that runs or as a drain of its own */
const runAlone = (test, more = 0) => {
    const which = test ? 1 : 0;
    const testBit = test ? HOST_TEST : 0;
    if (draining[which]) {
        return runHost(testBit, HOST_NESTED | more);
    }
    draining[which] = true;
    let used;
    try {
        used = runHost(testBit, HOST_NESTED | more);
    } finally {
        draining[which] = false;
        reg.sweep(); // runs that ended here let go of their steps now (no later flow may come)
    }
    throwLibExc();
    return used;
};

/* the steps set aside for JS, in a burst (called by C on a loop turn);
 * -1 when a drain runs already (the steps are its) */
const drainHost = (test) => {
    const which = test ? 1 : 0;
    if (draining[which]) {
        return -1;
    }
    draining[which] = true;
    try {
        const testBit = test ? HOST_TEST : 0;
        reg.SH[8] = testBit;
        N.hostNext();
        runHost(testBit, 0);
    } finally {
        draining[which] = false;
    }
    throwLibExc();
    return 0;
};

/* a loop turn of ours (or a test event) runs the steps set aside */
const turnDrains = (test) => {
    reg.reactionSteps = 0;
    try {
        return drainHost(test);
    } finally {
        reg.sweep();
    }
};

/* C's turn left the steps after a step timeout's handlers of the running
 * root with handle h (false: of no flow it names): they go on in a
 * setImmediate() of their own, queued now, as futoin-asyncsteps'
 * callImmediate() there; else in our shared turn */
const deferFlow = (h) => {
    const root = h === false ? undefined : ROOTS[h & SLOT_MASK];
    if (root === undefined || root._h !== h || root._test) {
        reg.armImmediate();
    } else {
        goOnLater(root);
    }
};

reg.initShared(N.init(onStep, onError, onCancel, onFinish, onCall, turnDrains, onWake, isProduction, HOST_ARGS,
    deferFlow));
LIVE = reg.LIVE;
GENS = reg.GENS;
reg.drainHost = drainHost;
/* roots whose flows an event made ready to go on before it ends */
reg.afterEvent = [];
reg.runAfterEvent = () => {
    const roots = reg.afterEvent;
    while (roots.length !== 0) {
        const root = roots.shift();
        if (root._h !== undefined && N.flowNow(root._h, true)) {
            runAlone(true, HOST_ERRORS);
        }
    }
};

/* one live instance of each class the engine's hot code checks: V8's
 * optimized code holds the maps it checks weakly, and a full GC while no
 * flow runs (an idle process) would drop them with the last instance,
 * deoptimizing that code, to be compiled again under the next load */
reg.mapAnchors = (() => {
    const r = new AsyncSteps();
    return [r, new AsyncStepProtector(r, 0), new ParallelStep(r, undefined), new AsyncResource('FutoInAsyncSteps')];
})();

/* futoin-asyncsteps' own sync objects (a dependency that still requires
 * its Mutex, Throttle or Limiter) work by setting that library's internals
 * on the step interface: here that fails the step at once, where their
 * section would else go unguarded or not run at all. Accessors on the
 * prototype: instances keep their shape, and a step pays nothing. */
const FOREIGN_SYNC = "a sync object of futoin-asyncsteps (not futoin-polyglot's Mutex, Throttle or Limiter) " +
    'set its internals on the step; use the ones of futoin-polyglot';
const foreignSync = {
    get() {
        this.error('InternalError', FOREIGN_SYNC);
    },
    set(v) {
        this.error('InternalError', FOREIGN_SYNC);
    },
    configurable: true,
};
Object.defineProperties(AsyncStepProtector.prototype, {
    _queue: foreignSync,
    _on_cancel: foreignSync,
    _on_error: foreignSync,
    _call_args: foreignSync,
});

// for lib/AsyncStepProtector and lib/ParallelStep; not enumerable, as
// futoin-asyncsteps' class has no statics
Object.defineProperties(AsyncSteps, {
    AsyncStepProtector: { value: AsyncStepProtector, writable: true, configurable: true },
    ParallelStep: { value: ParallelStep, writable: true, configurable: true },
});

module.exports = AsyncSteps;
