'use strict';

// Mutex, Throttle and Limiter through as.sync().
//
// execute() runs a flow's first step synchronously (timing.test.js), so
// right after execute() a flow that is let in has entered its section and
// one that is held back has not.

const test = require('node:test');
const assert = require('node:assert');
const { $as, isPolyglot, runFlow, onTestTool, deferred, T } = require('./helpers');
const { Mutex, Throttle, Limiter } = $as;

/* a section that stays inside until an event `ms` later */
const hold = (trace, name, ms = 3) => (as) => {
    trace.push(`${name} in`);
    as.waitExternal();
    setTimeout(() => {
        trace.push(`${name} out`);
        as.success(`${name} result`);
    }, ms);
};

/* execute a flow; resolves with its end: { err, info } */
const flow = (build) => new Promise((resolve) => {
    const root = $as();
    root.add((as) => build(as), (as, err) => resolve({ err, info: as.state.error_info }));
    root.add((as) => resolve({ err: null }));
    root.execute();
});

test('Mutex: one flow inside at a time, the others wait in order', T, async () => {
    const mtx = new Mutex();
    const trace = [];
    const ends = ['a', 'b', 'c'].map((n) => flow((as) => as.sync(mtx, hold(trace, n))));
    assert.deepStrictEqual(trace, ['a in']);
    const res = await Promise.all(ends);
    assert.deepStrictEqual(res.map((r) => r.err), [null, null, null]);
    assert.deepStrictEqual(trace, ['a in', 'a out', 'b in', 'b out', 'c in', 'c out']);
});

test('Mutex(max): up to max flows inside at once', T, async () => {
    const mtx = new Mutex(2);
    const trace = [];
    let inside = 0;
    let most = 0;
    const section = (name) => (as) => {
        ++inside;
        most = Math.max(most, inside);
        trace.push(name);
        as.waitExternal();
        setTimeout(() => {
            --inside;
            as.success();
        }, 3);
    };
    const ends = ['a', 'b', 'c', 'd', 'e'].map((n) => flow((as) => as.sync(mtx, section(n))));
    assert.deepStrictEqual(trace, ['a', 'b']);
    await Promise.all(ends);
    assert.strictEqual(most, 2);
    assert.deepStrictEqual(trace, ['a', 'b', 'c', 'd', 'e']);
});

test('sync objects take numeric strings for their numbers, as futoin-asyncsteps', T, async () => {
    for (const obj of [new Mutex('2', '5'), new Limiter({ concurrent: '2', max_queue: '5', rate: '10' })]) {
        const trace = [];
        const ends = ['a', 'b', 'c'].map((n) => flow((as) => as.sync(obj, hold(trace, n))));
        assert.deepStrictEqual(trace, ['a in', 'b in']); // max '2': two inside
        const res = await Promise.all(ends);
        assert.deepStrictEqual(res.map((r) => r.err), [null, null, null]);
    }
    const thr = new Throttle('1', '10', '3');
    const trace = [];
    const ends = ['a', 'b'].map((n) => flow((as) => as.sync(thr, (as) => {
        trace.push(n);
    })));
    assert.deepStrictEqual(trace, ['a']); // one entry per period
    await Promise.all(ends);
    assert.deepStrictEqual(trace, ['a', 'b']);
    if (isPolyglot) {
        assert.throws(() => new Mutex('many'), TypeError); // futoin-asyncsteps takes it
    }
});

test('a period that is no number, or below 1 ms, is 1 ms, as on setInterval() of futoin-asyncsteps', T, async () => {
    for (const make of [
        (p) => new Throttle(1, p),
        (p) => new Limiter({ concurrent: 3, max_queue: 5, rate: 1, period_ms: p, burst: 5 }),
    ]) {
        for (const p of [null, -5, 0.5, 'abc', {}]) {
            const obj = make(p);
            const trace = [];
            const ends = ['a', 'b', 'c'].map((n) => flow((as) => as.sync(obj, (as) => {
                trace.push(n);
            })));
            assert.deepStrictEqual(trace, ['a'], String(p)); // one entry per period
            const res = await Promise.all(ends);
            assert.deepStrictEqual(res.map((r) => r.err), [null, null, null], String(p));
            assert.deepStrictEqual(trace, ['a', 'b', 'c'], String(p));
        }
    }
    // the kept setting is the one given, as there
    assert.strictEqual(new Throttle(1, null)._period_ms, null);
});

