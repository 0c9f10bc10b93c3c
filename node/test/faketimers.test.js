'use strict';

// Mocked timers (node:test mock.timers, @sinonjs/fake-timers, Jest's fake
// timers) replace the global setTimeout(): a step timeout follows them, as
// futoin-asyncsteps' does (it sets its timeouts with the global setTimeout).

const test = require('node:test');
const assert = require('node:assert');
const { $as, deferred, isPolyglot, T } = require('./helpers');

/* the mocked global setTimeout(): Node 20.11+ takes the APIs in an object,
 * Node 18 and early 20 as an array */
const mockSetTimeout = (t) => {
    try {
        t.mock.timers.enable({ apis: ['setTimeout'] });
    } catch (e) {
        if (e.code !== 'ERR_INVALID_ARG_TYPE') {
            throw e;
        }
        t.mock.timers.enable(['setTimeout']);
    }
};

test('a step timeout fires when mocked timers reach it', T, async (t) => {
    mockSetTimeout(t);
    const trace = [];
    const done = deferred();
    $as()
        .add((as) => {
            as.setCancel(() => trace.push('cancel'));
            as.setTimeout(1000);
        }, (as, err) => {
            trace.push(`${err}:${as.state.last_exception.message}:${as.state.error_info}`);
            as.success('recovered');
        })
        .add((as, v) => {
            trace.push(v);
            done.resolve();
        })
        .execute();
    t.mock.timers.tick(999);
    assert.deepStrictEqual(trace, []);
    t.mock.timers.tick(1);
    assert.deepStrictEqual(trace, ['cancel', 'Timeout:Timeout:undefined']);
    await done.promise;
    assert.deepStrictEqual(trace, ['cancel', 'Timeout:Timeout:undefined', 'recovered']);
});

test('a step completed before its mocked timeout goes on without a Timeout', T, async (t) => {
    mockSetTimeout(t);
    const trace = [];
    const done = deferred();
    $as()
        .add((as) => {
            as.add((as) => {
                as.setTimeout(1000);
                setTimeout(() => as.success(1), 100);
            });
            as.add((as, v) => {
                trace.push(`next ${v}`);
                // a second timeout replaces the first one
                as.setTimeout(500);
                as.setTimeout(2000);
                setTimeout(() => as.success(2), 1000);
            });
        }, (as, err) => {
            trace.push(err);
        })
        .add((as, v) => {
            trace.push(`end ${v}`);
            done.resolve();
        })
        .execute();
    t.mock.timers.tick(100);
    await new Promise((resolve) => setImmediate(resolve)); // the flow goes on after success()
    assert.deepStrictEqual(trace, ['next 1']);
    t.mock.timers.tick(1000);
    await done.promise;
    t.mock.timers.tick(5000);
    assert.deepStrictEqual(trace, ['next 1', 'end 2']);
});

test('a mocked step timeout of a parallel branch fails the parallel', T, async (t) => {
    mockSetTimeout(t);
    const trace = [];
    const done = deferred();
    const root = $as();
    root.add((as) => {
        as.parallel()
            .add((as) => {
                as.setTimeout(60000);
            })
            .add((as) => {
                as.setCancel(() => trace.push('sibling cancelled'));
            });
    }, (as, err) => {
        trace.push(err);
        done.resolve();
    });
    root.execute();
    t.mock.timers.tick(59999);
    assert.deepStrictEqual(trace, []);
    t.mock.timers.tick(1);
    await done.promise;
    assert.deepStrictEqual(trace, ['sibling cancelled', 'Timeout']);
});

test('a mocked timeout of a step whose sub-steps complete it does not fire', T, async (t) => {
    mockSetTimeout(t);
    const trace = [];
    const done = deferred();
    $as()
        .add((as) => {
            as.setTimeout(1000);
            as.add((as) => {
                as.success('sub');
            });
        }, (as, err) => {
            trace.push(err);
        })
        .add((as, v) => {
            trace.push(v);
            done.resolve();
        })
        .execute();
    await done.promise;
    t.mock.timers.tick(2000);
    assert.deepStrictEqual(trace, ['sub']);
});

test('fake timers get back only their own handles: the engine never clears a timer of Node with them', () => {
    // the engine told a fake setTimeout() from Node's own by a timer of
    // Node's, which it cleared with the global (fake) clearTimeout(): Node 18's
    // mock.timers then lost its queued timers; a fresh process, as that
    // happens the first time only
    const script = `
        const own = new Set();
        const foreign = [];
        const queued = [];
        globalThis.setTimeout = function fakeSetTimeout(fn, ms) {
            const h = { ms };
            own.add(h);
            queued.push([h, fn]);
            return h;
        };
        globalThis.clearTimeout = function fakeClearTimeout(h) {
            if (!own.delete(h)) {
                foreign.push(String(h && h.constructor && h.constructor.name));
            }
        };
        const $as = require(${JSON.stringify(require('./helpers').IMPL)});
        const trace = [];
        $as().add((as) => {
            as.setTimeout(1000);
        }, (as, err) => {
            trace.push(err);
        }).execute();
        // the fake clock reaches the step timeout
        for (const [h, fn] of queued.splice(0)) {
            if (own.delete(h) && h.ms === 1000) {
                fn();
            }
        }
        process.once('beforeExit', () => console.log(JSON.stringify({ trace, foreign })));
    `;
    const res = require('child_process').spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
    assert.strictEqual(res.status, 0, res.stderr);
    assert.deepStrictEqual(JSON.parse(res.stdout), { trace: ['Timeout'], foreign: [] });
});

