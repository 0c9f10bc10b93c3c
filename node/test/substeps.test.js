'use strict';

// A step whose callback only adds one sub-step: that sub-step runs next,
// alone under the step, and the step completes as the sub-step does
// (futoin-polyglot runs such a sub-step as part of its parent's engine
// step; futoin-asyncsteps runs it as a step of its own). Whatever the
// sub-step does must look the same either way.

const test = require('node:test');
const assert = require('node:assert');
const { $as, runFlow, onTestTool, T } = require('./helpers');

/* a step that adds one sub-step, which adds one, ... `depth` deep; the
 * innermost runs `last` */
const chain = (trace, depth, last) => {
    const level = (d) => (as) => {
        trace.push(d);
        if (d === depth) {
            last(as);
        } else {
            as.add(level(d + 1));
        }
    };
    return level(0);
};

test('values of the innermost sub-step reach the step after the parent', T, async () => {
    const trace = [];
    const root = $as();
    root.add(chain(trace, 5, (as) => as.success(1, 'a', { b: 2 })));
    root.add((as, ...args) => trace.push(args));
    root.add(chain(trace, 3, (as) => {}));
    root.add((as, ...args) => trace.push(args));
    await root.promise();
    assert.deepStrictEqual(trace, [0, 1, 2, 3, 4, 5, [1, 'a', { b: 2 }], 0, 1, 2, 3, []]);
});

test('sub-steps a sub-step adds run before its parent completes', T, async () => {
    const trace = [];
    const root = $as();
    root.add(chain(trace, 2, (as) => {
        as.add((as) => trace.push('x'));
        as.add((as) => {
            trace.push('y');
            as.success('y');
        });
    }));
    root.add((as, v) => trace.push(`next:${v}`));
    await root.promise();
    assert.deepStrictEqual(trace, [0, 1, 2, 'x', 'y', 'next:y']);
});

test('successStep() then add(): the sub-step gets the values', T, async () => {
    const trace = [];
    const root = $as();
    root.add((as) => {
        as.successStep(7, 'v');
        as.add((as, ...args) => {
            trace.push(args);
            as.add((as, ...args) => trace.push(args));
        });
    });
    root.add((as, ...args) => trace.push(['next', ...args]));
    await root.promise();
    assert.deepStrictEqual(trace, [[7, 'v'], [], ['next']]);
});

test('an error of a sub-step goes to the parent\'s handler', T, async () => {
    const trace = [];
    const inner = function innerStep(as) {
        trace.push('inner');
        as.error('MyError', 'my info');
    };
    const r = await runFlow((as) => {
        as.add((as) => {
            trace.push('outer');
            as.add(inner);
        }, (as, err) => {
            trace.push(`eh:${err}:${as.state.error_info}`);
            if (Array.isArray(as.state.async_stack)) { // production: an empty stand-in
                trace.push(as.state.async_stack.includes(inner));
            }
            as.success('recovered');
        });
    });
    assert.strictEqual(r.err, null);
    assert.deepStrictEqual(r.args, ['recovered']);
    assert.deepStrictEqual(trace.slice(0, 3), ['outer', 'inner', 'eh:MyError:my info']);
});

test('an exception a sub-step throws is the error, kept as last_exception', T, async () => {
    const boom = new Error('Boom');
    const r = await runFlow((as) => {
        as.add((as) => {
            as.add((as) => {
                throw boom;
            });
        });
    });
    assert.strictEqual(r.err, 'Boom');
    assert.strictEqual(r.state.last_exception, boom);
});

test('a sub-step that waits: the flow goes on when it completes from outside', T, async () => {
    const trace = [];
    let outer = null;
    let inner = null;
    const root = $as();
    root.add((as) => {
        outer = as;
        as.add((as) => {
            inner = as;
            as.waitExternal();
        });
    });
    root.add((as, v) => trace.push(`next:${v}`));
    const end = root.promise();
    assert.notStrictEqual(inner, null);
    assert.notStrictEqual(outer.state, null, 'the parent is active while its sub-step waits');
    assert.notStrictEqual(inner.state, null);
    inner.success(42);
    await end;
    assert.deepStrictEqual(trace, ['next:42']);
    assert.strictEqual(inner.state, null);
});

test('a sub-step\'s timeout goes to the parent\'s handler', T, async () => {
    const r = await runFlow((as) => {
        as.add((as) => {
            as.add((as) => as.setTimeout(1));
        }, (as, err) => {
            as.success(`handled:${err}`);
        });
    });
    assert.strictEqual(r.err, null);
    assert.deepStrictEqual(r.args, ['handled:Timeout']);
});

