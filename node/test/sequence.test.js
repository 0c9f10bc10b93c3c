'use strict';

// Root-level steps without onerror one after another: what each passes on,
// and what a step that does more than complete does to the ones after it
// (futoin-polyglot runs such a sequence as one engine step while each only
// completes; futoin-asyncsteps runs them one by one).

const test = require('node:test');
const assert = require('node:assert');
const { $as, onTestTool, T } = require('./helpers');

/* root.add() each of steps, then a last one that pushes 'end' to trace;
 * resolves once that one ran */
const sequence = (steps, trace) => new Promise((resolve) => {
    const root = $as();
    for (const s of steps) {
        root.add(s);
    }
    root.add((as) => {
        trace.push('end');
        resolve();
    });
    root.execute();
});

/* what a step received: its values, and how many */
const got = (trace) => function(as, ...args) {
    trace.push([arguments.length - 1, ...args]);
};

test('each step of a sequence gets what the one before passed on', T, async () => {
    const trace = [];
    const obj = { a: 1 };
    await sequence([
        (as) => {},
        got(trace),
        (as) => as.success(),
        got(trace),
        (as) => as.success(1, -0, 2.5),
        got(trace),
        (as) => as.success('two', obj),
        got(trace),
        (as) => as.successStep(undefined),
        got(trace),
        (as) => as.success(1, 2, 3, 4, 5, 6),
        got(trace),
        (as) => as.successStep(7, 'x'),
        got(trace),
        (as) => as.success(null),
        got(trace),
    ], trace);
    assert.deepStrictEqual(trace, [
        [0], [0], [3, 1, -0, 2.5], [2, 'two', obj], [1, undefined], [6, 1, 2, 3, 4, 5, 6],
        [2, 7, 'x'], [1, null], 'end',
    ]);
    assert.ok(Object.is(trace[2][2], -0));
    assert.strictEqual(trace[3][2], obj);
});

test('sub-steps of a step run before the next step, which gets their values', T, async () => {
    const trace = [];
    await sequence([
        (as) => trace.push('a'),
        (as) => {
            trace.push('b');
            as.add((as) => {
                trace.push('b.1');
                as.success(5);
            });
            as.add((as, v) => {
                trace.push(['b.2', v]);
                as.success(v + 1, 'x');
            });
        },
        got(trace),
        (as) => trace.push('c'),
    ], trace);
    assert.deepStrictEqual(trace, ['a', 'b', 'b.1', ['b.2', 5], [2, 6, 'x'], 'c', 'end']);
});

test('a step that waits holds back the steps after it until its external success()', T, async () => {
    const trace = [];
    await sequence([
        (as) => trace.push('a'),
        (as) => {
            as.setTimeout(5000);
            setImmediate(() => {
                trace.push('external');
                as.success('late');
            });
        },
        got(trace),
        (as) => {
            as.waitExternal();
            setImmediate(() => as.success());
        },
        got(trace),
    ], trace);
    assert.deepStrictEqual(trace, ['a', 'external', [1, 'late'], [0], 'end']);
});

test('an error in a step: the steps after it never run', T, async () => {
    const trace = [];
    const root = $as();
    root.add((as) => trace.push('a'));
    root.add((as) => as.error('Failed', 'info'));
    root.add((as) => trace.push('c'));
    root.add((as) => trace.push('d'));
    const err = await root.promise().then(() => null, (e) => e.message);
    assert.strictEqual(err, 'Failed');
    assert.strictEqual(root.state.error_info, 'info');
    assert.deepStrictEqual(trace, ['a']);
    // a thrown exception, the same
    const trace2 = [];
    const root2 = $as();
    root2.add((as) => trace2.push('a'));
    root2.add((as) => {
        throw new Error('Thrown');
    });
    root2.add((as) => trace2.push('c'));
    const err2 = await root2.promise().then(() => null, (e) => e.message);
    assert.strictEqual(err2, 'Thrown');
    assert.deepStrictEqual(trace2, ['a']);
});

test('cancel() of the root inside a step: the steps after it never run', T, async () => {
    const trace = [];
    const root = $as();
    root.add((as) => trace.push('a'));
    root.add((as) => {
        root.cancel();
        trace.push('cancelled');
    });
    root.add((as) => trace.push('c'));
    root.add((as) => trace.push('d'));
    root.execute();
    await new Promise((resolve) => setTimeout(resolve, 5));
    assert.deepStrictEqual(trace, ['a', 'cancelled']);
});

