'use strict';

// The core API: adding steps, chaining, state, results, successStep,
// copyFrom, newInstance, cancel, setTimeout/setCancel/waitExternal, promise().

const test = require('node:test');
const assert = require('node:assert');
const { $as, IMPL, isPolyglot, runFlow, deferred, onTestTool, T } = require('./helpers');

test('root methods chain: each returns the root', () => {
    const root = $as();
    const model = $as();
    assert.strictEqual(root.add((as) => {}), root);
    assert.strictEqual(root.add((as) => {}, (as, err) => {}), root);
    assert.strictEqual(root.loop((as) => as.break()), root);
    assert.strictEqual(root.repeat(1, (as, i) => {}), root);
    assert.strictEqual(root.forEach([1], (as, k, v) => {}), root);
    assert.strictEqual(root.successStep(), root);
    assert.strictEqual(root.await(Promise.resolve(1)), root);
    assert.strictEqual(root.sync(new $as.Mutex(), (as) => {}), root);
    assert.strictEqual(root.copyFrom(model), root);
    const p = root.parallel();
    assert.notStrictEqual(p, root);
    assert.strictEqual(p.add((as) => {}), p);
    assert.strictEqual(root.cancel(), root);
    assert.strictEqual(root.execute(), root);
});

test('step methods chain: each returns the step interface', T, async () => {
    const model = $as();
    const returned = [];
    const r = await runFlow((as) => {
        const chk = (name, v) => returned.push([name, v === as]);
        chk('add', as.add((as) => {}));
        chk('add+onerror', as.add((as) => {}, (as, err) => {}));
        chk('loop', as.loop((as) => as.break()));
        chk('repeat', as.repeat(1, (as, i) => {}));
        chk('forEach', as.forEach({ a: 1 }, (as, k, v) => {}));
        chk('successStep', as.successStep('x'));
        chk('await', as.await(Promise.resolve(1)));
        chk('sync', as.sync(new $as.Mutex(), (as) => {}));
        chk('copyFrom', as.copyFrom(model));
        const p = as.parallel();
        returned.push(['parallel.add', p.add((as) => {}) === p]);
    });
    assert.strictEqual(r.err, null, r.info);
    for (const [name, same] of returned) {
        assert.strictEqual(same, true, name);
    }
    const w = await runFlow((as) => {
        returned.length = 0;
        returned.push(['setCancel', as.setCancel((as) => {}) === as]);
        returned.push(['setTimeout', as.setTimeout(1000) === as]);
        returned.push(['waitExternal', as.waitExternal() === as]);
        as.success();
    });
    assert.strictEqual(w.err, null, w.info);
    for (const [name, same] of returned) {
        assert.strictEqual(same, true, name);
    }
});

test('state is a function object: as.state() === as.state, shared by every step', T, async () => {
    const root = $as();
    assert.strictEqual(typeof root.state, 'function');
    assert.strictEqual(root.state(), root.state);
    root.state.before = 1;
    const seen = [];
    const r = await runFlow((as) => {
        seen.push(as.state === root.state, as.state() === root.state, typeof as.state);
        as.state.inside = as.state.before + 1;
        as.add((as) => {
            seen.push(as.state === root.state, as.state.inside);
        });
    }, root);
    assert.strictEqual(r.err, null);
    assert.deepStrictEqual(seen, [true, true, 'function', true, 2]);
    assert.strictEqual(root.state.inside, 2);
    assert.strictEqual(r.state, root.state);
});

test('steps run in order, sub-steps before the next step of their parent', T, async () => {
    const trace = [];
    const r = await runFlow((as) => {
        trace.push('a');
        as.add((as) => {
            trace.push('a1');
            as.add((as) => {
                trace.push('a1x');
            });
        });
        as.add((as) => {
            trace.push('a2');
        });
        trace.push('a-end');
    });
    assert.strictEqual(r.err, null);
    assert.deepStrictEqual(trace, ['a', 'a-end', 'a1', 'a1x', 'a2']);
});

