'use strict';

// Test fake clocks (node:test's mock.timers, sinon's fake timers): what
// futoin-asyncsteps runs on the global timer functions follows them. A
// file of its own: a period left running by another test on a real timer
// would meet the mocked clearInterval().

const test = require('node:test');
const assert = require('node:assert');
const { $as, T } = require('./helpers');
const { Throttle, Limiter } = $as;

/* execute a flow; resolves with its end: { err } */
const flow = (build) => new Promise((resolve) => {
    const root = $as();
    root.add((as) => build(as), (as, err) => resolve({ err }));
    root.add((as) => resolve({ err: null }));
    root.execute();
});

test('Throttle and Limiter periods follow a mocked setInterval() (a test\'s fake clock), as in futoin-asyncsteps', T,
    async (t) => {
        // a period of 30 s: only the fake clock can end it within the test
        // (a real one would time it out, and end the process soon after)
        const P = 30000;
        t.mock.timers.enable({ apis: ['setInterval'] });
        try {
            for (const obj of [
                new Throttle(1, P),
                new Limiter({ concurrent: 3, max_queue: 5, rate: 1, period_ms: P, burst: 5 }),
            ]) {
                const trace = [];
                const ends = ['a', 'b', 'c'].map((n) => flow((as) => as.sync(obj, (as) => {
                    trace.push(n);
                })));
                assert.deepStrictEqual(trace, ['a']);
                t.mock.timers.tick(P); // b goes in
                const second = await Promise.race([ends[1], ends[2]]);
                assert.strictEqual(second.err, null);
                assert.deepStrictEqual(trace, ['a', 'b']);
                t.mock.timers.tick(P); // c
                await ends[2];
                assert.deepStrictEqual(trace, ['a', 'b', 'c']);
                t.mock.timers.tick(P); // idle: its interval ends
                t.mock.timers.tick(P);
                // a new period starts on the fake clock again
                const more = ['d', 'e'].map((n) => flow((as) => as.sync(obj, (as) => {
                    trace.push(n);
                })));
                assert.deepStrictEqual(trace, ['a', 'b', 'c', 'd']);
                t.mock.timers.tick(P);
                await Promise.all(more);
                assert.deepStrictEqual(trace, ['a', 'b', 'c', 'd', 'e']);
                t.mock.timers.tick(P);
                t.mock.timers.tick(P);
            }
        } finally {
            t.mock.timers.reset();
        }
    });