test('Mutex: the section gets the previous result; its result goes on', T, async () => {
    const mtx = new Mutex();
    const got = [];
    const r = await runFlow((as) => {
        as.add((as) => as.success('in1', 'in2'));
        as.sync(mtx, (as, a, b) => {
            got.push(a, b);
            as.success('out');
        });
    });
    assert.deepStrictEqual(got, ['in1', 'in2']);
    assert.deepStrictEqual(r.args, ['out']);

    // a waiting flow gets its arguments too
    const trace = [];
    const first = flow((as) => as.sync(mtx, hold(trace, 'a')));
    const second = runFlow((as) => {
        as.add((as) => as.success('b arg'));
        as.sync(mtx, (as, v) => {
            trace.push(`b in ${v}`);
            as.success('b result');
        });
    });
    await first;
    const r2 = await second;
    assert.deepStrictEqual(trace, ['a in', 'a out', 'b in b arg']);
    assert.deepStrictEqual(r2.args, ['b result']);
});

test('Mutex: re-entrant for the flow that holds it', T, async () => {
    const mtx = new Mutex();
    const r = await runFlow((as) => {
        as.sync(mtx, (as) => {
            as.sync(mtx, (as) => {
                as.sync(mtx, (as) => as.success('deep'));
            });
        });
    });
    assert.strictEqual(r.err, null);
    assert.deepStrictEqual(r.args, ['deep']);
    // and released completely afterwards
    const r2 = await runFlow((as) => as.sync(mtx, (as) => as.success('again')));
    assert.deepStrictEqual(r2.args, ['again']);
});

test('Mutex(max, max_queue): a full queue rejects with DefenseRejected', T, async () => {
    const mtx = new Mutex(1, 1);
    const trace = [];
    const ends = ['a', 'b', 'c'].map((n) => flow((as) => as.sync(mtx, hold(trace, n))));
    const res = await Promise.all(ends);
    assert.deepStrictEqual(res, [
        { err: null },
        { err: null },
        { err: 'DefenseRejected', info: 'Mutex queue limit' },
    ]);
    assert.deepStrictEqual(trace, ['a in', 'a out', 'b in', 'b out']);

    const none = new Mutex(1, 0);
    const t2 = [];
    const e2 = [flow((as) => as.sync(none, hold(t2, 'x'))), flow((as) => as.sync(none, hold(t2, 'y')))];
    const r2 = await Promise.all(e2);
    assert.strictEqual(r2[0].err, null);
    assert.strictEqual(r2[1].err, 'DefenseRejected');
});

test('Mutex: released when the holder fails', T, async () => {
    const mtx = new Mutex();
    const trace = [];
    const a = flow((as) => as.sync(mtx, (as) => {
        trace.push('a in');
        as.waitExternal();
        setTimeout(() => {
            try {
                as.error('AFail');
            } catch (e) {
                // error() throws to its caller
            }
        }, 2);
    }));
    const b = flow((as) => as.sync(mtx, hold(trace, 'b')));
    assert.deepStrictEqual(await a, { err: 'AFail', info: undefined });
    assert.deepStrictEqual(await b, { err: null });
    assert.deepStrictEqual(trace, ['a in', 'b in', 'b out']);
});

test('Mutex: released when the holder is cancelled; a cancelled waiter leaves the queue', T, async () => {
    const mtx = new Mutex();
    const trace = [];
    const holder = $as();
    holder.sync(mtx, (as) => {
        trace.push('holder in');
        as.waitExternal();
    });
    holder.execute();
    const waiter = $as();
    waiter.sync(mtx, (as) => trace.push('cancelled waiter in'));
    waiter.execute();
    const last = flow((as) => as.sync(mtx, hold(trace, 'last')));
    waiter.cancel();
    holder.cancel();
    assert.deepStrictEqual(await last, { err: null });
    assert.deepStrictEqual(trace, ['holder in', 'last in', 'last out']);
});

