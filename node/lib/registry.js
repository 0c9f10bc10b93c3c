'use strict';

/**
 * @file What JS and C share: the registry of JS callbacks (C knows only
 * their indices), the running roots (C names them by slot), and the
 * Int32Array through which a step callback queues its cheap operations
 * (applied by C when the callback returns) and C hands back released
 * indices and finished roots. Layout: SH_* in src/addon.h.
 */

const N = require('./binding');

const SH_OPS_N = 0;
const SH_FREED_N = 1;
const SH_FIN_N = 2;
const SH_SPILL = 4;
const SH_OPS = 16;
const SH_OPS_CAP = 3072;
const SH_FREED = SH_OPS + SH_OPS_CAP;
const SH_FIN = SH_FREED + 8192;

const OP_TARGET = 1;
const OP_SUCCESS = 8;
const SLOT = 2097152; // handles are slot + gen * 2^21 (src/addon.h JH_SLOT_BITS)

// callbacks by index: fn at k, its onerror at k + 1; never at 0, as a step
// code of 0 (index 0, more than four values) would read as "no step"
const FNS = [undefined, undefined];
const FREE = [];
const ROOTS = []; // running roots by slot
// idle running roots by slot (WeakRef), held as weakly as a flow of
// futoin-asyncsteps: their flows go with them (lib/AsyncSteps.js sweepIdle)
const WEAK = new Map(); // roots held weakly, by slot (few and sparse: an array there went to dictionary mode and back)
const reg = { FNS, FREE, ROOTS, WEAK, SH: null, target: -1 };
reg.running = 0; // roots in ROOTS
// by sync id (OP_SYNC): whether that sync object is a Throttle
reg.THROTTLES = [];
reg.PERIODIC = []; // sync id -> WeakRef of its Throttle or Limiter (lib/syncobj.js periodicInit)

const drainFreed = () => {
    const SH = reg.SH;
    const n = SH[SH_FREED_N];
    for (let i = 0; i < n; ++i) {
        const k = SH[SH_FREED + i];
        FNS[k] = undefined;
        FNS[k + 1] = undefined;
        FREE.push(k);
    }
    SH[SH_FREED_N] = 0;
    if (SH[SH_SPILL] !== 0) {
        for (const k of N.drainSpill()) {
            FNS[k] = undefined;
            FNS[k + 1] = undefined;
            FREE.push(k);
        }
    }
};

/* a free index pair of FNS */
reg.allocK = () => {
    const SH = reg.SH;
    if (SH[SH_FREED_N] !== 0 || SH[SH_SPILL] !== 0) {
        drainFreed();
    }
    if (FREE.length !== 0) {
        return FREE.pop();
    }
    const k = FNS.length;
    FNS.push(undefined, undefined);
    return k;
};

/* the root in `slot` finished its run (handle h) */
const finished = (slot, h) => {
    const r = ROOTS[slot];
    if (r !== undefined && r._h === h) {
        ROOTS[slot] = undefined;
        --reg.running;
        r._h = undefined;
        r._running = false;
        r._direct = false;
        if (r._ar !== undefined) {
            r._ar = undefined; // its run's context goes with it
            --reg.arFlows;
        }
    }
};

/* the handle of the ended run at entry i of the list drainFin() takes */
const finAt = (SH, i) => SH[SH_FIN + i] + SH[SH_FIN + i + 1] * SLOT;

reg.arFlows = 0; // running roots with an async context of their own (_ar)

/* whether root's run ended and waits in the list drainFin() takes (no
 * spill: then it may be in there too) */
reg.finPending = (root) => {
    const SH = reg.SH;
    if (SH[SH_FIN_MORE] !== 0) {
        return true;
    }
    const h = root._h;
    const n = SH[SH_FIN_N];
    for (let i = 0; i < n; i += 2) {
        if (finAt(SH, i) === h) {
            return true;
        }
    }
    return false;
};

/* forget roots whose flows ended */
reg.drainFin = () => {
    const SH = reg.SH;
    const n = SH[SH_FIN_N];
    for (let i = 0; i < n; i += 2) {
        finished(SH[SH_FIN + i], finAt(SH, i));
    }
    SH[SH_FIN_N] = 0;
    if (SH[SH_FIN_MORE] !== 0) {
        const more = N.drainFinSpill();
        for (let i = 0; i < more.length; i += 2) {
            finished(more[i], more[i] + more[i + 1] * SLOT);
        }
    }
};

/* roots whose runs ended and callback indices C released, taken now: as
 * the event loop goes idle after a turn, an await() continuation or an
 * execute() (else what their steps captured waits for a later flow) */
reg.sweep = () => {
    const SH = reg.SH;
    if (SH[SH_FIN_N] !== 0 || SH[SH_FIN_MORE] !== 0) {
        reg.drainFin();
    }
    if (SH[SH_FREED_N] !== 0 || SH[SH_SPILL] !== 0) {
        drainFreed();
    }
};

/* queue op(a, b) for the step or root with handle h (0: the root being
 * executed); C applies the queue before anything else touches a flow */
/* as(step interface or root) adds a step through a sync object's own
 * sync() (a subclass of Mutex, Throttle or Limiter): set by AsyncSteps.js */
reg.stepAdds = (as) => {};