test('success() arguments reach the next step; an implicit success passes none', T, async () => {
    const calls = [];
    const root = $as();
    root.add((as) => as.success(1, 'two'));
    root.add(function(as, a, b) {
        calls.push(Array.from(arguments).slice(1));
    });
    root.add(function(as) {
        calls.push(Array.from(arguments).slice(1));
        as.success();
    });
    root.add(function(as) {
        calls.push(Array.from(arguments).slice(1));
    });
    await root.promise();
    assert.deepStrictEqual(calls, [[1, 'two'], [], []]);
});

test('the last success() of sub-steps is the result of their parent step', T, async () => {
    const r = await runFlow((as) => {
        as.add((as) => {
            as.add((as) => as.success('deep', 2));
        });
    });
    assert.deepStrictEqual(r.args, ['deep', 2]);
});

test('root.successStep() injects a result after the previous steps', T, async () => {
    const got = [];
    const root = $as();
    root.add((as) => as.success('dropped'));
    root.successStep(1, 2);
    root.add((as, a, b) => got.push(a, b));
    await root.promise();
    assert.deepStrictEqual(got, [1, 2]);

    // on an empty root, it is the input of the first step
    const first = deferred();
    $as().successStep('x', 'y').add((as, a, b) => first.resolve([a, b])).execute();
    assert.deepStrictEqual(await first.promise, ['x', 'y']);
});

test('as.successStep() is the result of a step, after its sub-steps', T, async () => {
    const r = await runFlow((as) => {
        as.successStep(3, 4);
    });
    assert.deepStrictEqual(r.args, [3, 4]);
    const trace = [];
    const r2 = await runFlow((as) => {
        as.add((as) => {
            trace.push('sub');
            as.success(7);
        });
        as.successStep(5, 6);
    });
    assert.deepStrictEqual(trace, ['sub']);
    assert.deepStrictEqual(r2.args, [5, 6]);
});

test('root.copyFrom() appends the model\'s steps and fills undefined state', T, async () => {
    const model = $as();
    model.state.m = 'from model';
    model.state.x = 'model x';
    model.add((as) => {
        as.success(as.state.x);
    });
    const root = $as();
    root.state.x = 'own x';
    const got = [];
    root.add((as) => as.success('before'));
    root.copyFrom(model);
    root.add((as, v) => got.push(v, as.state.m, as.state.x));
    await root.promise();
    assert.deepStrictEqual(got, ['own x', 'from model', 'own x']);

    // the model is unchanged and still usable
    const again = [];
    model.add((as, v) => again.push(v));
    await model.promise();
    assert.deepStrictEqual(again, ['model x']);
});

test('as.copyFrom() adds the model\'s steps as sub-steps of the current step', T, async () => {
    const model = $as();
    model.state.m = 1;
    model.add((as) => {
        as.add((as) => as.success('model result', as.state.m));
    });
    const trace = [];
    const r = await runFlow((as) => {
        as.copyFrom(model);
        as.add((as, v, m) => {
            trace.push(v, m);
            as.success('last');
        });
    });
    assert.strictEqual(r.err, null);
    assert.deepStrictEqual(trace, ['model result', 1]);
    assert.deepStrictEqual(r.args, ['last']);
    assert.strictEqual(r.state.m, 1);
});

/* a model of every kind of root-level call, each step logging its name */
const everyKindModel = (log, mutex) => {
    const model = $as();
    model.parallel().add((as) => log.push('branch'));
    model.repeat(2, (as, i) => log.push(`repeat ${i}`));
    model.forEach(['x'], (as, k, v) => log.push(`forEach ${k} ${v}`));
    model.loop((as) => {
        log.push('loop');
        as.break();
    });
    model.sync(mutex, (as) => log.push('in mutex'));
    model.add((as) => log.push('add'));
    return model;
};
const EVERY_KIND = ['branch', 'repeat 0', 'repeat 1', 'forEach 0 x', 'loop', 'in mutex', 'add'];