test('Mutex: an error handler of the section', T, async () => {
    const mtx = new Mutex();
    const r = await runFlow((as) => {
        as.sync(mtx, (as) => as.error('Inside'), (as, err) => as.success(`handled ${err}`));
    });
    assert.strictEqual(r.err, null);
    assert.deepStrictEqual(r.args, ['handled Inside']);
    const r2 = await runFlow((as) => as.sync(mtx, (as) => as.success('free again')));
    assert.deepStrictEqual(r2.args, ['free again']);
});

test('as.sync() then a throw in the same step: the section never runs, the Mutex stays free', T, async () => {
    const mtx = new Mutex();
    const trace = [];
    const r = await runFlow((as) => {
        as.sync(mtx, (as) => trace.push('section'));
        throw new Error('After');
    });
    assert.strictEqual(r.err, 'After');
    const r2 = await runFlow((as) => as.sync(mtx, (as) => as.success('free')));
    assert.deepStrictEqual(r2.args, ['free']);
    assert.deepStrictEqual(trace, []);
});

test('as.sync() calls the sync() of a Mutex subclass that overrides it', T, async () => {
    const calls = [];
    class Traced extends Mutex {
        sync(as, step, onerror) {
            calls.push(typeof step);
            super.sync(as, step, onerror);
        }
    }
    const r = await runFlow((as) => as.sync(new Traced(), (as) => as.success('in')));
    assert.deepStrictEqual(r.args, ['in']);
    assert.deepStrictEqual(calls, ['function']);
});

test('Throttle and Mutex objects collected and made again: each keeps its own state', T, async () => {
    const v8 = require('v8');
    const vm = require('vm');
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc');
    for (let round = 0; round < 3; ++round) {
        for (let i = 0; i < 50; ++i) {
            const thr = new Throttle(1, 1000);
            await runFlow((as) => as.sync(thr, (as) => as.success(i)));
        }
        gc();
        await new Promise((resolve) => setImmediate(resolve));
    }
    // a new Throttle must not share an entry with a collected one
    const thr = new Throttle(1, 100000, 0);
    const mtx = new Mutex();
    assert.deepStrictEqual((await runFlow((as) => as.sync(thr, (as) => as.success(1)))).args, [1]);
    assert.strictEqual((await runFlow((as) => as.sync(thr, (as) => as.success(2)))).err, 'DefenseRejected');
    assert.deepStrictEqual((await runFlow((as) => as.sync(mtx, (as) => as.success(3)))).args, [3]);
});

test('root.sync() with a Mutex', T, async () => {
    const mtx = new Mutex();
    const root = $as();
    root.add((as) => as.success(2));
    root.sync(mtx, (as, v) => as.success(v * 3));
    assert.strictEqual(await root.promise(), 6);
});

test('Throttle(max, period): max entries per period, the rest wait in order', T, async () => {
    const th = new Throttle(2, 20);
    const trace = [];
    const ends = ['a', 'b', 'c', 'd', 'e'].map((n) => runFlow((as) => {
        as.add((as) => as.success(`${n} arg`));
        as.sync(th, (as, v) => {
            trace.push(v);
            as.success(`${n} result`);
        });
    }));
    assert.deepStrictEqual(trace, ['a arg', 'b arg']);
    const res = await Promise.all(ends);
    assert.deepStrictEqual(trace, ['a arg', 'b arg', 'c arg', 'd arg', 'e arg']);
    assert.deepStrictEqual(res.map((r) => r.args[0]),
        ['a result', 'b result', 'c result', 'd result', 'e result']);
});

test('Throttle(max, period, max_queue): a full queue rejects with DefenseRejected', T, async () => {
    const th = new Throttle(1, 20, 1);
    const trace = [];
    const ends = ['a', 'b', 'c'].map((n) => flow((as) => as.sync(th, (as) => trace.push(n))));
    const res = await Promise.all(ends);
    assert.deepStrictEqual(res, [
        { err: null },
        { err: null },
        { err: 'DefenseRejected', info: 'Throttle queue limit' },
    ]);
    assert.deepStrictEqual(trace, ['a', 'b']);
});

test('Throttle: a cancelled waiting flow leaves the queue', T, async () => {
    const th = new Throttle(1, 20);
    const trace = [];
    const a = flow((as) => as.sync(th, (as) => trace.push('a')));
    const waiter = $as();
    waiter.sync(th, (as) => trace.push('cancelled'));
    waiter.execute();
    const c = flow((as) => as.sync(th, (as) => trace.push('c')));
    waiter.cancel();
    await a;
    await c;
    assert.deepStrictEqual(trace, ['a', 'c']);
});

