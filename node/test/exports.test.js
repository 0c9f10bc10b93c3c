'use strict';

// The module's exports and sub-paths, as futoin-asyncsteps 2.5 has them.

const test = require('node:test');
const assert = require('node:assert');
const { $as, sub, runFlow, T } = require('./helpers');

const KEYS = [
    'ActiveAsyncTool', 'AsyncTool', 'AsyncToolTest', 'FutoInError', 'Errors', 'AsyncSteps',
    'isProduction', 'installAsyncToolTest', 'assertAS', 'ISync', 'Mutex', 'Throttle', 'Limiter',
    'testcase',
];

const ERRORS = [
    'ConnectError', 'CommError', 'UnknownInterface', 'NotSupportedVersion', 'NotImplemented',
    'Unauthorized', 'InternalError', 'InvokerError', 'InvalidRequest', 'DefenseRejected',
    'PleaseReauth', 'SecurityError', 'Timeout', 'LoopBreak', 'LoopCont',
];

test('the module exports exactly the 14 keys of futoin-asyncsteps', () => {
    assert.deepStrictEqual(Object.keys($as).sort(), KEYS.slice().sort());
    assert.strictEqual(Object.keys($as).length, 14);
});

test('the AsyncSteps class has no enumerable statics, as futoin-asyncsteps', () => {
    assert.deepStrictEqual(Object.keys($as.AsyncSteps), []);
    assert.deepStrictEqual(Object.keys(require(`${require('./helpers').IMPL}/AsyncSteps`)), []);
});

test('the module is a factory of root AsyncSteps', () => {
    assert.strictEqual(typeof $as, 'function');
    const as = $as();
    assert.ok(as instanceof $as.AsyncSteps);
    assert.strictEqual(as.isAsyncSteps(), true);
    assert.notStrictEqual($as(), as);
    const direct = new $as.AsyncSteps();
    assert.strictEqual(direct.isAsyncSteps(), true);
});

test('the default event tool is AsyncTool', () => {
    assert.strictEqual($as.ActiveAsyncTool, $as.AsyncTool);
    for (const f of ['callLater', 'cancelCall', 'callImmediate', 'cancelImmediate']) {
        assert.strictEqual(typeof $as.AsyncTool[f], 'function', f);
        assert.strictEqual(typeof $as.AsyncToolTest[f], 'function', f);
    }
    for (const f of ['nextEvent', 'hasEvents', 'getEvents', 'resetEvents', 'run']) {
        assert.strictEqual(typeof $as.AsyncToolTest[f], 'function', f);
    }
});

test('Errors (and its alias FutoInError) holds the standard codes, read-only', () => {
    assert.strictEqual($as.FutoInError, $as.Errors);
    assert.deepStrictEqual(Object.keys($as.Errors), ERRORS);
    for (const code of ERRORS) {
        assert.strictEqual($as.Errors[code], code);
        const d = Object.getOwnPropertyDescriptor($as.Errors, code);
        assert.strictEqual(d.writable, false, code);
        assert.strictEqual(d.enumerable, true, code);
    }
    assert.throws(() => {
        'use strict';
        $as.Errors.Timeout = 'x';
    }, TypeError);
});

test('isProduction is false outside NODE_ENV=production', () => {
    assert.strictEqual($as.isProduction, false);
});

test('assertAS accepts roots and step interfaces, rejects the rest', T, async () => {
    $as.assertAS($as());
    const r = await runFlow((as) => {
        $as.assertAS(as);
        as.success('checked');
    });
    assert.deepStrictEqual(r.args, ['checked']);
    for (const v of [{}, null, undefined, 1, { isAsyncSteps: () => false }]) {
        assert.throws(() => $as.assertAS(v), (e) => {
            assert.ok(e instanceof Error);
            assert.strictEqual(e.message, `Not an instance of AsyncSteps: ${v}`);
            return true;
        });
    }
});

test('the public methods of roots, step interfaces and parallel objects', T, async () => {
    const ROOT = ['add', 'parallel', 'sync', 'error', 'copyFrom', 'cancel', 'execute', 'loop',
        'repeat', 'forEach', 'successStep', 'await', 'promise', 'newInstance', 'isAsyncSteps'];
    const STEP = ['add', 'parallel', 'success', 'error', 'setTimeout', 'setCancel', 'waitExternal',
        'copyFrom', 'loop', 'repeat', 'forEach', 'break', 'continue', 'successStep', 'await',
        'sync', 'newInstance', 'isAsyncSteps'];
    const root = $as();
    for (const m of ROOT) {
        assert.strictEqual(typeof root[m], 'function', `root.${m}`);
    }
    const r = await runFlow((as) => {
        for (const m of STEP) {
            assert.strictEqual(typeof as[m], 'function', `as.${m}`);
        }
        const p = as.parallel();
        assert.strictEqual(typeof p.add, 'function');
        assert.strictEqual(p.isAsyncSteps(), true);
    });
    assert.strictEqual(r.err, null, r.info);
    assert.deepStrictEqual(r.args, []);
});