test('copyFrom() of a model with loops and sync steps keeps the model\'s order, on a root and in a step', T,
    async () => {
        const mutex = new $as.Mutex();
        const direct = [];
        await everyKindModel(direct, mutex).promise();
        assert.deepStrictEqual(direct, EVERY_KIND);

        const onRoot = [];
        const root = $as();
        root.add((as) => onRoot.push('before'));
        root.copyFrom(everyKindModel(onRoot, mutex));
        root.add((as) => onRoot.push('after'));
        await root.promise();
        assert.deepStrictEqual(onRoot, ['before', ...EVERY_KIND, 'after']);

        const inStep = [];
        const model = everyKindModel(inStep, mutex);
        const r = await runFlow((as) => {
            as.copyFrom(model);
            as.add((as) => inStep.push('after'));
        });
        assert.strictEqual(r.err, null);
        assert.deepStrictEqual(inStep, [...EVERY_KIND, 'after']);
    });

// futoin-asyncsteps fails the second copy: its repeat() counts on in the
// model, so the copy runs 'repeat 2' and 'forEach 1 undefined'
test('a model copied twice runs its loops afresh each time, and runs itself after', T, async () => {
    const twice = [];
    const model = everyKindModel(twice, new $as.Mutex());
    const r = await runFlow((as) => {
        as.copyFrom(model);
        as.copyFrom(model);
    });
    assert.strictEqual(r.err, null);
    assert.deepStrictEqual(twice, [...EVERY_KIND, ...EVERY_KIND]);
    twice.length = 0;
    await model.promise();
    assert.deepStrictEqual(twice, EVERY_KIND);
});

test('newInstance() gives an independent root with its own state', T, async () => {
    const root = $as();
    root.state.mine = true;
    const other = root.newInstance();
    assert.notStrictEqual(other, root);
    assert.strictEqual(other.isAsyncSteps(), true);
    assert.notStrictEqual(other.state, root.state);
    assert.strictEqual(other.state.mine, undefined);
    assert.strictEqual(other.state(), other.state);
    const res = await other.add((as) => as.success('other')).promise();
    assert.strictEqual(res, 'other');

    let fromStep = null;
    await runFlow((as) => {
        fromStep = as.newInstance();
    });
    assert.strictEqual(fromStep.isAsyncSteps(), true);
    assert.strictEqual(await fromStep.add((as) => as.success(5)).promise(), 5);
});

test('a root can be executed again after its flow ended', T, async () => {
    const root = $as();
    const trace = [];
    root.add((as) => trace.push(1));
    await root.promise();
    root.add((as) => trace.push(2));
    await root.promise();
    assert.deepStrictEqual(trace, [1, 2]);
});

test('execute() of an empty root does nothing', () => {
    const root = $as();
    assert.strictEqual(root.execute(), root);
});

test('setTimeout() fails a waiting step with Timeout', T, async () => {
    const r = await runFlow((as) => {
        as.state.error_info = 'stale';
        as.setTimeout(5);
    });
    assert.strictEqual(r.err, 'Timeout');
    assert.strictEqual(r.info, undefined);
    assert.ok(r.state.last_exception instanceof Error);
    assert.strictEqual(r.state.last_exception.message, 'Timeout');
});

test('setTimeout() is cancelled by success() before it', T, async () => {
    const trace = [];
    await onTestTool((AT) => {
        const root = $as();
        root.add(
            (as) => {
                as.setTimeout(50);
                AT.callLater(() => as.success('in time'), 10);
            },
            (as, err) => trace.push(`error ${err}`),
        );
        root.add((as, v) => {
            trace.push(v);
            // still waiting when the first deadline passes
            as.waitExternal();
            AT.callLater(() => as.success(), 100);
        });
        root.add((as) => trace.push('end'));
        root.execute();
        AT.run();
    });
    assert.deepStrictEqual(trace, ['in time', 'end']);
});

test('a second setTimeout() replaces the first', T, async () => {
    const trace = [];
    await onTestTool((AT) => {
        const root = $as();
        root.add(
            (as) => {
                as.setTimeout(10);
                as.setTimeout(150);
                AT.callLater(() => as.success('second deadline'), 60);
            },
            (as, err) => trace.push(`error ${err}`),
        );
        root.add((as, v) => trace.push(v));
        root.execute();
        AT.run();
    });
    assert.deepStrictEqual(trace, ['second deadline']);
});

