'use strict';

// await(promise): results, rejections (while waiting or before the step
// runs), error handlers, cancellation.

const test = require('node:test');
const assert = require('node:assert');
const { $as, runFlow, deferred, onTestTool, otherFlow, T } = require('./helpers');

/* a first step that lets promise reactions run before the next step */
const tick = (as) => {
    as.waitExternal();
    setTimeout(() => as.success(), 1);
};

test('await() of a resolved promise passes its value to the next step', T, async () => {
    const obj = { v: 1 };
    const r = await runFlow((as) => {
        as.await(Promise.resolve(obj));
    });
    assert.strictEqual(r.err, null);
    assert.strictEqual(r.args.length, 1);
    assert.strictEqual(r.args[0], obj);
});

test('root.await() and a value resolved later', T, async () => {
    const d = deferred();
    const root = $as();
    root.await(d.promise);
    root.add((as, v) => as.success(v * 2));
    const p = root.promise();
    setTimeout(() => d.resolve(21), 2);
    assert.strictEqual(await p, 42);
});

test('await() of a promise resolved before its step runs', T, async () => {
    const d = deferred();
    d.resolve('early');
    const r = await runFlow((as) => {
        as.add(tick);
        as.await(d.promise);
    });
    assert.deepStrictEqual(r.args, ['early']);
});

test('a promise rejected with an Error while waiting: PromiseReject, the Error kept', T, async () => {
    const d = deferred();
    const reason = new Error('WhileWaiting');
    const r = await runFlow((as) => {
        as.await(d.promise);
        setTimeout(() => d.reject(reason), 2);
    });
    assert.strictEqual(r.err, 'PromiseReject');
    assert.strictEqual(r.state.last_exception, reason);
    assert.strictEqual(r.info, undefined);
});

test('a promise rejected with an Error before its step runs: the Error\'s message', T, async () => {
    const reason = new Error('AlreadyRejected');
    const p = Promise.reject(reason);
    const r = await runFlow((as) => {
        as.add(tick);
        as.await(p);
    });
    assert.strictEqual(r.err, 'AlreadyRejected');
    assert.strictEqual(r.state.last_exception, reason);
});

test('a promise rejected with a string: the string is the code', T, async () => {
    const d = deferred();
    const r = await runFlow((as) => {
        as.await(d.promise);
        setTimeout(() => d.reject('StringReason'), 2);
    });
    assert.strictEqual(r.err, 'StringReason');
    assert.ok(r.state.last_exception instanceof Error);
    assert.strictEqual(r.state.last_exception.message, 'StringReason');

    const early = Promise.reject('EarlyString');
    const r2 = await runFlow((as) => {
        as.add(tick);
        as.await(early);
    });
    assert.strictEqual(r2.err, 'EarlyString');
});

test('a promise rejected with another value while waiting: the handler gets the value itself', T,
    async () => {
        for (const reason of [{ code: 'NotFound' }, 42]) {
            const d = deferred();
            const r = await runFlow((as) => {
                as.await(d.promise);
                setTimeout(() => d.reject(reason), 2);
            });
            assert.strictEqual(r.err, reason);
            assert.ok(r.state.last_exception instanceof Error);
            assert.strictEqual(r.state.last_exception.message, String(reason));
            assert.strictEqual(r.info, undefined);
        }
        // rejected before its step runs: error(reason) inside the step, the
        // code is the Error's message
        const early = Promise.reject({ code: 'Early' });
        const r2 = await runFlow((as) => {
            as.add(tick);
            as.await(early);
        });
        assert.strictEqual(r2.err, '[object Object]');
    });

test('a promise rejected with no reason: PromiseReject', T, async () => {
    const d = deferred();
    const r = await runFlow((as) => {
        as.await(d.promise);
        setTimeout(() => d.reject(), 2);
    });
    assert.strictEqual(r.err, 'PromiseReject');

    const early = Promise.reject(undefined);
    const r2 = await runFlow((as) => {
        as.add(tick);
        as.await(early);
    });
    assert.strictEqual(r2.err, 'PromiseReject');
});