test('Limiter: defaults allow one flow and no queue', T, async () => {
    const lim = new Limiter();
    const trace = [];
    const res = await Promise.all(['a', 'b'].map((n) => flow((as) => as.sync(lim, hold(trace, n)))));
    assert.deepStrictEqual(res, [{ err: null }, { err: 'DefenseRejected', info: 'Mutex queue limit' }]);
    assert.deepStrictEqual(trace, ['a in', 'a out']);
});

test('Limiter: a falsy option (NaN of an unset setting, \'\', false) takes its default, as futoin-asyncsteps', T, async () => {
    const lim = new Limiter({ concurrent: parseInt(undefined, 10), max_queue: '', rate: false, period_ms: NaN, burst: null });
    assert.strictEqual(lim._mutex._max, 1);
    assert.strictEqual(lim._mutex._max_queue, 0);
    assert.strictEqual(lim._throttle._max, 1);
    assert.strictEqual(lim._throttle._period_ms, 1000);
    const trace = [];
    const res = await Promise.all(['a', 'b'].map((n) => flow((as) => as.sync(lim, hold(trace, n)))));
    assert.deepStrictEqual(res, [{ err: null }, { err: 'DefenseRejected', info: 'Mutex queue limit' }]);
});

test('Limiter: concurrency with a queue', T, async () => {
    const lim = new Limiter({ concurrent: 2, max_queue: 5, rate: 100, period_ms: 1000, burst: 5 });
    const trace = [];
    let inside = 0;
    let most = 0;
    const ends = ['a', 'b', 'c', 'd'].map((n) => runFlow((as) => {
        as.sync(lim, (as) => {
            ++inside;
            most = Math.max(most, inside);
            trace.push(n);
            as.waitExternal();
            setTimeout(() => {
                --inside;
                as.success(`${n} result`);
            }, 3);
        });
    }));
    assert.deepStrictEqual(trace, ['a', 'b']);
    const res = await Promise.all(ends);
    assert.strictEqual(most, 2);
    assert.deepStrictEqual(trace, ['a', 'b', 'c', 'd']);
    assert.deepStrictEqual(res.map((r) => r.args[0]), ['a result', 'b result', 'c result', 'd result']);
});

test('Limiter: rate limit with a burst queue', T, async () => {
    const lim = new Limiter({ concurrent: 5, max_queue: 5, rate: 1, period_ms: 20, burst: 1 });
    const trace = [];
    const ends = ['a', 'b', 'c'].map((n) => flow((as) => as.sync(lim, (as) => trace.push(n))));
    assert.deepStrictEqual(trace, ['a']);
    const res = await Promise.all(ends);
    assert.deepStrictEqual(res, [
        { err: null },
        { err: null },
        { err: 'DefenseRejected', info: 'Throttle queue limit' },
    ]);
    assert.deepStrictEqual(trace, ['a', 'b']);
});

test('a Limiter shows its settings as the _mutex and _throttle of futoin-asyncsteps', () => {
    const dflt = new $as.Limiter();
    assert.strictEqual(dflt._mutex._max, 1);
    assert.strictEqual(dflt._mutex._max_queue, 0);
    assert.strictEqual(dflt._throttle._max, 1);
    assert.strictEqual(dflt._throttle._period_ms, 1e3);
    assert.strictEqual(dflt._throttle._max_queue, 0);
    const lim = new $as.Limiter({ concurrent: 12, max_queue: 23, rate: 34, period_ms: 1234, burst: 45 });
    assert.strictEqual(lim._mutex._max, 12);
    assert.strictEqual(lim._mutex._max_queue, 23);
    assert.strictEqual(lim._throttle._max, 34);
    assert.strictEqual(lim._throttle._period_ms, 1234);
    assert.strictEqual(lim._throttle._max_queue, 45);
});