test('waitExternal() waits for an external success()', T, async () => {
    const trace = [];
    const r = await runFlow((as) => {
        as.add((as) => {
            as.waitExternal();
            setTimeout(() => {
                trace.push('event');
                as.success('external', 42);
            }, 1);
        });
        as.add((as, a, b) => {
            trace.push(a, b);
        });
    });
    assert.strictEqual(r.err, null);
    assert.deepStrictEqual(trace, ['event', 'external', 42]);
});

test('setCancel() keeps a step waiting for an external success()', T, async () => {
    let cancelled = false;
    const r = await runFlow((as) => {
        as.setCancel((as) => {
            cancelled = true;
        });
        setTimeout(() => as.success('done'), 1);
    });
    assert.strictEqual(r.err, null);
    assert.deepStrictEqual(r.args, ['done']);
    assert.strictEqual(cancelled, false);
});

test('cancel() after an outside success() does not run the cancel handler of that step', T, async () => {
    const seen = [];
    const cancelled = deferred();
    const r = $as();
    r.add((as) => {
        as.setCancel(() => seen.push('cancel handler'));
        setImmediate(() => {
            as.success();
            seen.push('success called');
            r.cancel();
            seen.push('cancelled');
            setImmediate(cancelled.resolve); // the turn the flow would have gone on in
        });
    });
    r.add((as) => seen.push('next step'));
    r.execute();
    await cancelled.promise;
    assert.deepStrictEqual(seen, ['success called', 'cancelled']);
});

test('cancel() after an outside success() runs no cancel handler of the steps it ended, as futoin-asyncsteps', T, async () => {
    // the success() of a sub-step ends the enclosing steps it leaves with
    // nothing to run; an enclosing step with sub-steps left is cancelled
    const seen = [];
    const cancelled = deferred();
    const r = $as();
    r.add((as) => {
        as.setCancel(() => seen.push('cancel outer'));
        as.add((as) => {
            as.setCancel(() => seen.push('cancel middle'));
            as.add((as) => {
                as.setCancel(() => seen.push('cancel inner'));
                setImmediate(() => {
                    as.success();
                    r.cancel();
                    seen.push('cancelled');
                    setImmediate(cancelled.resolve);
                });
            });
        });
        as.add((as) => seen.push('outer has more'));
    });
    r.add((as) => seen.push('next step'));
    r.execute();
    await cancelled.promise;
    assert.deepStrictEqual(seen, ['cancel outer', 'cancelled']);
});

test('cancel() calls the cancel handlers, innermost first, and ends the flow', T, async () => {
    const trace = [];
    let inner = null;
    await onTestTool((AT) => {
        const root = $as();
        root.add(
            (as) => {
                as.setCancel((as) => trace.push('outer cancel'));
                as.add((as) => {
                    as.setCancel((as) => trace.push('inner cancel'));
                    as.setTimeout(30);
                    inner = as;
                });
            },
            (as, err) => {
                trace.push(`onerror ${err}`);
            },
        );
        root.add((as) => trace.push('next step'));
        root.execute();
        assert.ok(inner);
        root.cancel();
        assert.deepStrictEqual(trace, ['inner cancel', 'outer cancel']);
        // no timeout, no error handler, no next step
        AT.run();
    });
    assert.deepStrictEqual(trace, ['inner cancel', 'outer cancel']);
    // the step interface is out of service
    assert.throws(() => inner.success(), /out of service/);
});

test('cancel() of a waiting root step, then the root is usable again', T, async () => {
    const trace = [];
    const root = $as();
    root.add((as) => {
        as.setCancel((as) => trace.push('cancel'));
    });
    root.add((as) => trace.push('not run'));
    root.execute();
    root.cancel();
    assert.deepStrictEqual(trace, ['cancel']);
    root.add((as) => trace.push('second run'));
    await root.promise();
    assert.deepStrictEqual(trace, ['cancel', 'second run']);
});