test('a wrapper of Node\'s own setTimeout() keeps step timeouts working', T, async (t) => {
    const real = globalThis.setTimeout;
    let calls = 0;
    globalThis.setTimeout = function setTimeout(...args) {
        ++calls;
        return real(...args);
    };
    t.after(() => {
        globalThis.setTimeout = real;
    });
    const errs = [];
    for (let i = 0; i < 3; ++i) {
        errs.push(await new Promise((resolve) => {
            $as().add((as) => {
                as.setTimeout(1);
            }, (as, err) => {
                resolve(err);
            }).execute();
        }));
    }
    assert.deepStrictEqual(errs, ['Timeout', 'Timeout', 'Timeout']);
    if (isPolyglot) {
        // the C scheduler's timers: the wrapper is only tried once
        assert.strictEqual(calls, 1);
    } else {
        assert.strictEqual(calls, 3);
    }
});

test('a custom event tool given to the root sets its step timeouts', T, async () => {
    const pending = [];
    const cancelled = [];
    const tool = {
        callLater(f, ms) {
            const e = { f, ms };
            pending.push(e);
            return e;
        },
        cancelCall(e) {
            cancelled.push(e);
        },
        callImmediate: (f) => setImmediate(f),
        cancelImmediate: (h) => clearImmediate(h),
    };
    const trace = [];
    const done = deferred();
    let outside;
    new $as.AsyncSteps(null, tool)
        .add((as) => {
            as.setTimeout(100);
            outside = as;
        })
        .add((as) => {
            trace.push('second');
            as.setTimeout(200);
        }, (as, err) => {
            trace.push(`${err}:${as.state.last_exception.message}`);
            done.resolve();
        })
        .execute();
    const timers = pending.filter((e) => e.ms === 100 || e.ms === 200);
    assert.deepStrictEqual(timers.map((e) => e.ms), [100]);
    outside.success(); // completed before its timeout: the tool cancels it
    assert.deepStrictEqual(cancelled, [timers[0]]);
    await new Promise((resolve) => setImmediate(resolve));
    const second = pending.filter((e) => e.ms === 200);
    assert.deepStrictEqual(trace, ['second']);
    assert.strictEqual(second.length, 1);
    second[0].f();
    await done.promise;
    assert.deepStrictEqual(trace, ['second', 'Timeout:Timeout']);
});

test('a step timeout goes through AsyncTool.callLater() when it was replaced', T, async (t) => {
    const { AsyncTool } = $as;
    const orig = AsyncTool.callLater;
    const seen = [];
    AsyncTool.callLater = (f, ms) => {
        seen.push(ms);
        return orig(f, ms);
    };
    t.after(() => {
        AsyncTool.callLater = orig;
    });
    const err = await new Promise((resolve) => {
        $as().add((as) => {
            as.setTimeout(3);
        }, (as, err) => {
            resolve(err);
        }).execute();
    });
    assert.strictEqual(err, 'Timeout');
    assert.deepStrictEqual(seen, [3]);
});

test('a custom event tool: the timeout of a step that ends through its sub-steps or a cancel() is cancelled', T, async () => {
    const calls = [];
    let next = 0;
    const tool = {
        callLater: (f, ms) => {
            const h = { id: ++next, ms };
            calls.push(['callLater', h.id, ms]);
            return h;
        },
        cancelCall: (h) => calls.push(['cancelCall', h.id]),
        callImmediate: (f) => setImmediate(f),
        cancelImmediate: (h) => clearImmediate(h),
    };
    const done = new $as.AsyncSteps(null, tool);
    done.add((as) => {
        as.setTimeout(3000);
        as.add((as) => as.success('sub'));
    });
    assert.strictEqual(await done.promise(), 'sub');
    assert.deepStrictEqual(calls, [['callLater', 1, 3000], ['cancelCall', 1]]);
    calls.length = 0;
    const cancelled = new $as.AsyncSteps(null, tool);
    cancelled.add((as) => {
        as.setTimeout(3000);
        as.setCancel(() => calls.push(['cancel handler']));
    });
    cancelled.execute();
    await new Promise((resolve) => setImmediate(resolve));
    cancelled.cancel();
    assert.deepStrictEqual(calls.filter((c) => c[0] !== 'cancel handler'), [['callLater', 2, 3000], ['cancelCall', 2]]);
    assert.strictEqual(calls.filter((c) => c[0] === 'cancel handler').length, 1);
});