test('Mutex, Throttle and Limiter show who is inside and who waits as futoin-asyncsteps\' fields', T, async () => {
    // futoin-executor's ExecutorLimiter evicts a Limiter when
    // !_mutex._locked && !_throttle._current; its tests read _queue.length
    class ExecutorLimiter extends Limiter {
        isStale() {
            return !this._mutex._locked && !this._throttle._current;
        }
    }
    const lim = new ExecutorLimiter({ concurrent: 2, max_queue: 32, rate: 10, period_ms: 200, burst: 2 });
    const show = (o) => [o._mutex._locked, o._mutex._queue.length, o._throttle._current,
        o._throttle._queue.length, o.isStale()];
    assert.deepStrictEqual(show(lim), [0, 0, 0, 0, true]);
    const trace = [];
    const ends = ['a', 'b', 'c', 'd'].map((n) => flow((as) => as.sync(lim, hold(trace, n))));
    assert.deepStrictEqual(show(lim), [2, 2, 2, 0, false]);
    await Promise.all(ends);
    assert.deepStrictEqual(show(lim).slice(0, 2), [0, 0]); // nobody inside any more

    const mtx = new Mutex(1);
    const mtxEnds = ['a', 'b'].map((n) => flow((as) => as.sync(mtx, hold(trace, n))));
    assert.deepStrictEqual([mtx._locked, mtx._queue.length], [1, 1]);
    await Promise.all(mtxEnds);
    assert.deepStrictEqual([mtx._locked, mtx._queue.length], [0, 0]);

    const thr = new Throttle(1, 20);
    const thrEnds = ['a', 'b'].map((n) => flow((as) => as.sync(thr, (as) => {})));
    assert.deepStrictEqual([thr._current, thr._queue.length], [1, 1]);
    await Promise.all(thrEnds);
    assert.strictEqual(thr._queue.length, 0);
});

// futoin-asyncsteps' Throttle and Limiter keep their periods on real timers,
// also those made while AsyncToolTest is installed: AsyncToolTest gets no
// event of theirs, and the flows of either tool they hold back go on
/* turns of the real loop, each with a run() of the test tool, until done() */
const pollTestTool = async (AT, done) => {
    while (!done()) {
        await new Promise((resolve) => setImmediate(resolve));
        AT.run();
    }
};

test('a Throttle made under AsyncToolTest: a period on a real timer, no test event', T, async () => {
    await onTestTool(async (AT) => {
        const thr = new Throttle(1, 10);
        assert.strictEqual(thr._timer, null);
        const trace = [];
        for (const n of ['a', 'b']) {
            $as().sync(thr, (as) => {
                trace.push(n);
            }).execute();
        }
        AT.run();
        assert.deepStrictEqual(trace, ['a']); // b waits for the next period
        assert.notStrictEqual(thr._timer, null);
        assert.strictEqual(AT.hasEvents(), false);
        await pollTestTool(AT, () => trace.length === 2);
        assert.deepStrictEqual(trace, ['a', 'b']);
    });
});

test('a Throttle and a Limiter made under AsyncToolTest let real-tool flows in once it is gone', T, async () => {
    let thr;
    let lim;
    await onTestTool(async () => {
        thr = new Throttle(1, 10);
        lim = new Limiter({ concurrent: 2, max_queue: 5, rate: 1, period_ms: 10, burst: 5 });
    });
    const ends = [];
    for (const obj of [thr, lim]) {
        for (const n of ['a', 'b']) {
            ends.push(flow((as) => as.sync(obj, (as) => as.success(n))));
        }
    }
    const res = await Promise.all(ends);
    assert.deepStrictEqual(res.map((r) => r.err), [null, null, null, null]);
});

// native.virtualPeriods(true): periods in AsyncToolTest's virtual time
if (isPolyglot) {
    test('virtualPeriods(true): a Throttle made under AsyncToolTest ends its period in run()', T, async () => {
        const native = require('../native');
        assert.throws(() => native.virtualPeriods(1), TypeError);
        native.virtualPeriods(true);
        try {
            await onTestTool((AT) => {
                const thr = new Throttle(1, 60000);
                const trace = [];
                for (const n of ['a', 'b']) {
                    $as().sync(thr, (as) => {
                        trace.push(n);
                    }).execute();
                }
                assert.deepStrictEqual(trace, ['a']);
                assert.notStrictEqual(thr._timer, null);
                assert.strictEqual(AT.hasEvents(), true);
                AT.run(); // a minute of virtual time
                assert.deepStrictEqual(trace, ['a', 'b']);
                assert.strictEqual(thr._timer, null);
            });
        } finally {
            native.virtualPeriods(false);
        }
    });
}