test('the interface of a step that completed is out of service to the steps after it', T, async () => {
    const trace = [];
    let first = null;
    await sequence([
        (as) => {
            first = as;
        },
        (as) => {
            trace.push(first.state);
            try {
                first.add((as) => trace.push('never'));
            } catch (e) {
                trace.push(e.message);
            }
            try {
                first.success(1);
            } catch (e) {
                trace.push(e.message);
            }
            as.success(2);
        },
        got(trace),
    ], trace);
    const STALE = 'InternalError: Unexpected call, object is out of service';
    assert.deepStrictEqual(trace, [null, STALE, STALE, [1, 2], 'end']);
});

test('async_stack lists every step of the sequence that ran, up to the failing one', T, async () => {
    const a = (as) => {};
    const b = (as) => as.success(1);
    const c = (as) => as.error('Failed');
    const d = (as) => {};
    const root = $as();
    const ended = new Promise((resolve) => {
        root.add(a).add(b).add(c).add(d);
        // no handler of c's error: this one belongs to the last step only
        root.add((as) => resolve(), (as, err) => resolve());
        root.execute();
        setImmediate(resolve);
    });
    await ended;
    if (process.env.NODE_ENV !== 'production') {
        assert.deepStrictEqual(root.state.async_stack, [a, b, c]);
    }
    assert.strictEqual(root.state.last_exception.message, 'Failed');
});

test('a flow run inside a step of a sequence runs its first burst there', T, async () => {
    const trace = [];
    await sequence([
        (as) => trace.push('a'),
        (as) => {
            $as().add((as) => trace.push('inner 1')).add((as) => trace.push('inner 2')).execute();
            trace.push('b');
        },
        (as) => trace.push('c'),
    ], trace);
    assert.deepStrictEqual(trace, ['a', 'inner 1', 'inner 2', 'b', 'c', 'end']);
});

test('under AsyncToolTest a long sequence runs in bursts of at most 100 steps, one per event', T, async () => {
    await onTestTool((AT) => {
        let count = 0;
        const root = $as();
        for (let i = 0; i < 250; ++i) {
            root.add((as) => {
                ++count;
            });
        }
        root.execute();
        const seen = [count];
        while (AT.hasEvents()) {
            AT.nextEvent();
            seen.push(count);
        }
        assert.ok(seen[0] > 0 && seen[0] <= 100, `first burst: ${seen[0]}`);
        for (let i = 1; i < seen.length; ++i) {
            assert.ok(seen[i] - seen[i - 1] <= 100, `burst ${i}: ${seen[i] - seen[i - 1]}`);
        }
        assert.ok(seen.length >= 3, `events: ${seen.length}`);
        assert.strictEqual(count, 250);
    });
});

test('steps that each add sub-steps keep their order, and the next gets the last values', T, async () => {
    const trace = [];
    const steps = [];
    for (let i = 0; i < 6; ++i) {
        steps.push((as, v) => {
            trace.push(`s${i}:${v}`);
            as.add((as) => {
                trace.push(`s${i}.sub`);
                as.success(i);
            });
        });
        if (i === 3) {
            steps.push((as, v) => {
                trace.push(`plain:${v}`);
                as.success(v * 10);
            });
        }
    }
    await sequence(steps, trace);
    assert.deepStrictEqual(trace, [
        's0:undefined', 's0.sub', 's1:0', 's1.sub', 's2:1', 's2.sub', 's3:2', 's3.sub', 'plain:3',
        's4:30', 's4.sub', 's5:4', 's5.sub', 'end',
    ]);
});

test('a step of a sequence that runs sequences of other flows goes on with its own', T, async () => {
    const trace = [];
    // the last step waits for the inner flow's end (whenever it comes)
    let innerDone = false;
    let release = null;
    await sequence([
        (as) => trace.push('a'),
        (as) => {
            const inner = $as();
            inner.add((as) => trace.push('x1'));
            inner.add((as) => {
                as.add((as) => trace.push('x2.sub'));
            });
            inner.add((as) => trace.push('x3'));
            inner.add((as) => {
                as.setTimeout(1000);
                setImmediate(() => as.success());
            });
            inner.add((as) => {
                trace.push('x5');
                innerDone = true;
                if (release !== null) {
                    release();
                }
            });
            inner.execute();
            trace.push('b');
            as.success(2);
        },
        got(trace),
        (as) => trace.push('d'),
        (as) => {
            if (innerDone) {
                trace.push('inner ended first');
            } else {
                as.waitExternal();
                release = () => as.success();
            }
        },
    ], trace);
    assert.deepStrictEqual(trace, ['a', 'x1', 'x2.sub', 'x3', 'b', [1, 2], 'd', 'x5', 'end']);
});