test('root.error() after its flow ended throws an Error of that name', T, async () => {
    const done = $as();
    done.add((as) => {});
    done.execute(); // ended in its first burst
    assert.throws(() => done.error('E1', 'i1'), (e) => e.message === 'E1');
    const failed = $as();
    failed.add((as) => as.error('X'));
    failed.execute();
    assert.throws(() => failed.error('E2'), (e) => e.message === 'E2');
    const cancelled = $as();
    cancelled.add((as) => as.waitExternal());
    cancelled.execute();
    cancelled.cancel();
    assert.throws(() => cancelled.error('E3'), (e) => e.message === 'E3');
});

test('a root whose last step completed by a success() from outside is usable again at once', T, async () => {
    const trace = [];
    const root = $as();
    let step = null;
    root.add((as) => {
        as.add((as) => {
            step = as;
            as.waitExternal();
        });
    });
    root.execute();
    await new Promise((resolve) => setImmediate(resolve));
    step.success('v');
    // its flow has nothing left to run: it ended, as in futoin-asyncsteps
    root.add((as) => trace.push('second run'));
    root.execute();
    assert.deepStrictEqual(trace, ['second run']);
});

test('a cancel handler of a root step runs the root again (it threw "Top level add in execution")', T, async () => {
    const trace = [];
    const root = $as();
    const done = deferred();
    root.add((as) => {
        trace.push('step');
        as.setCancel((as) => {
            trace.push('cancel');
            root.add((as) => {
                trace.push('again');
                done.resolve();
            });
            root.execute();
        });
    });
    root.add((as) => trace.push('not run'));
    root.execute();
    root.cancel();
    await done.promise;
    // the reference also runs the step left from the cancelled run ('not run')
    assert.deepStrictEqual(trace.filter((t) => t !== 'not run'), ['step', 'cancel', 'again']);
    assert.strictEqual(trace[trace.length - 1], 'again');
});

test('promise() resolves with the first result of the last step', T, async () => {
    const res = await $as()
        .add((as) => as.success(1))
        .add((as, v) => as.success(v + 1, 'ignored'))
        .promise();
    assert.strictEqual(res, 2);
    assert.strictEqual(await $as().add((as) => {}).promise(), undefined);
});

test('promise() rejects with an Error of the error code', T, async () => {
    await assert.rejects(
        $as().add((as) => as.error('MyError', 'my info')).promise(),
        (e) => {
            assert.ok(e instanceof Error);
            assert.strictEqual(e.message, 'MyError');
            return true;
        },
    );
    await assert.rejects(
        $as().add((as) => {
            throw new RangeError('thrown');
        }).promise(),
        { message: 'thrown' },
    );
});

test('promise() runs the first step synchronously', () => {
    let ran = false;
    const p = $as().add((as) => {
        ran = true;
    }).promise();
    assert.strictEqual(ran, true);
    return p;
});

test('root.error() outside execution throws, sets the state and drops the queued steps', T, async () => {
    const root = $as();
    let ran = false;
    root.add((as) => {
        ran = true;
    });
    assert.throws(() => root.error('RootError', 'root info'), (e) => {
        assert.ok(e instanceof Error);
        assert.strictEqual(e.message, 'RootError');
        assert.strictEqual(root.state.last_exception, e);
        return true;
    });
    assert.strictEqual(root.state.error_info, 'root info');
    await onTestTool((AT) => {
        root.execute();
        AT.run();
    });
    assert.strictEqual(ran, false);
});

// Internals that futoin-asyncsteps' own test suite reads: present with the
// same shape, so tests written against it keep passing.

test('a root lists its queued steps in _queue as [func, onerror] pairs before execute()', () => {
    const root = $as();
    const f = (as) => {};
    const eh = (as, err) => {};
    root.add(f, eh).parallel().add(f);
    root.add(f);
    const q = root._queue;
    assert.strictEqual(q.length, 3);
    assert.strictEqual(q[0][0], f);
    assert.strictEqual(q[0][1], eh);
    assert.ok(q[1][0] instanceof Function);
    assert.strictEqual(q[1][1], undefined);
    assert.strictEqual(q[2][0], f);
    assert.strictEqual(q[2][1], undefined);
});