test('await(promise, onerror): the handler catches the rejection', T, async () => {
    const d = deferred();
    const r = await runFlow((as) => {
        as.await(d.promise, (as, err) => {
            as.success(`handled ${err}`);
        });
        setTimeout(() => d.reject('Rejected'), 2);
    });
    assert.strictEqual(r.err, null);
    assert.deepStrictEqual(r.args, ['handled Rejected']);
});

test('await() steps run in order with other steps', T, async () => {
    const trace = [];
    const d1 = deferred();
    const d2 = deferred();
    const r = await runFlow((as) => {
        as.await(d1.promise);
        as.add((as, v) => trace.push(v));
        as.await(d2.promise);
        as.add((as, v) => trace.push(v));
        setTimeout(() => d2.resolve('second'), 1);
        setTimeout(() => d1.resolve('first'), 3);
    });
    assert.strictEqual(r.err, null);
    assert.deepStrictEqual(trace, ['first', 'second']);
});

test('cancel() while awaiting calls promise.cancel() and ignores the late result', T, async () => {
    let cancelled = 0;
    let resolvePromise = null;
    const thenable = {
        then(res, rej) {
            resolvePromise = res;
        },
        cancel() {
            ++cancelled;
        },
    };
    const trace = [];
    await onTestTool(async (AT) => {
        const root = $as();
        root.await(thenable);
        root.add((as, v) => trace.push(`after ${v}`));
        root.execute();
        root.cancel();
        assert.strictEqual(cancelled, 1);
        resolvePromise('late');
        await new Promise((resolve) => setImmediate(resolve));
        AT.run();
    });
    assert.deepStrictEqual(trace, []);
});

test('a timeout on the awaiting step: Timeout, the promise is cancelled', T, async () => {
    let cancelled = 0;
    const thenable = {
        then(res, rej) {},
        cancel() {
            ++cancelled;
        },
    };
    const r = await runFlow((as) => {
        as.add((as) => {
            as.setTimeout(3);
            as.await(thenable);
        });
    });
    assert.strictEqual(r.err, 'Timeout');
    assert.strictEqual(cancelled, 1);
});

/* a few rounds of promise reactions, no loop turn */
const microtasks = async () => {
    for (let i = 0; i < 5; ++i) {
        await Promise.resolve();
    }
};

/* two flows awaiting: one a result, one a rejection with `reason`, both
 * settled after execute(); `between`: after execute(), before settling */
const settleBoth = async (reason, between) => {
    const trace = [];
    const ok = deferred();
    const bad = deferred();
    const a = $as();
    a.add((as) => as.await(ok.promise))
        .add((as, v) => trace.push(`got ${v}`));
    const b = $as();
    b.add((as) => as.await(bad.promise), (as, err) => trace.push(`handled ${err}`));
    a.execute();
    b.execute();
    between();
    ok.resolve(1);
    bad.reject(reason);
    await microtasks();
    return trace;
};

test('a settled await() goes on in the promise reaction, not a loop turn later', T, async () => {
    const trace = await settleBoth('Bad', () => {});
    assert.deepStrictEqual(trace, ['got 1', 'handled Bad']);
});

test('under AsyncToolTest a settled await() goes on without an event too', T, async () => {
    await onTestTool(async (AT) => {
        const trace = await settleBoth(new Error('Bad'), () => AT.run());
        assert.deepStrictEqual(trace, ['got 1', 'handled PromiseReject']);
        assert.strictEqual(AT.hasEvents(), false);
    });
});

test('a rejected await() does not cancel its promise', T, async () => {
    for (const reason of [new Error('boom'), 'MyError']) {
        let cancelled = 0;
        let reject = null;
        const p = new Promise((resolve, rej) => {
            reject = rej;
        });
        p.cancel = () => {
            ++cancelled;
        };
        const got = deferred();
        $as().add((as) => {
            as.await(p);
        }, (as, err) => {
            got.resolve(err);
        }).execute();
        await new Promise((resolve) => setImmediate(resolve));
        reject(reason);
        const err = await got.promise;
        assert.strictEqual(err, reason instanceof Error ? 'PromiseReject' : reason);
        assert.strictEqual(cancelled, 0);
    }
});

/* a step awaiting `promise` whose handler pushes 'handled <code>', queues a
 * setImmediate() that pushes 'immediate', then succeeds; the next step pushes
 * 'next'. Resolves with the order once the flow ended. */
