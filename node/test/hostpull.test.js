'use strict';

// JS steps and loop bodies of our own roots are taken by JS from the engine
// (hostNext/hostDone), never called by the engine from C: the fast path
// must stay the path taken, with the values, iterations and order intact.
const test = require('node:test');
const assert = require('node:assert');
const $as = require('..');
const N = require('../lib/binding');

const run = (build) => new Promise((resolve, reject) => {
    const as = $as();
    build(as);
    as.add((as) => resolve(as.state), (as, err) => reject(new Error(err)));
    as.execute();
});

test('steps, loop, repeat and forEach bodies are all pulled by JS', async () => {
    const before = N.stats().hostFallbacks;
    const seen = [];
    await run((as) => {
        as.add((as) => as.success(1, 'a'));
        as.add((as, n, s) => seen.push(`step:${n}${s}`));
        as.repeat(3, (as, i) => {
            seen.push(`rep:${i}`);
            if (i === 1) {
                as.add((as) => seen.push('sub'));
            }
        });
        let left = 2;
        as.loop((as) => {
            seen.push('loop');
            if (--left === 0) {
                as.break();
            }
        });
        as.forEach([5, 6], (as, i, v) => seen.push(`each:${i}=${v}`));
        as.forEach(new Map([['k', 7]]), (as, k, v) => seen.push(`map:${k}=${v}`));
    });
    assert.deepStrictEqual(seen, [
        'step:1a', 'rep:0', 'rep:1', 'sub', 'rep:2', 'loop', 'loop',
        'each:0=5', 'each:1=6', 'map:k=7',
    ]);
    assert.strictEqual(N.stats().hostFallbacks, before);
});

test('error handlers are pulled by JS, with the code and error_info', async () => {
    const before = N.stats().hostFallbacks;
    const seen = [];
    const state = await run((as) => {
        as.add((as) => {
            as.add((as) => as.error('First', 'one'), (as, err) => {
                seen.push(`${err}:${as.state.error_info}`);
                as.error('Second', 'two');
            });
        }, (as, err) => {
            seen.push(`${err}:${as.state.error_info}`);
            as.add((as) => seen.push('sub'));
        });
        as.add((as) => {
            as.setTimeout(1);
        }, (as, err) => {
            seen.push(`${err}:${as.state.error_info}`);
            as.success('recovered');
        });
        as.add((as, v) => seen.push(v));
        as.add((as) => {
            throw new TypeError('thrown');
        }, (as, err) => {
            seen.push(`${err}:${as.state.last_exception.constructor.name}`);
            as.success();
        });
    });
    assert.deepStrictEqual(seen, ['First:one', 'Second:two', 'sub', 'Timeout:undefined', 'recovered',
        'thrown:TypeError']);
    assert.strictEqual(state.error_info, undefined);
    assert.strictEqual(N.stats().hostFallbacks, before);
});

test('a long repeat runs in bursts and keeps its iteration numbers', async () => {
    let sum = 0;
    let turns = 0;
    const tick = setInterval(() => {}, 1000);
    const counter = () => {
        ++turns;
        if (sum < 4999950000) {
            setImmediate(counter);
        }
    };
    setImmediate(counter);
    await run((as) => as.repeat(100000, (as, i) => {
        sum += i;
    }));
    clearInterval(tick);
    assert.strictEqual(sum, 4999950000);
    assert.ok(turns >= 100000 / 100 - 1, `other callbacks ran only ${turns} times`);
});