test('a sub-step of a cancelled flow never runs; its cancel handler does', T, async () => {
    const trace = [];
    const root = $as();
    let waiting = null;
    root.add((as) => {
        as.add((as) => {
            trace.push('inner');
            as.setCancel(() => trace.push('cancel handler'));
            waiting = as;
        });
    });
    root.add((as) => trace.push('next'));
    root.execute();
    assert.deepStrictEqual(trace, ['inner']);
    root.cancel();
    assert.deepStrictEqual(trace, ['inner', 'cancel handler']);
    assert.strictEqual(waiting.state, null);

    await onTestTool((AT) => {
        const root2 = $as();
        root2.add((as) => {
            root2.cancel();
            as.add((as) => trace.push('never'));
        });
        root2.add((as) => trace.push('never either'));
        root2.execute();
        AT.run(); // every event of the flow, in virtual time
    });
    assert.deepStrictEqual(trace, ['inner', 'cancel handler']);
});

test('the parent\'s interface is out of bounds inside its sub-step', T, async () => {
    // as futoin-asyncsteps' own test "should trigger ASP sanity check"
    const r = await runFlow((as) => {
        const oas = as;
        as.add((as) => {
            oas.success();
        });
    });
    assert.strictEqual(r.err, 'InternalError');
    assert.strictEqual(r.info, $as.isProduction ? 'Invalid success() call' : 'Invalid call (sanity check)');

    const r2 = await runFlow((as) => {
        const oas = as;
        as.add((as) => {
            oas.add((as) => {});
        });
    });
    assert.strictEqual(r2.err, 'InternalError');
});

test('the state a sub-step sees is its flow\'s; the parent keeps it until done', T, async () => {
    const root = $as();
    root.state.seen = [];
    let outer = null;
    root.add((as) => {
        outer = as;
        as.add((as) => {
            as.state.seen.push(outer.state !== null);
            as.state.x = 1;
        });
    });
    root.add((as) => {
        as.state.seen.push(outer.state);
    });
    await root.promise();
    assert.deepStrictEqual(root.state.seen, [true, null]);
    assert.strictEqual(root.state.x, 1);
});

test('long chains of sub-steps run in bursts that let other flows in', T, async () => {
    await onTestTool((AT) => {
        const trace = [];
        const mk = (name) => {
            const root = $as();
            for (let i = 0; i < 3; ++i) {
                root.add(chain([], 150, (as) => {}));
            }
            root.add((as) => trace.push(`${name}:end`));
            root.add(chain(trace, 0, (as) => {}));
            root.execute();
            return root;
        };
        mk('a');
        mk('b');
        AT.run();
        // b ends soon after a: the bursts of a did not hold b back
        assert.deepStrictEqual(trace, ['a:end', 0, 'b:end', 0]);
        let events = 0;
        const root = $as();
        root.add(chain([], 1000, (as) => {}));
        root.execute();
        while (AT.hasEvents()) {
            AT.nextEvent();
            ++events;
        }
        assert.ok(events >= 10, `1000 nested steps took ${events} events`);
    });
});


test('loop bodies that add one sub-step: order, break, continue, labels', T, async () => {
    const trace = [];
    const root = $as();
    root.add((as) => {
        as.repeat(3, (as, i) => as.add((as) => trace.push(`r${i}`)));
    });
    root.add((as) => {
        let n = 0;
        as.loop((as) => as.add((as) => {
            if (++n === 3) {
                as.break();
            }
            trace.push(`l${n}`);
        }));
    });
    root.add((as) => {
        as.repeat(3, (as, i) => as.add((as) => {
            if (i === 1) {
                as.continue();
            }
            trace.push(`c${i}`);
        }));
    });
    root.add((as) => {
        as.loop((as) => {
            as.repeat(5, (as, i) => as.add((as) => {
                if (i === 2) {
                    as.break('outer');
                }
                trace.push(`o${i}`);
            }));
        }, 'outer');
    });
    root.add((as) => {
        as.forEach(['a', 'b'], (as, k, v) => as.add((as) => trace.push(`f${k}${v}`)));
    });
    root.add((as) => trace.push('end'));
    await root.promise();
    assert.deepStrictEqual(trace, ['r0', 'r1', 'r2', 'l1', 'l2', 'c0', 'c2', 'o0', 'o1', 'f0a', 'f1b', 'end']);
});

test('an error in a loop body\'s sub-step ends the loop at its handler', T, async () => {
    const trace = [];
    const r = await runFlow((as) => {
        as.repeat(5, (as, i) => as.add((as) => {
            trace.push(i);
            if (i === 2) {
                as.error('Stop', 'at 2');
            }
        }));
    });
    assert.strictEqual(r.err, 'Stop');
    assert.strictEqual(r.info, 'at 2');
    assert.deepStrictEqual(trace, [0, 1, 2]);
});