const handledThenNext = (settle) => new Promise((resolve) => {
    const order = [];
    const d = deferred();
    $as().add((as) => {
        as.add((as) => as.await(d.promise), (as, err) => {
            order.push(`handled ${err}`);
            setImmediate(() => order.push('immediate'));
            as.success();
        });
        as.add((as) => order.push('next'));
    }).add((as) => resolve(order)).execute();
    setTimeout(() => settle(d), 1);
});

test('after a rejected await() is handled, the next step runs on a later event, as after any error from outside', T,
    async () => {
        // as futoin-asyncsteps: the handler runs in the rejection's reaction,
        // the steps after it through callImmediate()
        for (const reason of [new Error('Bad'), 'Bad']) {
            const order = await handledThenNext((d) => d.reject(reason));
            const code = reason instanceof Error ? 'PromiseReject' : 'Bad';
            assert.deepStrictEqual(order, [`handled ${code}`, 'immediate', 'next']);
        }
    });

test('under AsyncToolTest the steps after a handled rejection wait for an event, as in futoin-asyncsteps', T,
    async () => {
        await onTestTool(async (AT) => {
            const order = [];
            const d = deferred();
            $as().add((as) => {
                as.add((as) => as.await(d.promise), (as, err) => {
                    order.push(`handled ${err}`);
                    as.success();
                });
                as.add((as) => order.push('next'));
            }).execute();
            AT.run();
            d.reject('Bad');
            await microtasks();
            assert.deepStrictEqual(order, ['handled Bad']);
            assert.strictEqual(AT.hasEvents(), true);
            AT.run();
            assert.deepStrictEqual(order, ['handled Bad', 'next']);
        });
    });

/* a parallel whose branch fails in a step after its await() settles: the
 * parallel's handler (it succeeds) pushes 'handled <code>', a step after the
 * parallel pushes 'next'; `later(f)` queues f as the next event */
const branchFailsAfterAwait = (order, later) => {
    $as().add((as) => {
        as.parallel((as, err) => {
            order.push(`handled ${err}`);
            as.success();
        }).add((as) => {
            as.await(Promise.resolve(1));
            as.add((as) => {
                order.push('fail');
                as.error('E3');
            });
        });
    }).add((as) => order.push('next')).execute();
    later(() => order.push('event'));
};

test('a branch failing after its await() settles: the parallel\'s handler runs in the reaction, the steps after it later', T,
    async () => {
        // as futoin-asyncsteps: the branch error reaches the parallel inside
        // the promise reaction; the steps after the handler through callImmediate()
        const order = [];
        branchFailsAfterAwait(order, setImmediate);
        await microtasks();
        assert.deepStrictEqual(order, ['fail', 'handled E3']);
        await new Promise((resolve) => setImmediate(resolve));
        await new Promise((resolve) => setImmediate(resolve));
        assert.deepStrictEqual(order, ['fail', 'handled E3', 'event', 'next']);
    });

test('the steps after that handler go on in a setImmediate() of their own, ahead of those queued after it', T,
    async () => {
        // as futoin-asyncsteps' callImmediate() at the handler; ours waited
        // for the last of its setImmediate() turns, behind another flow's
        const order = [];
        const completeOther = otherFlow(order);
        const done = deferred();
        $as().add((as) => {
            as.parallel((as, err) => {
                order.push(`handled ${err}`);
                as.success();
                queueMicrotask(() => {
                    setImmediate(() => order.push('immediate'));
                    completeOther();
                });
            }).add((as) => {
                as.await(Promise.resolve(1));
                as.add((as) => as.error('E3'));
            });
        }).add((as) => order.push('next')).execute();
        setImmediate(() => setImmediate(() => setImmediate(done.resolve)));
        await done.promise;
        assert.deepStrictEqual(order, ['handled E3', 'next', 'immediate', 'other flow']);
    });

test('under AsyncToolTest too: the parallel\'s handler without an event, the steps after it at a later one', T,
    async () => {
        await onTestTool(async (AT) => {
            const order = [];
            branchFailsAfterAwait(order, AT.callImmediate);
            await microtasks();
            assert.deepStrictEqual(order, ['fail', 'handled E3']);
            AT.run();
            assert.deepStrictEqual(order, ['fail', 'handled E3', 'event', 'next']);
        });
    });