test('an uncontended Throttle or Limiter under AsyncToolTest leaves no test event', T, async () => {
    await onTestTool(async (AT) => {
        for (const obj of [new Throttle(10, 100), new Limiter({ rate: 10 })]) {
            let done = false;
            $as().sync(obj, (as) => {}).add((as) => {
                done = true;
            }).execute();
            AT.run();
            assert.strictEqual(done, true);
            assert.strictEqual(AT.hasEvents(), false);
        }
    });
});

test('Throttle: a step whose only call is sync() enters at once while the period has room', T, async () => {
    const th = new Throttle(3, 20);
    const trace = [];
    const root = $as();
    root.repeat(7, (as, i) => {
        as.sync(th, (as) => {
            trace.push(i);
        });
    });
    root.add((as) => trace.push('end'));
    const end = root.promise();
    assert.deepStrictEqual(trace, [0, 1, 2], 'the first period lets three in, in execute()');
    await end;
    assert.deepStrictEqual(trace, [0, 1, 2, 3, 4, 5, 6, 'end']);
});

test('Throttle: sync() then a throw in the same step takes no entry', T, async () => {
    const th = new Throttle(1, 1000);
    const r = await runFlow((as) => {
        as.sync(th, (as) => {});
        throw new Error('After');
    });
    assert.strictEqual(r.err, 'After');
    const trace = [];
    const root = $as();
    root.add((as) => as.sync(th, (as) => trace.push('in')));
    root.execute();
    assert.deepStrictEqual(trace, ['in'], 'the entry of this period is still free');
    const root2 = $as();
    root2.add((as) => as.sync(th, (as) => trace.push('next period')));
    root2.execute();
    assert.deepStrictEqual(trace, ['in'], 'the next one waits for the next period');
    root2.cancel();
});

test('fractional limits count as `n < max` does: a queue of 1.5 takes two', T, () => onTestTool((AT) => {
    const m = new Mutex(1, 1.5);
    const seen = [];
    for (let i = 0; i < 4; ++i) {
        $as().sync(m, (as) => {
            seen.push(`in ${i}`);
            as.waitExternal();
        }).execute();
    }
    AT.run();
    assert.deepStrictEqual(seen, ['in 0']);
    assert.strictEqual(m._queue.length, 2); // the fourth was rejected
}));

test('error() on a root whose flow waits to enter a sync object fails that flow there', T, () => onTestTool((AT) => {
    for (const make of [() => new Mutex(), () => new Throttle(1, 1000)]) {
        const sync = make();
        const holder = $as();
        holder.sync(sync, (as) => as.waitExternal()).execute();
        const trace = [];
        const root = $as();
        root.add((as) => {
            as.sync(sync, (as) => trace.push('entered'));
            as.add((as) => trace.push('after sync'));
        }, (as, err) => {
            trace.push(`handled ${err} ${as.state.error_info}`);
        });
        root.add((as) => trace.push('next'));
        root.execute(); // its first burst runs now: it waits to enter
        assert.deepStrictEqual(trace, []);
        assert.throws(() => root.error('MyError', 'from outside'), /MyError/);
        assert.deepStrictEqual(trace, ['handled MyError from outside']);
        holder.cancel();
        AT.run(); // it left the queue: the free place is not its any more
        assert.deepStrictEqual(trace, ['handled MyError from outside']);
        if (sync instanceof Mutex) {
            // (futoin-asyncsteps' Throttle keeps the failed one queued)
            const other = $as();
            other.sync(sync, (as) => trace.push('other entered'));
            other.execute();
            AT.run();
            assert.deepStrictEqual(trace.slice(1), ['other entered']);
        }
    }
}));

test('_handle_error() on a root waiting to enter a Mutex fails its flow there', T, () => onTestTool((AT) => {
    const m = new Mutex();
    const holder = $as();
    holder.sync(m, (as) => as.waitExternal()).execute();
    const trace = [];
    const root = $as();
    root.add((as) => as.sync(m, (as) => trace.push('entered')), (as, err) => trace.push(`handled ${err}`));
    root.execute();
    root._handle_error('MyError'); // futoin-executor's way to fail a request
    assert.deepStrictEqual(trace, ['handled MyError']);
    holder.cancel();
    AT.run();
    assert.deepStrictEqual(trace, ['handled MyError']);
}));