test('sub-paths load and are the objects the module exports', () => {
    assert.strictEqual(sub('/Mutex'), $as.Mutex);
    assert.strictEqual(sub('/Throttle'), $as.Throttle);
    assert.strictEqual(sub('/Limiter'), $as.Limiter);
    assert.strictEqual(sub('/ISync'), $as.ISync);
    assert.strictEqual(sub('/Errors'), $as.Errors);
    assert.strictEqual(sub('/AsyncSteps'), $as.AsyncSteps);
    assert.strictEqual(sub('/testcase'), $as.testcase);
    assert.strictEqual(sub('/lib/main-full'), $as);
    assert.strictEqual(sub('/lib/main'), $as);
    assert.strictEqual(sub('/lib/AsyncTool'), $as.AsyncTool);
    assert.strictEqual(sub('/lib/AsyncToolTest'), $as.AsyncToolTest);
});

test('the es5/ sub-paths of futoin-asyncsteps load too, and run flows', T, async () => {
    for (const [p, counterpart] of [
        ['/es5/AsyncSteps', $as.AsyncSteps], ['/es5/Errors', $as.Errors], ['/es5/ISync', $as.ISync],
        ['/es5/Limiter', $as.Limiter], ['/es5/Mutex', $as.Mutex], ['/es5/Throttle', $as.Throttle],
        ['/es5/testcase', $as.testcase], ['/es5/lib/main', $as], ['/es5/lib/main-full', $as],
        ['/es5/lib/AsyncTool', $as.AsyncTool], ['/es5/lib/AsyncToolTest', $as.AsyncToolTest],
        ['/es5/lib/AsyncStepProtector', sub('/lib/AsyncStepProtector')],
        ['/es5/lib/ParallelStep', sub('/lib/ParallelStep')],
    ]) {
        const m = sub(p);
        assert.strictEqual(typeof m, typeof counterpart, p);
        // es5/lib/main there lacks what lib/main-full adds
        assert.deepStrictEqual(Object.keys(m).filter((k) => !(k in counterpart)), [], p);
    }
    const es5 = sub('/es5/lib/main-full');
    const got = await new Promise((resolve) => {
        es5().sync(new (sub('/es5/Mutex'))(), (as) => as.success(42)).add((as, v) => resolve(v)).execute();
    });
    assert.strictEqual(got, 42);
});

test('lib/AsyncStepProtector and lib/ParallelStep are the classes of step interfaces and parallels', T,
    async () => {
        const AsyncStepProtector = sub('/lib/AsyncStepProtector');
        const ParallelStep = sub('/lib/ParallelStep');
        assert.strictEqual(AsyncStepProtector.name, 'AsyncStepProtector');
        assert.strictEqual(ParallelStep.name, 'ParallelStep');
        const seen = [];
        const r = await runFlow((as) => {
            seen.push(as instanceof AsyncStepProtector);
            const p = as.parallel();
            seen.push(p instanceof ParallelStep);
            p.add((as) => {
                seen.push(as instanceof AsyncStepProtector);
            });
        });
        assert.strictEqual(r.err, null, r.info);
        assert.deepStrictEqual(seen, [true, true, true]);
    });

test('Mutex, Throttle and Limiter are ISync; a bare ISync fails with NotImplemented', T, async () => {
    const { ISync, Mutex, Throttle, Limiter } = $as;
    assert.ok(new Mutex() instanceof ISync);
    assert.ok(new Throttle(1, 10) instanceof ISync);
    assert.ok(new Limiter() instanceof ISync);
    for (const C of [Mutex, Throttle, Limiter]) {
        // as there: each extends ISync itself, with a sync() of its own
        assert.strictEqual(Object.getPrototypeOf(C), ISync, C.name);
        assert.ok(Object.prototype.hasOwnProperty.call(C.prototype, 'sync'), C.name);
    }
    class Bare extends ISync {}
    let ran = false;
    const r = await runFlow((as) => {
        as.sync(new Bare(), (as) => {
            ran = true;
        });
    });
    assert.strictEqual(ran, false);
    assert.strictEqual(r.err, 'NotImplemented');
    assert.strictEqual(r.info, '#sync() API');
});

test('a custom ISync gets (as, step, onerror) and its steps run in the flow', T, async () => {
    const { ISync } = $as;
    const seen = [];
    class Logging extends ISync {
        sync(as, step, onerror) {
            seen.push(typeof step, typeof onerror);
            as.add(step, onerror);
        }
    }
    const r = await runFlow((as) => {
        as.sync(new Logging(), (as) => {
            as.success('inside');
        }, (as, err) => {});
    });
    assert.deepStrictEqual(seen, ['function', 'function']);
    assert.deepStrictEqual(r.args, ['inside']);
});

test('testcase is a function making mocha-style test functions', () => {
    assert.strictEqual(typeof $as.testcase, 'function');
    const t = $as.testcase((as) => {});
    assert.strictEqual(typeof t, 'function');
    assert.strictEqual(t.length, 1);
});