test('_handle_success() of a root with no step running is an InternalError', () => {
    const root = $as();
    assert.throws(() => root._handle_success(), (e) => {
        assert.strictEqual(e.message, 'InternalError');
        return true;
    });
    assert.strictEqual(root.state.error_info, 'Invalid success completion');
});

test('_exec_stack of the root ends with the step function that runs', T, async () => {
    if (process.env.NODE_ENV === 'production') {
        return;
    }
    const seen = [];
    const step = (as) => {
        const es = as._root._exec_stack;
        seen.push(es[es.length - 1] === step);
    };
    await runFlow((as) => {
        as.add(step);
    });
    assert.deepStrictEqual(seen, [true]);
});

test('_burst_success() of the root completes its waiting step and runs the flow now', T, async () => {
    // futoin-executor completes a request's waiting step so from an event:
    // it was no function here (TypeError, the flow hung)
    const log = [];
    await new Promise((resolve) => {
        $as()
            .add((as) => {
                as.waitExternal();
                setImmediate(() => {
                    as._root._burst_success(['v']);
                    log.push('returned');
                });
            })
            .add((as, v) => {
                log.push(`next ${v}`);
            })
            .add((as) => resolve())
            .execute();
    });
    assert.deepStrictEqual(log, ['next v', 'returned']);
});

test('_handle_success() and _handle_error() of the root complete its waiting step', T, async () => {
    const seen = [];
    await new Promise((resolve) => {
        $as()
            .add((as) => {
                as.waitExternal();
                setImmediate(() => as._root._handle_success([1, 2]));
            })
            .add((as, a, b) => {
                seen.push(a + b);
                as.waitExternal();
                setImmediate(() => as._root._handle_error('Fail'));
            }, (as, err) => {
                seen.push(err);
                resolve();
            })
            .execute();
    });
    assert.deepStrictEqual(seen, [3, 'Fail']);
});

test('the root methods with no step waiting: _burst_success() returns, the flow ends', T, async () => {
    // it threw to the event's callback (the process died), and a step
    // completed already was completed again with a report on stderr; the
    // reference drops the rest of the flow
    const log = [];
    await onTestTool((AT) => {
        const root = $as();
        root.add((as) => {
            as.waitExternal();
            AT.callLater(() => {
                as.success('once');
                root._burst_success(['late']);
                log.push('returned');
            }, 1);
        }, (as, err) => {
            log.push(`eh ${err}`);
        });
        root.add((as, v) => {
            log.push(v);
        });
        root.execute();
        AT.run();
        assert.throws(() => $as()._handle_success(), /InternalError/);
    });
    assert.deepStrictEqual(log, ['returned']);
});

test('break() from an event runs the error handlers on the way inside the call, as error() does', T, async () => {
    const out = [];
    await new Promise((resolve) => {
        $as()
            .loop((as) => {
                as.add((as) => {
                    as.waitExternal();
                    setImmediate(() => {
                        try {
                            as.break();
                        } catch (e) {
                            out.push(`threw ${e.message}`);
                        }
                    });
                }, (as, err) => {
                    out.push(`eh ${err}`);
                });
            })
            .add((as) => resolve())
            .execute();
    });
    assert.deepStrictEqual(out, ['eh LoopBreak', 'threw LoopBreak']);
});

test('_exec_stack of a root before execute() is an empty array', T, () => {
    if (process.env.NODE_ENV === 'production') {
        return;
    }
    // as in futoin-asyncsteps (it was undefined)
    assert.deepStrictEqual($as().add((as) => {})._exec_stack, []);
});

test('successStep() before add() in a step: the first sub-step gets its values', T, async () => {
    const seen = [];
    await runFlow((as) => {
        as.successStep('abc', 2);
        as.add(function(as, ...args) {
            seen.push(['first', ...args]);
        });
        as.add(function(as, ...args) {
            seen.push(['second', ...args]);
        });
    });
    assert.deepStrictEqual(seen, [['first', 'abc', 2], ['second']]);
});