/* a random sequence of root-level steps (kinds below), run under
 * AsyncToolTest to its end: the trace of what ran and what each got */
const randomFlow = (AT, rnd, noeh) => {
    const KINDS = ['plain', 'num', 'nums', 'str', 'obj', 'many', 'ss', 'ssobj', 'sub', 'subval',
        'wait', 'timeout', 'error', 'throw', 'cancel', 'nested', 'none'];
    const trace = [];
    const root = $as();
    const eh = noeh ? (as, err) => {} : undefined; // handles nothing, the error goes on
    const len = 1 + rnd(12);
    const show = (a) => (typeof a === 'object' ? JSON.stringify(a) : String(a));
    for (let i = 0; i < len; ++i) {
        const k = KINDS[rnd(KINDS.length)];
        const fail = rnd(4) === 0;
        root.add(function(as, ...args) {
            trace.push(`${i}:${k}(${args.map(show).join(',')})`);
            switch (k) {
            case 'num': as.success(i); break;
            case 'nums': as.success(i, -i, 0.5); break;
            case 'str': as.success(`s${i}`); break;
            case 'obj': as.success({ i }); break;
            case 'many': as.success(1, 2, 3, 4, 5, i); break;
            case 'ss': as.successStep(i * 2); break;
            case 'ssobj': as.successStep([i]); break;
            case 'sub': as.add((as) => trace.push(`${i}.sub`)); break;
            case 'subval':
                as.add((as) => {
                    trace.push(`${i}.sub`);
                    as.success(`v${i}`);
                });
                break;
            case 'wait':
                as.waitExternal();
                AT.callLater(() => as.success(i), 0);
                break;
            case 'timeout':
                as.setTimeout(1000);
                AT.callLater(() => as.success(), 0);
                break;
            case 'error': if (fail) as.error(`E${i}`); break;
            case 'throw': if (fail) throw new Error(`T${i}`); break;
            case 'cancel': if (fail) root.cancel(); break;
            case 'nested':
                $as().add((as) => trace.push(`${i}.n1`))
                    .add((as) => as.add((as) => trace.push(`${i}.n2`)))
                    .add((as) => trace.push(`${i}.n3`))
                    .execute();
                break;
            case 'none': as.success(); break;
            default: break;
            }
        }, eh);
    }
    root.add((as, ...args) => trace.push(`end:${args.length}`), eh);
    root.execute();
    AT.run();
    const e = root.state.last_exception;
    return `${trace.join(' ')} | ${root.state.error_info} ${e ? e.message : ''}`;
};

test('random sequences of steps: the same trace whether they run as one batch or one by one', T, async () => {
    await onTestTool((AT) => {
        for (const seed of [1, 7, 42]) {
            const traces = [];
            for (const noeh of [false, true]) {
                // the same random choices for both runs
                let s = seed;
                const rnd = (n) => {
                    s = (s * 1103515245 + 12345) & 0x7fffffff;
                    return s % n;
                };
                const flows = [];
                for (let f = 0; f < 40; ++f) {
                    flows.push(randomFlow(AT, rnd, noeh));
                }
                traces.push(flows);
            }
            assert.deepStrictEqual(traces[0], traces[1], `seed ${seed}`);
            assert.ok(traces[0].some((t) => t.includes('end:')), 'some flows end');
            assert.ok(traces[0].some((t) => !t.includes('end:')), 'some flows fail or are cancelled');
        }
    });
});

test('many values from outside a callback reach the next step whole: from an event and from a flow executed inside the callback', T, async () => {
    const ten = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
    const got = await new Promise((resolve) => {
        $as().add((as) => {
            as.waitExternal();
            setImmediate(() => as.success(...ten));
        }).add((as, ...a) => as.success(...a.slice(1))).add((as, ...nine) => {
            as.waitExternal();
            $as().add((as2) => as.success(...nine)).execute();
        }).add((as, ...a) => resolve(a)).execute();
    });
    assert.deepStrictEqual(got, ten.slice(1));
});