reg.queue = (h, op, a, b) => {
    const SH = reg.SH;
    let n = SH[SH_OPS_N];
    if (n === 0 || reg.target !== h) {
        if (n + 6 > SH_OPS_CAP) {
            N.flush();
            n = 0;
        }
        const slot = h % SLOT;
        SH[SH_OPS + n] = OP_TARGET;
        SH[SH_OPS + n + 1] = slot;
        SH[SH_OPS + n + 2] = (h - slot) / SLOT;
        n += 3;
        reg.target = h;
    } else if (n + 3 > SH_OPS_CAP) {
        N.flush();
        return reg.queue(h, op, a, b);
    }
    SH[SH_OPS + n] = op;
    SH[SH_OPS + n + 1] = a;
    SH[SH_OPS + n + 2] = b;
    SH[SH_OPS_N] = n + 3;
};

/* success(...numbers) of the step h whose callback runs (no values, or 1..4
 * numbers): queued as OP_SUCCESS with the numbers in the Float64Array over
 * the same memory (no JS value crosses into C); false for anything else */
const SH_NUM = SH_FIN + 2048;
const SH_NUM_N = 10;
const SH_NUM_CAP = 1024;
reg.nums = null; // the Float64Array, made with the shared memory
reg.queueSuccess = (h, args) => {
    const n = args.length;
    if (n > 4) {
        return false;
    }
    for (let i = 0; i < n; ++i) {
        if (typeof args[i] !== 'number') {
            return false;
        }
    }
    const SH = reg.SH;
    let first = SH[SH_NUM_N] + 1; // double 0 is what C hands over
    if (first + n > SH_NUM_CAP || SH[SH_OPS_N] + 6 > SH_OPS_CAP) {
        // room for the numbers and the op: queue() must not flush between
        N.flush();
        first = 1;
    }
    const nums = reg.nums;
    for (let i = 0; i < n; ++i) {
        nums[first + i] = args[i];
    }
    SH[SH_NUM_N] = first - 1 + n;
    reg.queue(h, OP_SUCCESS, n, first);
    return true;
};
/* a flow completed from outside goes on in a turn queued now with
 * setImmediate() (looked up at the call, as futoin-asyncsteps' callImmediate()
 * does: fake timers of a test drive it the same way), behind the callbacks
 * queued before; the engine's check handle leaves ready work to it */
const SH_IMM = SH_NUM + 2 * SH_NUM_CAP;
const SH_FIN_MORE = SH_IMM + 1;
const SH_ERR_FRESH = SH_IMM + 2;
const SH_OWNER = SH_IMM + 3;
const SH_TICKET = SH_IMM + 4;
const SH_OWNER_BR = SH_IMM + 6;
// our setImmediate() turns queued and not run yet; while there are any,
// SH_IMM is set and no other turn runs ready work (C clears it when they
// were swallowed, src/driver.c on_check())
let immPending = 0;
/* one of them runs: true when it is the last (the turn of all ready work) */
reg.immediateRuns = () => {
    const SH = reg.SH;
    if (SH[SH_IMM] === 0 || --immPending <= 0) {
        immPending = 0;
        SH[SH_IMM] = 0;
        return true;
    }
    return false;
};
// steps run from await()s' promise reactions since our last loop turn
reg.reactionSteps = 0;
const runImmediate = () => {
    reg.reactionSteps = 0;
    if (reg.immediateRuns()) {
        N.runNow(true); // a loop iteration: due step timers fire too
    }
    reg.sweep();
};
/* fn(arg, arg2) in a setImmediate() queued now */
reg.queueImmediate = (fn, arg, arg2) => {
    const SH = reg.SH;
    if (SH[SH_IMM] === 0) {
        immPending = 0;
    }
    ++immPending;
    SH[SH_IMM] = 1; // (again: on_check() takes 2 for a turn that was swallowed)
    setImmediate(fn, arg, arg2);
};
reg.armImmediate = () => {
    if (reg.SH[SH_IMM] === 0) {
        reg.queueImmediate(runImmediate, undefined);
    }
};
reg.initShared = (SH) => {
    reg.SH = SH;
    reg.LIVE = SH.live; // by slot: the live handle in it, else 0
    reg.GENS = SH.gens; // by slot: how often it was handed out
    reg.nums = new Float64Array(SH.buffer, SH_NUM * 4, SH_NUM_CAP);
};

reg.SLOT = SLOT;
reg.SH_IMM = SH_IMM;
reg.SH_ERR_FRESH = SH_ERR_FRESH;
reg.SH_OWNER = SH_OWNER;
reg.SH_TICKET = SH_TICKET;
reg.SH_OWNER_BR = SH_OWNER_BR;
reg.SH_OPS = SH_OPS;
reg.SH_OPS_N = SH_OPS_N;
reg.SH_NUM_N = SH_NUM_N;
reg.OP_SUCCESS = OP_SUCCESS;
reg.OP_ADD = 2;
reg.OP_PAR = 3;
reg.OP_PADD = 4;
reg.OP_WAIT = 5;
reg.OP_TIMEOUT = 6;
reg.OP_CANCEL = 7;
reg.OP_SYNC = 9;
reg.OP_FOLLOW = 10;

module.exports = reg;
