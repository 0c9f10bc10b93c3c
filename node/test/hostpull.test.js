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

test('numbers passed through shared memory keep their exact value', async () => {
    const got = [];
    const edge = [-0, NaN, Infinity, -Infinity, 2 ** 53 + 2, -(2 ** 53), 1.5, 0, 7, -1, 2 ** 31];
    await run((as) => {
        for (const v of edge) {
            as.add((as) => as.success(v));
            as.add((as, x) => got.push(x));
            as.successStep(v);
            as.add((as, x) => got.push(x));
        }
        as.add((as) => as.success(1, 2.5, -0, 4));
        as.add((as, ...xs) => got.push(xs));
        as.add((as) => as.success(1, 'two'));
        as.add((as, ...xs) => got.push(xs));
        // success, then add(): out of service, it throws after the success
        as.add((as) => {
            as.success(3);
            as.add((as) => {});
        }, (as, err) => {
            got.push(`${err}:${as.state.error_info}`);
            as.success();
        });
    });
    const want = [];
    for (const v of edge) {
        want.push(v, v);
    }
    want.push([1, 2.5, -0, 4], [1, 'two'], 'InternalError:handle_error() after success()');
    assert.deepStrictEqual(got, want);
    assert.ok(Object.is(got[0], -0) && Object.is(got[1], -0));
    assert.ok(Object.is(got[got.length - 3][2], -0));
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

test('an error JS raised reaches every handler with its code, error_info and exception', async () => {
    const seen = [];
    let thrown = null;
    await new Promise((resolve) => {
        $as()
            .add(
                (as) => {
                    as.add(
                        (as) => {
                            as.add((as) => {
                                try {
                                    as.error('Inner', 'i1');
                                } catch (e) {
                                    thrown = e;
                                    throw e;
                                }
                            });
                        },
                        (as, err) => seen.push([err, as.state.error_info, as.state.last_exception === thrown]),
                    );
                },
                (as, err) => {
                    seen.push([err, as.state.error_info, as.state.last_exception === thrown]);
                    as.error('Outer'); // another code: the state follows it
                },
            )
            .add((as) => {})
            .execute();
        setImmediate(resolve);
    });
    assert.deepStrictEqual(seen, [['Inner', 'i1', true], ['Inner', 'i1', true]]);
});

test('the same error code raised again with other error_info', async () => {
    const seen = [];
    const state = await run((as) => {
        for (const info of ['a', 'a', 'b', undefined]) {
            as.add(
                (as) => as.error('Same', info),
                (as, err) => {
                    seen.push([err, as.state.error_info]);
                    as.success();
                },
            );
        }
    });
    assert.deepStrictEqual(seen, [['Same', 'a'], ['Same', 'a'], ['Same', 'b'], ['Same', undefined]]);
    assert.strictEqual(state.error_info, undefined);
});

test('successStep() numbers reach the next step exactly, other values too', async () => {
    const seen = [];
    await run((as) => {
        as.add((as) => as.successStep(-0, 2 ** 53 + 2, NaN, 1.5));
        as.add((as, ...v) => seen.push(v));
        as.add((as) => as.successStep('s', 1));
        as.add((as, ...v) => seen.push(v));
        as.add((as) => as.successStep(1, 2, 3, 4, 5));
        as.add((as, ...v) => seen.push(v));
    });
    assert.ok(Object.is(seen[0][0], -0));
    assert.deepStrictEqual(seen.slice(1), [['s', 1], [1, 2, 3, 4, 5]]);
    assert.deepStrictEqual(seen[0].slice(1), [2 ** 53 + 2, NaN, 1.5]);
});