test('cancel() of a flow whose next step waits for its turn leaves its Mutex at once', T, async () => {
    // a and b complete from outside in one tick: on the next turn a's next
    // step runs first and cancels b, whose next step inside the section
    // waits behind it; the cancel handlers run and the Mutex is free at once
    const mtx = new Mutex();
    const trace = [];
    const done = deferred();
    let a_step, b_step;
    const B = $as();
    B.add((as) => {
        as.setCancel(() => trace.push('b cancelled'));
        as.sync(mtx, (as) => {
            as.add((as) => { b_step = as; as.waitExternal(); });
            as.add((as) => trace.push('b next'));
        });
    });
    B.execute();
    const A = $as();
    A.add((as) => { a_step = as; as.waitExternal(); });
    A.add((as) => {
        B.cancel();
        trace.push(`locked ${mtx._locked}`);
        const C = $as();
        C.sync(mtx, (as) => trace.push('c in'));
        C.execute();
        done.resolve();
    });
    A.execute();
    a_step.success();
    b_step.success();
    await done.promise;
    assert.deepStrictEqual(trace, ['b cancelled', 'locked 0', 'c in']);
});

if (isPolyglot) {
    // futoin-asyncsteps' Mutex keeps a cancelled waiter in its queue until a
    // release skips it (README: documented differences)
    test('a flow cancelled in a Mutex queue leaves it: the next one is queued, not DefenseRejected', T, async () => {
        const m = new $as.Mutex(1, 1);
        const log = [];
        const done = deferred();
        let release = null;
        $as().sync(m, (as) => {
            log.push('A in');
            as.waitExternal();
            release = () => as.success();
        }).execute();
        const b = $as();
        b.sync(m, (as) => log.push('B in'));
        b.execute();
        assert.strictEqual(m._queue.length, 1);
        b.cancel();
        assert.strictEqual(m._queue.length, 0);
        $as().add((as) => {
            as.sync(m, (as) => log.push('C in'));
        }, (as, err) => log.push(`C ${err}`)).add((as) => done.resolve()).execute();
        assert.strictEqual(m._queue.length, 1);
        release();
        await done.promise;
        assert.deepStrictEqual(log, ['A in', 'C in']);
    });
}

test('successStep() before sync() in a step: the section\'s step gets its values', T, async () => {
    // as add() after successStep(), for each built-in sync object (found by
    // a differential fuzzer: the values were lost)
    for (const obj of [new Mutex(), new Throttle(1, 10), new Limiter({ concurrent: 1 })]) {
        const seen = [];
        await runFlow((as) => {
            as.successStep(3, 'y');
            as.sync(obj, (as, ...args) => {
                seen.push(['section', ...args]);
            });
            as.add((as, ...args) => {
                seen.push(['after', ...args]);
            });
        });
        assert.deepStrictEqual(seen, [['section', 3, 'y'], ['after']], obj.constructor.name);
    }
});

test('a Mutex held by a step whose timeout handler recovers: released in the flow\'s next event, before the step after it, as futoin-asyncsteps', T,
    () => onTestTool((AT) => {
        const trace = [];
        const mtx = new Mutex();
        $as().add((as) => as.sync(mtx, (as) => {
            trace.push('A in');
            as.setTimeout(2000);
        }, (as, err) => {
            trace.push(`A ${err}`);
            as.success();
        })).add((as) => trace.push('A next')).execute();
        $as().add((as) => as.sync(mtx, (as) => trace.push('B in'))).execute();
        AT.nextEvent(); // the timeout: its handler only
        assert.deepStrictEqual(trace, ['A in', 'A Timeout']);
        AT.nextEvent(); // A's release and its next step
        assert.deepStrictEqual(trace, ['A in', 'A Timeout', 'A next']);
        AT.run();
        assert.deepStrictEqual(trace, ['A in', 'A Timeout', 'A next', 'B in']);
    }));

// sync objects of the user's own: sync(as, step, onerror) is all they are