test('a promise settling after an error from outside moved its step on is ignored, silently', T, () => {
    // as futoin-asyncsteps: no output; before, ours printed "(ignored)" lines
    const { spawnSync } = require('child_process');
    const { IMPL } = require('./helpers');
    const script = `
        const $as = require(${JSON.stringify(IMPL)});
        const log = [];
        let ended = 0;
        for (const fail of [false, true]) {
            let settle = null;
            const r = $as();
            r.await(new Promise((res, rej) => {
                settle = () => (fail ? rej(new Error('late')) : res(1));
            }), (as, err) => {
                log.push('handled ' + err);
                as.add((as) => {
                    as.waitExternal();
                    setImmediate(() => as.success()); // after the late settlement's reaction
                });
            });
            r.add((as) => {
                log.push('next');
                if (++ended === 2) {
                    console.log(log.join(', '));
                }
            });
            r.execute();
            try {
                r.error('Outside'); // its handler runs inside the call
            } catch (e) {
                log.push('threw ' + e.message);
            }
            settle();
        }
    `;
    const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 60000 });
    assert.strictEqual(r.status, 0, r.stderr);
    assert.strictEqual(r.stderr, '');
    assert.strictEqual(r.stdout.trim(),
        'handled Outside, threw Outside, handled Outside, threw Outside, next, next');
});

test('await() as the last step of a loop(), repeat() or forEach() body: the loop goes on', T, async () => {
    const seen = [];
    let n = 0;
    const r = await runFlow((as) => {
        as.loop((as) => {
            if (n++ === 3) {
                as.break();
            }
            as.await(Promise.resolve(n));
        });
        as.repeat(3, (as, i) => {
            as.await(new Promise((resolve) => setImmediate(resolve, `r${i}`)));
        });
        as.forEach(['a', 'b'], (as, k, v) => {
            as.add((as) => {
                as.await(Promise.resolve(v));
            });
        });
        as.add((as, v) => {
            seen.push(v);
            as.loop((as) => {
                // a rejection ends the loop through its handler
                as.await(Promise.reject(new Error('stop')));
            });
        }, (as, err) => {
            seen.push(err);
            as.success('out');
        });
    });
    assert.strictEqual(r.err, null);
    assert.strictEqual(n, 4);
    assert.deepStrictEqual(seen, [undefined, 'PromiseReject']);
    assert.deepStrictEqual(r.args, ['out']);
});

test('the step after a parallel whose branch an await() ended goes on in a setImmediate() of its own, as futoin-asyncsteps', T, async () => {
    const trace = [];
    const done = deferred();
    $as().add((as) => {
        as.parallel().add((as) => {
            as.await(Promise.resolve(1));
            as.add((as) => trace.push('branch after await'));
        });
    }).add((as) => {
        trace.push('after parallel');
        done.resolve();
    }).execute();
    setImmediate(() => trace.push('immediate'));
    await done.promise;
    assert.deepStrictEqual(trace, ['branch after await', 'immediate', 'after parallel']);
});

// an await() that ends its step: what the step does next, in the same
// callback, sees the await() as the sub-step futoin-asyncsteps adds

test('two await() calls in one step: the next step gets the second value', T, async () => {
    const r = await runFlow((as) => {
        as.await(Promise.resolve(1));
        as.await(Promise.resolve(2));
    });
    assert.strictEqual(r.err, null);
    assert.deepStrictEqual(r.args, [2]);
});

test('await() then add(), parallel(), repeat(), loop(), forEach(), sync(): each after the await', T, async () => {
    const { Mutex } = $as;
    const seen = [];
    const builds = [
        (as) => as.add((as, v) => {
            seen.push(['add', v]);
            as.success(v + 1);
        }),
        (as) => as.parallel().add((as, v) => seen.push(['branch', v])),
        (as) => as.repeat(2, (as, i) => seen.push(['repeat', i])),
        (as) => as.loop((as) => {
            seen.push(['loop']);
            as.break();
        }),
        (as) => as.forEach([7], (as, k, v) => seen.push(['forEach', k, v])),
        (as) => as.sync(new Mutex(), (as, v) => {
            seen.push(['sync', v]);
            as.success(v * 2);
        }),
    ];
    const results = [];
    for (const build of builds) {
        const r = await runFlow((as) => {
            as.await(Promise.resolve(10));
            build(as);
        });
        assert.strictEqual(r.err, null);
        results.push(r.args);
    }
    assert.deepStrictEqual(seen, [['add', 10], ['branch', undefined], ['repeat', 0], ['repeat', 1], ['loop'],
        ['forEach', 0, 7], ['sync', 10]]);
    assert.deepStrictEqual(results, [[11], [], [], [], [], [20]]);
});

