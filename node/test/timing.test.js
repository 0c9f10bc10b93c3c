'use strict';

// When steps run, as futoin-asyncsteps schedules them: execute() starts the
// flow synchronously, an external success() continues on a later event, and
// a long flow runs in bursts that let other events in.

const test = require('node:test');
const assert = require('node:assert');
const { $as, runFlow, deferred, T } = require('./helpers');

test('execute() runs the first step synchronously', T, async () => {
    const trace = [];
    const done = deferred();
    const root = $as();
    root.add((as) => {
        trace.push('first');
        as.waitExternal();
        setTimeout(() => as.success(), 1);
    });
    root.add((as) => done.resolve());
    trace.push('before');
    assert.strictEqual(root.execute(), root);
    trace.push('after');
    assert.deepStrictEqual(trace, ['before', 'first', 'after']);
    await done.promise;
});

test('a short flow of plain steps completes inside execute()', () => {
    const trace = [];
    const root = $as();
    root.add((as) => {
        trace.push(1);
        as.add((as) => trace.push(2));
    });
    root.add((as) => trace.push(3));
    root.execute();
    trace.push('returned');
    assert.deepStrictEqual(trace, [1, 2, 3, 'returned']);
});

test('an external success() continues the flow on a later event, not inside the call', T, async () => {
    const trace = [];
    const r = await runFlow((as) => {
        as.add((as) => {
            as.waitExternal();
            setTimeout(() => {
                trace.push('success() called');
                as.success('v');
                trace.push('success() returned');
            }, 1);
        });
        as.add((as, v) => trace.push(`next ${v}`));
    });
    assert.strictEqual(r.err, null);
    assert.deepStrictEqual(trace, ['success() called', 'success() returned', 'next v']);
});

test('a timeout fires on its own event after execute() returned', T, async () => {
    const trace = [];
    const done = deferred();
    const root = $as();
    root.add((as) => as.setTimeout(0), (as, err) => {
        trace.push(err);
        done.resolve();
    });
    root.execute();
    trace.push('returned');
    await done.promise;
    assert.deepStrictEqual(trace, ['returned', 'Timeout']);
});

test('a flow of more than 100 steps lets other events run between its bursts', T, async () => {
    const STEPS = 1000;
    let count = 0;
    let seenByImmediate = -1;
    let immediates = 0;
    const root = $as();
    root.add((as) => {
        // an event queued before the flow's next burst
        setImmediate(() => {
            seenByImmediate = count;
        });
    });
    for (let i = 0; i < STEPS; ++i) {
        root.add((as) => {
            ++count;
        });
    }
    const end = root.promise();
    const tick = () => {
        ++immediates;
        if (count < STEPS) {
            setImmediate(tick);
        }
    };
    setImmediate(tick);
    await end;
    assert.strictEqual(count, STEPS);
    assert.ok(seenByImmediate >= 0, 'the other event ran');
    assert.ok(seenByImmediate < STEPS, `it ran before the flow ended (at step ${seenByImmediate})`);
    assert.ok(immediates > 1, 'other events ran several times during the flow');
});

test('two long flows interleave', T, async () => {
    const STEPS = 600;
    const trace = [];
    const mk = (name) => {
        const root = $as();
        for (let i = 0; i < STEPS; ++i) {
            root.add((as) => trace.push(name));
        }
        return root.promise();
    };
    await Promise.all([mk('a'), mk('b')]);
    assert.strictEqual(trace.length, 2 * STEPS);
    const lastA = trace.lastIndexOf('a');
    const firstB = trace.indexOf('b');
    assert.ok(firstB < lastA, 'b started before a ended');
    let switches = 0;
    for (let i = 1; i < trace.length; ++i) {
        if (trace[i] !== trace[i - 1]) {
            ++switches;
        }
    }
    assert.ok(switches >= 2, `the flows alternate (${switches} switches)`);
});