test('a sync object whose sync() adds no step leaves the step as it was: success(), waitExternal(), successStep()', T,
    async () => {
        const silent = { sync() {} };
        const direct = await runFlow((as) => {
            as.sync(silent, (as) => {});
            as.success('v');
        });
        assert.strictEqual(direct.err, null);
        assert.deepStrictEqual(direct.args, ['v']);
        const gate = {
            sync(as) {
                as.waitExternal();
                setTimeout(() => as.success('granted'), 1);
            },
        };
        const waited = await runFlow((as) => as.sync(gate, (as) => {}));
        assert.strictEqual(waited.err, null);
        assert.deepStrictEqual(waited.args, ['granted']);
        const skip = {
            sync(as) {
                as.successStep('skipped');
            },
        };
        const skipped = await runFlow((as) => as.sync(skip, (as) => {}));
        assert.strictEqual(skipped.err, null);
        assert.deepStrictEqual(skipped.args, ['skipped']);
    });

test('a function with a sync() method is a sync object too (a class with a static sync())', T, async () => {
    let ran = 0;
    class Gate {
        static sync(as, step, onerror) {
            as.add(step, onerror);
        }
    }
    const r = await runFlow((as) => as.sync(Gate, (as) => {
        ran++;
        as.success('in');
    }));
    assert.strictEqual(r.err, null);
    assert.deepStrictEqual(r.args, ['in']);
    const root = $as();
    root.sync(Gate, (as) => {
        ran++;
    });
    await root.promise();
    assert.strictEqual(ran, 2);
});

test('root.sync() inside a step of its flow is Top level add in execution, before the object is asked', T, async () => {
    if (process.env.NODE_ENV === 'production') {
        return; // no such check there
    }
    let asked = 0;
    const silent = {
        sync() {
            asked++;
        },
    };
    const root = $as();
    let thrown = null;
    root.add((as) => {
        try {
            root.sync(silent, (as) => {});
        } catch (e) {
            thrown = e;
        }
    }, (as, err) => {});
    await root.promise().catch(() => {});
    assert.ok(thrown instanceof Error);
    assert.strictEqual(thrown.message, 'InternalError');
    assert.strictEqual(root.state.error_info, 'Top level add in execution');
    assert.strictEqual(asked, 0);
});

test('a Mutex subclass whose sync() calls super.sync(): its section follows an await() of the same step and gets its value', T,
    async () => {
        const { Mutex } = $as;
        let calls = 0;
        class CountedMutex extends Mutex {
            sync(as, step, onerror) {
                calls++;
                super.sync(as, step, onerror);
            }
        }
        const m = new CountedMutex();
        const r = await runFlow((as) => {
            as.await(Promise.resolve('awaited'));
            as.sync(m, (as, v) => as.success(v + '!'));
        });
        assert.strictEqual(r.err, null);
        assert.deepStrictEqual(r.args, ['awaited!']);
        const misuse = await runFlow((as) => {
            as.sync(m, (as) => as.success('in'));
            as.success('x');
        });
        assert.strictEqual(misuse.err, 'InternalError');
        assert.strictEqual(misuse.info, 'Invalid success() call');
        assert.strictEqual(calls, 2);
    });

/* futoin-asyncsteps' own Mutex, Throttle and Limiter work on its internals:
 * they set _on_cancel, _queue or _on_error on the step interface and read
 * its _call_args (a dependency that still requires that library) */
const foreignSync = (touch) => ({
    sync(as, step, onerror) {
        as.add((asp) => touch(asp, step, onerror));
    },
});

if (isPolyglot) {
    test('a sync object of futoin-asyncsteps fails the flow with InternalError; its section never goes silently unguarded', T,
        async () => {
            const touches = [
                (asp, step, onerror) => { // its Mutex
                    asp._on_cancel = () => {};
                    asp._queue = [[step, onerror]];
                },
                (asp, step, onerror) => { // its Throttle, let in at once
                    asp._on_error = onerror;
                    step(asp, ...asp._call_args);
                },
            ];
            for (const touch of touches) {
                let ran = false;
                const r = await flow((as) => {
                    as.sync(foreignSync(touch), (as) => {
                        ran = true;
                    });
                });
                assert.strictEqual(r.err, 'InternalError');
                assert.match(r.info, /futoin-asyncsteps/);
                assert.strictEqual(ran, false);
            }
        });
}