test('copyFrom() of a model whose parallel() gets its branches later runs them too, as futoin-asyncsteps', T, async () => {
    // the copy refers to the model's parallel step, as there: branches
    // added to it after copyFrom() run in the copy's flow
    const seen = [];
    const model = $as();
    const p = model.parallel((as, err) => seen.push(`eh ${err}`));
    const r = $as();
    r.copyFrom(model);
    p.add((as) => seen.push('B1')).add((as) => seen.push('B2'));
    await r.add((as) => seen.push('END')).promise();
    assert.deepStrictEqual(seen, ['B1', 'B2', 'END']);
    // and into a step of a running flow: its branches as they are by then
    const inner = [];
    const m2 = $as();
    const p2 = m2.parallel();
    p2.add((as) => inner.push('b1'));
    await $as().add((as) => {
        as.copyFrom(m2);
        as.add((as) => inner.push('after'));
    }).promise();
    assert.deepStrictEqual(inner, ['b1', 'after']);
});

test('copyFrom() of a root itself doubles its steps', T, async () => {
    // it walked the model while appending to it, until out of memory
    const seen = [];
    const r = $as();
    r.add((as) => seen.push('step'));
    r.copyFrom(r);
    await new Promise((resolve) => {
        r.add((as) => resolve());
        r.execute();
    });
    assert.deepStrictEqual(seen, ['step', 'step']);
});

test('copyFrom() of a running root or of a step interface, as the README says', T, async () => {
    const seen = [];
    const r = $as();
    r.state.a = 1;
    await new Promise((resolve) => {
        r.add((as) => {
            const m = $as();
            m.copyFrom(r); // its steps after this one are in the engine here
            m.add((as) => seen.push(`copy a=${as.state.a}`));
            m.execute();
            if (isPolyglot) {
                assert.throws(() => $as().copyFrom(as), (e) => e instanceof TypeError &&
                    /copyFrom\(\) expects an AsyncSteps model/.test(e.message));
            }
        }).add((as) => {
            seen.push('b');
            resolve();
        });
        r.execute();
    });
    // the reference's copy also ran 'b', a step of the running root
    assert.deepStrictEqual(seen, isPolyglot ? ['copy a=1', 'b'] : ['b', 'copy a=1', 'b']);
});

test('the package loaded again (require.cache cleared) leaves the first instance working', T, () => {
    // the second load took the thread's addon state over: the first
    // instance's flows never ran
    const script = `
        const load = () => {
            for (const k of Object.keys(require.cache)) {
                if (k.startsWith(${JSON.stringify(IMPL)})) delete require.cache[k];
            }
            return require(${JSON.stringify(IMPL)});
        };
        const a = load();
        const b = load();
        const out = [];
        let S;
        a().add((as) => { S = as; as.waitExternal(); }).add((as, v) => out.push('a ' + v)).execute();
        b().add((as) => { as.waitExternal(); setTimeout(() => as.success(2), 1); })
            .add((as, v) => { out.push('b ' + v); S.success(1); }).execute();
        const m = new a.Mutex();
        a().sync(m, (as) => out.push('a mutex')).execute();
        process.on('exit', () => console.log(out.join())); // every flow done
    `;
    const res = require('child_process').spawnSync(process.execPath, ['-e', script], {
        encoding: 'utf8', timeout: 120000,
    });
    assert.strictEqual(res.status, 0, res.stderr);
    assert.strictEqual(res.stdout.trim(), 'a mutex,b 2,a 1');
});

test('root steps with and without onerror, parallels and loops run in the order added, also copied by copyFrom()', async () => {
    const log = [];
    const step = (n) => (as) => {
        log.push(n);
    };
    const model = $as();
    model.add(step(1)).add(step(2)).add((as) => {
        log.push(3);
        as.error('E');
    }, (as, err) => {
        log.push(`eh:${err}`);
        as.success();
    }).add(step(4), null);
    model.parallel().add(step(5));
    model.add(step(6)).repeat(2, (as, i) => {
        log.push(`r${i}`);
    }).add(step(7)).add(step(8));
    const root = $as().add(step(0)).copyFrom(model).add(step(9));
    await new Promise((resolve) => root.add((as) => resolve()).execute());
    assert.deepStrictEqual(log, [0, 1, 2, 3, 'eh:E', 4, 5, 6, 'r0', 'r1', 7, 8, 9]);
});