test('await() then successStep(): the next step gets the successStep() values', T, async () => {
    const r = await runFlow((as) => {
        as.await(Promise.resolve(1));
        as.successStep(5, 6);
    });
    assert.strictEqual(r.err, null);
    assert.deepStrictEqual(r.args, [5, 6]);
});

test('await() then success() in the same callback: InternalError, Invalid success() call', T, async () => {
    const r = await runFlow((as) => {
        as.await(Promise.resolve(1));
        as.success(3);
    });
    assert.strictEqual(r.err, 'InternalError');
    assert.strictEqual(r.info, 'Invalid success() call');
});

test('await() then a throw: the step fails, the settled promise is ignored', T, async () => {
    let later = 0;
    const r = await runFlow((as) => {
        as.await(Promise.resolve(1));
        throw new Error('Boom');
    });
    await new Promise((resolve) => setImmediate(resolve));
    later++;
    assert.strictEqual(r.err, 'Boom');
    assert.strictEqual(later, 1);
});

test('await() of a thenable that settles inside then(): the next step gets its value', T, async () => {
    const r = await runFlow((as) => {
        as.await({
            then(ok) {
                ok(42);
            },
        });
    });
    assert.strictEqual(r.err, null);
    assert.deepStrictEqual(r.args, [42]);
    const rejected = await runFlow((as) => {
        as.await({
            then(ok, fail) {
                fail('Nope');
            },
        });
    });
    assert.strictEqual(rejected.err, 'Nope');
});

test('await() in an error handler: the flow goes on with the value', T, async () => {
    const r = await runFlow((as) => {
        as.add(
            (as) => as.error('First'),
            (as, err) => as.await(Promise.resolve(err + '!')),
        );
    });
    assert.strictEqual(r.err, null);
    assert.deepStrictEqual(r.args, ['First!']);
});

test('async_stack: the step that awaited, then the await\'s own step function', T, async () => {
    if (process.env.NODE_ENV === 'production') {
        return; // no async_stack there
    }
    let inStep = null;
    const step = (as) => {
        as.await(Promise.resolve(1));
        inStep = as._root._exec_stack.slice();
    };
    const r = await runFlow((as) => {
        as.add(step);
        as.add((as) => as.error('Late'));
    });
    assert.strictEqual(r.err, 'Late');
    assert.strictEqual(inStep[inStep.length - 1], step);
    const stack = r.state.async_stack;
    const at = stack.indexOf(step);
    assert.ok(at >= 0);
    // the await's step, the failing step, the error handler
    assert.strictEqual(stack.length, at + 4);
    assert.strictEqual(typeof stack[at + 1], 'function');
    assert.notStrictEqual(stack[at + 1], step);
});

test('success(), add() or error() from outside on a step whose await() waits: InternalError, as futoin-asyncsteps', T,
    async () => {
        if (process.env.NODE_ENV === 'production') {
            return; // no sanity checks there
        }
        const calls = [
            ['success', (as) => as.success(5)],
            ['add', (as) => as.add((as) => as.success())],
            ['error', (as) => as.error('Ext')],
        ];
        // a plain promise, and one with cancel() (its await() sets a cancel handler)
        const cases = calls.flatMap(([name, call]) => [[name, call, false], [name + ', cancellable', call, true]]);
        for (const [name, call, cancellable] of cases) {
            const d = deferred();
            if (cancellable) {
                d.promise.cancel = () => {};
            }
            let thrown = null;
            const r = await runFlow((as) => {
                as.await(d.promise);
                setTimeout(() => {
                    try {
                        call(as);
                    } catch (e) {
                        thrown = e.message;
                    }
                    d.resolve(1);
                }, 1);
            });
            assert.strictEqual(r.err, 'InternalError', name);
            assert.strictEqual(r.info, 'Invalid call (sanity check)', name);
            assert.strictEqual(thrown, 'InternalError', name);
        }
    });

test('await() of a thenable reads then once, and the last of its synchronous settlements counts', T, async () => {
    let reads = 0;
    const thenable = {
        get then() {
            reads++;
            return (ok, fail) => {
                fail('Bad');
                ok('good');
            };
        },
    };
    const r = await runFlow((as) => as.await(thenable));
    assert.strictEqual(r.err, null);
    assert.deepStrictEqual(r.args, ['good']);
    assert.strictEqual(reads, 1);
});

test('promise() of another root inside a step takes the burst, as futoin-asyncsteps: the flow goes on at a later event', T,
    async () => {
        // a lookup helper failing at once: its rejection settles before the
        // await() step runs, so the handler sees the lookup's own code
        const lookup = (id) => $as().add((as) => {
            if (!id) {
                as.error('NotFound');
            }
            as.success({ id });
        }).promise();
        const r = await runFlow((as) => as.await(lookup(0)));
        assert.strictEqual(r.err, 'NotFound');
        const found = await runFlow((as) => as.await(lookup(7)));
        assert.deepStrictEqual(found.args, [{ id: 7 }]);
        const order = [];
        await new Promise((resolve) => {
            $as().add((as) => {
                $as().add((as) => {}).promise();
                Promise.resolve().then(() => order.push('microtask'));
                as.add((as) => order.push('sub-step'));
            }).add((as) => {
                order.push('next');
                resolve();
            }).execute();
            order.push('after execute');
        });
        assert.deepStrictEqual(order, ['after execute', 'microtask', 'sub-step', 'next']);
    });

test('a loop of await() on resolved promises lets the event loop turn, as futoin-asyncsteps yields every burst', T,
    async () => {
        // a cache hit in every iteration: the promise reactions alone would
        // hold the microtask queue, starving timers, I/O and other flows
        let stop = false;
        let iters = 0;
        setImmediate(() => {
            stop = true;
        });
        const root = $as();
        root.loop((as) => {
            if (stop || ++iters > 100000) {
                as.break();
            }
            as.await(Promise.resolve(iters));
        });
        await root.promise();
        assert.strictEqual(stop, true);
        assert.ok(iters < 1000, `${iters} iterations before a setImmediate() ran`);
    });

test('two flows of resolved await()s: the one that waits for a setImmediate() is not held up to the end', T,
    async () => {
        const seen = [];
        const a = $as();
        a.repeat(20000, (as) => {
            as.await(Promise.resolve());
        });
        a.add((as) => seen.push('A'));
        const b = $as();
        b.add((as) => {
            as.waitExternal();
            setImmediate(() => as.success());
        });
        b.add((as) => seen.push('B'));
        await Promise.all([a.promise(), b.promise()]);
        assert.deepStrictEqual(seen, ['B', 'A']);
    });

test('two flows whose await() reactions used up the burst go on each alone, in a setImmediate() of its own ' +
    'queued behind those queued before, as futoin-asyncsteps\' callImmediate()', T, async () => {
    const order = [];
    const flow = (name) => {
        const root = $as();
        root.repeat(80, (as, i) => {
            if (name === 'A') {
                setImmediate(() => order.push('X'));
            }
            order.push(name);
            as.await(Promise.resolve(i));
        });
        return root.promise();
    };
    await Promise.all([flow('C'), flow('A')]);
    // up to the first yield, the two flows' reactions take turns
    const firstX = order.indexOf('X');
    assert.ok(firstX > 2, order.join(''));
    assert.deepStrictEqual(order.slice(0, 4), ['C', 'A', 'C', 'A']);
    // after it, a flow's steps run in a row (an immediate of its own), not
    // taking turns with the other flow in one shared turn
    const later = order.slice(firstX).filter((v) => v !== 'X').join('');
    const turns = later.split(/(?<=A)(?=C)|(?<=C)(?=A)/).length;
    assert.ok(turns <= 6, `${turns} runs of one flow: ${later}`);
});
