'use strict';

// When steps run, as futoin-asyncsteps schedules them: execute() starts the
// flow synchronously, an external success() continues on a later event, and
// a long flow runs in bursts that let other events in.

const test = require('node:test');
const assert = require('node:assert');
const { $as, runFlow, deferred, IMPL, T, onTestTool, otherFlow } = require('./helpers');

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

test('execute() inside a step of another flow runs the new flow\'s first burst before it returns', T, async () => {
    const trace = [];
    const done = deferred();
    const outer = $as();
    outer.add((as) => {
        trace.push('A1 begin');
        const inner = $as();
        inner.add((as) => {
            trace.push('B1');
            as.add((as) => trace.push('B1.1'));
        });
        inner.add((as) => {
            trace.push('B2');
            as.error('Boom');
        }, (as, err) => {
            trace.push(`B2 handled ${err}`);
            as.success();
        });
        inner.add((as) => {
            trace.push('B3 waits');
            as.waitExternal();
            setTimeout(() => as.success(), 1);
        });
        inner.add((as) => {
            trace.push('B4');
            done.resolve();
        });
        assert.strictEqual(inner.execute(), inner);
        trace.push('A1 end');
    });
    outer.add((as) => trace.push('A2'));
    outer.execute();
    trace.push('returned');
    assert.deepStrictEqual(trace,
        ['A1 begin', 'B1', 'B1.1', 'B2', 'B2 handled Boom', 'B3 waits', 'A1 end', 'A2', 'returned']);
    await done.promise;
    assert.strictEqual(trace[trace.length - 1], 'B4');
});

test('a flow executed inside a step runs alone: other flows ready in that turn wait', T, async () => {
    const trace = [];
    const waiting = [];
    const done = deferred();
    const make = (name, second) => {
        const root = $as();
        root.add((as) => {
            as.waitExternal();
            waiting.push(as);
        });
        root.add(second);
        root.add((as) => trace.push(`${name}3`));
        root.execute();
        return root;
    };
    make('A', (as) => {
        trace.push('A2 begin');
        $as().add((as) => trace.push('B1')).add((as) => trace.push('B2')).execute();
        trace.push('A2 end');
    });
    make('X', (as) => trace.push('X2'));
    make('Y', (as) => {
        trace.push('Y2');
        done.resolve();
    });
    setTimeout(() => {
        for (const as of waiting) {
            as.success();
        }
    }, 1);
    await done.promise;
    await new Promise((resolve) => setTimeout(resolve, 5));
    // B runs inside A2; X and Y go on after A2 (their order relative to A3
    // is the scheduler's: only B's place is checked)
    const a2 = trace.indexOf('A2 begin');
    assert.deepStrictEqual(trace.slice(a2, a2 + 4), ['A2 begin', 'B1', 'B2', 'A2 end']);
    assert.deepStrictEqual(trace.filter((t) => /^[XY]/.test(t)), ['X2', 'X3', 'Y2', 'Y3']);
    assert.ok(trace.indexOf('X2') > trace.indexOf('A2 end'));
});

test('execute() runs its own flow only: a flow an external success() resumed waits for its own event', T, async () => {
    const trace = [];
    const done = deferred();
    const x = $as();
    x.add((as) => {
        as.waitExternal();
        setTimeout(() => {
            as.success();
            trace.push('X resumed');
            $as().add((as) => trace.push('B1')).add((as) => trace.push('B2')).execute();
            trace.push('B executed');
        }, 1);
    });
    x.add((as) => {
        trace.push('X2');
        done.resolve();
    });
    x.execute();
    await done.promise;
    assert.deepStrictEqual(trace, ['X resumed', 'B1', 'B2', 'B executed', 'X2']);
});

test('a cancelled flow does not keep the process alive for its step timeout', T, () => {
    // the host timer stayed armed for the cancelled deadline: the process
    // waited it out (here ten minutes: the spawn's guard would end it)
    const script = `
        const $as = require(${JSON.stringify(IMPL)});
        const r = $as();
        r.add((as) => as.setTimeout(600000)).execute();
        r.cancel();
        const l = $as();
        l.loop((as) => as.setTimeout(600000)).execute();
        l.cancel();
        process.on('exit', () => console.log('exited'));
    `;
    const res = require('child_process').spawnSync(process.execPath, ['-e', script], {
        encoding: 'utf8', timeout: 120000,
    });
    assert.strictEqual(res.signal, null, res.stderr);
    assert.strictEqual(res.stdout.trim(), 'exited');
});

test('a step timeout past a 32-bit signed int is 1 ms, as on Node\'s timers', T, async () => {
    // it was clamped to 2^31-1 ms: the flow waited about 25 days
    const warned = [];
    const onWarning = (w) => warned.push(w.name);
    process.on('warning', onWarning);
    try {
        const r = await runFlow((as) => as.add((as) => as.setTimeout(Infinity)));
        assert.strictEqual(r.err, 'Timeout');
        await new Promise((resolve) => setImmediate(resolve));
        assert.ok(warned.includes('TimeoutOverflowWarning'), warned.join());
    } finally {
        process.off('warning', onWarning);
    }
});

test('a step timeout fires in a timers phase, not within the turn that set it', T, async () => {
    // as Node's timers: a turn that outlasts the timeout (another flow's busy
    // step here) still lets the step's nextTick completion in first. The
    // engine's clock ran on during the turn and the Timeout came first, so
    // futoin-invoker aborted 1 ms calls before their request left
    const log = [];
    const busy = (ms) => {
        const t0 = process.hrtime.bigint();
        while (Number(process.hrtime.bigint() - t0) < ms * 1e6) {
            // a step that takes its time, in the same turn
        }
    };
    const done = deferred();
    let aw;
    let bw;
    $as()
        .add((as) => {
            as.waitExternal();
            aw = as;
        })
        .add((as) => {
            as.setTimeout(1);
            process.nextTick(() => as.success('A ok'));
        }, (as, err) => {
            log.push(`A ${err}`);
        })
        .add((as, v) => {
            log.push(v);
            done.resolve();
        })
        .execute();
    $as()
        .add((as) => {
            as.waitExternal();
            bw = as;
        })
        .add((as) => {
            busy(5);
            log.push('B busy');
        })
        .execute();
    setImmediate(() => {
        aw.success();
        bw.success();
    });
    await done.promise;
    assert.deepStrictEqual(log, ['B busy', 'A ok']);
});

test('a step timeout set after a long step in the same turn still waits its time', T, async () => {
    // a clock frozen at the start of the turn made it fire at once
    const busy = (ms) => {
        const end = Date.now() + ms;
        while (Date.now() < end) {
            // a step that takes its time
        }
    };
    const done = deferred();
    let set = 0;
    $as()
        .add((as) => {
            as.waitExternal();
            setImmediate(() => as.success());
        })
        .add((as) => {
            busy(30);
            set = Date.now();
            as.setTimeout(20);
        }, (as, err) => {
            done.resolve([err, Date.now() - set]);
        })
        .execute();
    const [err, waited] = await done.promise;
    assert.strictEqual(err, 'Timeout');
    assert.ok(waited >= 19, `fired after ${waited} ms of 20`); // Date.now() is whole ms
});

test('a step timeout counts from its setTimeout() call, not from the return of the callback', T, async () => {
    // it was applied when the callback returned: a step busy after the call
    // pushed its deadline past a completion due later than it
    const busy = (ms) => {
        const end = Date.now() + ms;
        while (Date.now() < end) {
            // the rest of the step's work
        }
    };
    const got = await new Promise((resolve) => {
        $as()
            .add((as) => {
                as.setTimeout(50);
                setTimeout(() => {
                    try {
                        as.success();
                    } catch (e) {
                        // timed out first
                    }
                }, 70);
                busy(40);
            }, (as, err) => resolve(err))
            .add((as) => resolve('success'))
            .execute();
    });
    assert.strictEqual(got, 'Timeout'); // due at 50 ms, before the completion at 70
});

/* a flow waiting for an event: its next step pushes `label` to `order`;
 * returns the completion of the waiting step and the flow's end */
const waitingFlow = (order, label) => {
    const done = deferred();
    let resume = null;
    $as().add((as) => {
        as.waitExternal();
        resume = () => as.success();
    }).add((as) => {
        order.push(label);
        done.resolve();
    }).execute();
    return { resume: () => resume(), done: done.promise };
};

test('a flow resumed from outside goes on after the setImmediate() callbacks queued before', T, async () => {
    // as futoin-asyncsteps: the flow goes on through callImmediate()
    // (setImmediate), behind what an event emitter queued before success()
    const order = [];
    const { resume, done } = waitingFlow(order, 'next step');
    setImmediate(() => order.push('immediate before'));
    $as.ActiveAsyncTool.callImmediate(() => order.push('callImmediate before'));
    resume();
    order.push('after success()');
    process.nextTick(() => order.push('nextTick'));
    await done;
    assert.deepStrictEqual(order,
        ['after success()', 'nextTick', 'immediate before', 'callImmediate before', 'next step']);
});

test('a flow resumed from outside goes on after earlier setImmediate() callbacks, also when another flow\'s step timeout is due', T, async () => {
    // B's step timeout of 0 ms is due when execute() returns: that is no
    // work for a turn of ours (it fires in a timers phase), so A's flow,
    // resumed later, goes on through a setImmediate() of its own. It went
    // on in one queued by B's execute(), ahead of E (seen as a flaky test)
    const order = [];
    const done = deferred();
    let holder;
    $as()
        .add((as) => {
            holder = as;
            as.waitExternal();
        })
        .add((as) => {
            order.push('A next');
            done.resolve();
        })
        .execute();
    $as().add((as) => as.setTimeout(0), (as, err) => {
        order.push(`B ${err}`);
        as.success();
    }).execute();
    process.nextTick(() => {
        setImmediate(() => order.push('E'));
        holder.success();
    });
    await done.promise;
    assert.deepStrictEqual(order.filter((x) => x !== 'B Timeout'), ['E', 'A next']);
});

test('flows resumed from outside in one event each go on in a setImmediate() of its own, microtasks between, as futoin-asyncsteps', T, async () => {
    // futoin-asyncsteps queues a callImmediate() per completion: B, resumed
    // after the event queued a setImmediate(), goes on after it; A's promise
    // settles before B goes on. B rode A's turn, ahead of both
    const order = [];
    let a = null;
    let b = null;
    const pa = $as().add((as) => {
        a = as;
        as.waitExternal();
    }).add((as) => order.push('A goes on')).promise();
    pa.then(() => order.push('A resolved'));
    const pb = $as().add((as) => {
        b = as;
        as.waitExternal();
    }).add((as) => order.push('B goes on')).promise();
    await new Promise((resolve) => setImmediate(() => {
        a.success();
        setImmediate(() => order.push('immediate'));
        b.success();
        resolve();
    }));
    await pb;
    assert.deepStrictEqual(order, ['A goes on', 'A resolved', 'immediate', 'B goes on']);
});

test('the step after a parallel whose last branch completed from outside goes on in a setImmediate() of its own, as futoin-asyncsteps', T, async () => {
    // the reference's parallel ends in the branch's callImmediate() and
    // queues another for the step after it: behind a setImmediate() queued
    // in the event that completed the branches
    const order = [];
    let b1 = null;
    let b2 = null;
    const done = $as().add((as) => {
        as.parallel()
            .add((as) => {
                b1 = as;
                as.waitExternal();
            })
            .add((as) => {
                b2 = as;
                as.waitExternal();
            });
    }).add((as) => order.push('next')).promise();
    setImmediate(() => {
        b1.success();
        b2.success();
        setImmediate(() => order.push('immediate'));
    });
    await done;
    assert.deepStrictEqual(order, ['immediate', 'next']);
});

test('a flow resumed by a step of another flow goes on after earlier setImmediate() callbacks', T, async () => {
    const order = [];
    const { resume, done } = waitingFlow(order, 'resumed');
    $as().add((as) => {
        setImmediate(() => order.push('immediate'));
        resume();
        order.push('resumer');
    }).execute();
    await done;
    assert.deepStrictEqual(order, ['resumer', 'immediate', 'resumed']);
});

test('a flow resumed in a timer callback goes on after the setImmediate() callbacks queued before', T, async () => {
    const order = [];
    const done = deferred();
    $as().add((as) => {
        as.waitExternal();
        setTimeout(() => {
            setImmediate(() => order.push('immediate'));
            as.success();
            order.push('timer');
        }, 1);
    }).add((as) => {
        order.push('resumed');
        done.resolve();
    }).execute();
    await done.promise;
    assert.deepStrictEqual(order, ['timer', 'immediate', 'resumed']);
});

test('flows go on after a setImmediate() of the flow turn was swallowed (fake timers dropped)', T, async () => {
    // a test's fake timers took the setImmediate() queued for the flow
    // completed meanwhile and were uninstalled without running it: later
    // flows on real timers go on (they all waited for that turn for good)
    const real = global.setImmediate;
    let aStep = null;
    $as().add((as) => {
        aStep = as;
        as.waitExternal();
    }).execute();
    await new Promise((resolve) => real(resolve));
    global.setImmediate = () => ({}); // swallows it
    try {
        aStep.success();
    } finally {
        global.setImmediate = real;
    }
    const trace = [];
    await $as().add((as) => {
        as.add((as) => {
            trace.push('step 1');
            as.waitExternal();
            setTimeout(() => as.success(), 1);
        });
        as.add((as) => trace.push('step 2'));
    }).promise();
    assert.deepStrictEqual(trace, ['step 1', 'step 2']);
});

test('a flow completed from outside waits for its turn when an await() in the same event goes on', T, async () => {
    const order = [];
    const { resume, done } = waitingFlow(order, 'A2');
    let resolve = null;
    const p = new Promise((r) => {
        resolve = r;
    });
    const c = $as().add((as) => as.await(p)).add((as) => order.push('C2')).promise();
    await new Promise((r) => setTimeout(r, 1));
    setImmediate(() => order.push('imm'));
    resume();
    resolve();
    order.push('event');
    await Promise.all([done, c]);
    assert.deepStrictEqual(order, ['event', 'C2', 'imm', 'A2']);
});

test('a step timeout already due waits for the timers phase: an await() going on in a microtask does not fire it', T, async () => {
    // the script runs past B's 1 ms deadline; E's await() goes on in a
    // microtask queued before the one completing B: B's success() still wins
    const order = [];
    const done = deferred();
    $as()
        .await(Promise.resolve(1))
        .add((as, v) => order.push(`E ${v}`))
        .execute();
    $as()
        .add((as) => {
            as.setTimeout(1);
            Promise.resolve().then(() => as.success('in time'));
        }, (as, err) => {
            order.push(`B ${err}`);
            done.resolve();
        })
        .add((as, v) => {
            order.push(`B ${v}`);
            done.resolve();
        })
        .execute();
    const end = Date.now() + 5;
    while (Date.now() < end) {
        // the rest of the script takes its time
    }
    await done.promise;
    assert.deepStrictEqual(order, ['E 1', 'B in time']);
});

test('each flow keeps the AsyncLocalStorage context it was executed in, across waits', T, async () => {
    // request-scoped context (logging, tracing): steps resumed by a timer,
    // an external success() or an await() see their own flow's store, also
    // when other flows resume in the same turn
    const { AsyncLocalStorage } = require('async_hooks');
    const als = new AsyncLocalStorage();
    const out = [];
    const ends = [];
    const flow = (n) => {
        const done = deferred();
        ends.push(done.promise);
        $as()
            .add((as) => {
                out.push(`${n}:1:${als.getStore()}`);
                setTimeout(() => as.success(), 1);
                as.setTimeout(10000);
            })
            .add((as) => {
                out.push(`${n}:2:${als.getStore()}`);
                as.add((as) => {
                    setImmediate(() => as.success());
                    as.setCancel(() => {});
                });
            })
            .add((as) => {
                out.push(`${n}:3:${als.getStore()}`);
                as.await(Promise.resolve(1));
            })
            .add((as) => {
                out.push(`${n}:4:${als.getStore()}`);
                as.error('Fail');
            }, (as, err) => {
                out.push(`${n}:${err}:${als.getStore()}`);
                done.resolve();
            })
            .execute();
    };
    als.run('A', () => flow('A'));
    als.run('B', () => flow('B'));
    await Promise.all(ends);
    for (const n of ['A', 'B']) {
        assert.deepStrictEqual(out.filter((x) => x[0] === n),
            [`${n}:1:${n}`, `${n}:2:${n}`, `${n}:3:${n}`, `${n}:4:${n}`, `${n}:Fail:${n}`]);
    }
});

test('after a step timeout\'s handler, the next step runs after the setImmediate() callbacks queued before', T,
    async () => {
        // as futoin-asyncsteps: the handler runs in the timer's callback, the
        // steps after it through callImmediate()
        const order = [];
        const done = deferred();
        $as().add((as) => {
            as.add((as) => as.setTimeout(1), (as, err) => {
                order.push(`handled ${err}`);
                setImmediate(() => order.push('immediate'));
                as.success();
            });
            as.add((as) => order.push('next'));
        }).add((as) => done.resolve()).execute();
        await done.promise;
        await new Promise((resolve) => setImmediate(resolve));
        assert.deepStrictEqual(order, ['handled Timeout', 'immediate', 'next']);
    });

test('after a step timeout\'s handler, the next step runs ahead of the setImmediate() callbacks and flows queued after the handler', T,
    async () => {
        // as futoin-asyncsteps' callImmediate() at the handler; ours went on
        // in a turn shared by every flow, behind the last of them
        const order = [];
        const completeOther = otherFlow(order);
        const done = deferred();
        $as().add((as) => {
            as.add((as) => as.setTimeout(1), (as, err) => {
                order.push(`handled ${err}`);
                as.add((as) => order.push('handler step'));
                queueMicrotask(() => {
                    setImmediate(() => order.push('immediate'));
                    completeOther();
                });
            });
            as.add((as) => order.push('next'));
        }).add((as) => setImmediate(() => setImmediate(done.resolve))).execute();
        await done.promise;
        assert.deepStrictEqual(order, ['handled Timeout', 'handler step', 'next', 'immediate', 'other flow']);
    });

test('after a step timeout\'s handler, the steps of the flow that went on last from its own event go on inside the timer\'s callback, as futoin-asyncsteps', T,
    async () => {
        // its step ran from its own turn (an external success()): it owns the
        // burst, as the reference's g_burst_owner, until another flow takes it
        const run = (meanwhile) => new Promise((resolve) => {
            const order = [];
            $as().add((as) => {
                as.add((as) => {
                    as.waitExternal();
                    setImmediate(() => {
                        as.success();
                        setImmediate(() => meanwhile(order));
                    });
                });
                as.add((as) => as.setTimeout(1));
            }, (as, err) => {
                order.push(`handled ${err}`);
                setImmediate(() => order.push('immediate'));
                as.success();
            }).add((as) => {
                order.push('next');
                setImmediate(() => setImmediate(() => resolve(order)));
            }).execute();
        });
        assert.deepStrictEqual(await run(() => {}), ['handled Timeout', 'next', 'immediate']);
        // another flow's promise() took the burst: a setImmediate() then
        assert.deepStrictEqual(await run((order) => $as().add((as) => order.push('other')).promise()),
            ['other', 'handled Timeout', 'immediate', 'next']);
    });

test('a step completed by a flow executed inside its callback goes on in a setImmediate() queued then, as futoin-asyncsteps', T,
    async () => {
        // the nested flow owns the burst there: the reference's success()
        // goes through callImmediate(), whatever the values
        const trace = [];
        const done = deferred();
        $as().add((as) => {
            as.waitExternal();
            $as().add((as2) => {
                trace.push('nested');
                as.success('v');
            }).execute();
            trace.push('step end');
        }).add((as, v) => trace.push(`next ${v}`)).execute();
        trace.push('executed');
        setImmediate(() => trace.push('immediate'));
        $as().add((as) => {
            as.waitExternal();
            $as().add((as2) => as.success({ a: 1 }, [2])).execute();
        }).add((as, o, a) => {
            trace.push(`other next ${o.a} ${a[0]}`);
            done.resolve();
        }).execute();
        trace.push('other executed');
        await done.promise;
        assert.deepStrictEqual(trace,
            ['nested', 'step end', 'executed', 'other executed', 'next v', 'immediate', 'other next 1 2']);
    });

test('the setImmediate() of a branch completed from outside does nothing once its parallel failed: the steps its handler added wait for their own, as futoin-asyncsteps', T,
    async () => {
        const trace = [];
        const done = deferred();
        const hop = (as) => {
            as.waitExternal();
            setImmediate(() => as.success());
        };
        const root = $as();
        root.add((as) => {
            as.parallel().add((as) => {
                as.add(hop);
                as.add((as) => {
                    trace.push('branch throws');
                    throw new Error('Fail');
                });
            }).add((as) => {
                as.add(hop);
                as.add((as) => trace.push('other branch'));
            });
        }, (as, err) => {
            trace.push(`handled ${err}`);
            as.add((as) => trace.push('added'));
        }).execute();
        // both branches complete from outside in the first turn; this
        // setImmediate() is queued between the failure and the added step's
        $as().add((as) => {
            as.waitExternal();
            setImmediate(() => setImmediate(() => {
                trace.push('cancel');
                root.cancel();
                setImmediate(() => setImmediate(done.resolve));
            }));
            as.success();
        }).execute();
        await done.promise;
        assert.deepStrictEqual(trace, ['branch throws', 'handled Fail', 'cancel']);
    });

test('after an error from outside in a branch, the branch goes on in a setImmediate() of its own and the step after its parallel in another, as futoin-asyncsteps', T,
    async () => {
        const trace = [];
        const done = deferred();
        $as().add((as) => {
            as.parallel().add((as) => {
                as.add((as) => {
                    as.waitExternal();
                    setImmediate(() => {
                        try {
                            as.error('Fail');
                        } catch (e) {
                            trace.push(`threw ${e.message}`);
                            setImmediate(() => trace.push('immediate'));
                        }
                    });
                }, (as, err) => {
                    trace.push(`handled ${err}`);
                    as.success();
                });
                as.add((as) => trace.push('branch goes on'));
            });
        }).add((as) => {
            trace.push('after parallel');
            done.resolve();
        }).execute();
        await done.promise;
        assert.deepStrictEqual(trace, ['handled Fail', 'threw Fail', 'branch goes on', 'immediate', 'after parallel']);
    });

/* a flow whose parallel branch runs an inner parallel(), whose branch fails
 * from outside after waiting: error() in an event of its own ('immediate'
 * queued after it), or a step timeout ('timeout', 'immediate' queued by the
 * handler); hop: that branch went on from an event of its own
 * first (it owns the burst then, else the outer branch does, which has a
 * step after the inner parallel); resolves with the trace once it ended */
const innerParallelFails = (hop, fail) => {
    const trace = [];
    const done = deferred();
    $as().add((as) => {
        as.parallel().add((as) => {
            as.add((as) => {
                as.waitExternal();
                setImmediate(() => as.success()); // the outer branch goes on from an event of its own
            });
            as.add((as) => {
                as.parallel((as, err) => {
                    trace.push(`handled ${err}`);
                    if (fail === 'timeout') {
                        setImmediate(() => trace.push('immediate'));
                    }
                    as.success();
                }).add((as) => {
                    if (hop) {
                        as.add((as) => {
                            as.waitExternal();
                            setImmediate(() => as.success());
                        });
                    }
                    as.add((as) => {
                        if (fail === 'timeout') {
                            as.setTimeout(5);
                            return;
                        }
                        as.waitExternal();
                        setImmediate(() => {
                            try {
                                as.error('Fail');
                            } catch (e) {
                                trace.push(`threw ${e.message}`);
                                setImmediate(() => trace.push('immediate'));
                            }
                        });
                    });
                });
            });
            if (!hop) {
                as.add((as) => trace.push('branch goes on'));
            }
        });
    }).add((as) => {
        trace.push('after parallel');
        setImmediate(() => done.resolve(trace));
    }).execute();
    return done.promise;
};

test('a branch that a handled error from outside in its inner parallel ends goes on in a setImmediate() of its own, the step after its parallel in another, as futoin-asyncsteps', T,
    async () => {
        assert.deepStrictEqual(await innerParallelFails(true, 'error'),
            ['handled Fail', 'threw Fail', 'immediate', 'after parallel']);
    });

test('a branch that owns the burst goes on inside the error() from outside that its inner parallel\'s handler took, as futoin-asyncsteps', T,
    async () => {
        assert.deepStrictEqual(await innerParallelFails(false, 'error'),
            ['handled Fail', 'branch goes on', 'threw Fail', 'after parallel', 'immediate']);
    });

test('a branch that owns the burst goes on in the timer callback of a step timeout that failed its inner parallel, as futoin-asyncsteps', T,
    async () => {
        assert.deepStrictEqual(await innerParallelFails(false, 'timeout'),
            ['handled Timeout', 'branch goes on', 'immediate', 'after parallel']);
    });

test('a branch\'s step timeout fails its parallel in the timer callback, and the flow that owns the burst goes on there after the parallel\'s handler, as futoin-asyncsteps', T,
    async () => {
        const trace = [];
        const done = deferred();
        $as().add((as) => {
            as.waitExternal();
            setImmediate(() => as.success()); // the flow goes on from an event of its own
        }).add((as) => {
            as.parallel((as, err) => {
                trace.push(`handled ${err}`);
                setImmediate(() => trace.push('immediate'));
                as.success();
            }).add((as) => {
                as.setTimeout(5);
            }).add((as) => {
                as.waitExternal();
            });
        }).add((as) => {
            trace.push('after parallel');
            setImmediate(() => done.resolve());
        }).execute();
        await done.promise;
        assert.deepStrictEqual(trace, ['handled Timeout', 'after parallel', 'immediate']);
    });

test('a parallel branch that went on from its own setImmediate() owns the burst: an error from outside or a step timeout on it goes on inside that call, as futoin-asyncsteps', T,
    async () => {
        const hop = (as) => {
            as.waitExternal();
            setImmediate(() => as.success());
        };
        const run = (fails) => new Promise((resolve) => {
            const trace = [];
            $as().add((as) => {
                as.parallel().add((as) => {
                    as.add(hop); // the branch goes on from a turn of its own
                    as.add(fails, (as, err) => {
                        trace.push(`handled ${err}`);
                        setImmediate(() => trace.push('immediate'));
                        as.success();
                    });
                    as.add((as) => trace.push('after'));
                });
            }).add((as) => {
                trace.push('end');
                resolve(trace);
            }).execute();
        });
        assert.deepStrictEqual(await run((as) => {
            as.waitExternal();
            setImmediate(() => {
                try {
                    as.error('Fail');
                } catch (e) {
                    // nothing
                }
            });
        }), ['handled Fail', 'after', 'immediate', 'end']);
        assert.deepStrictEqual(await run((as) => as.setTimeout(1)), ['handled Timeout', 'after', 'immediate', 'end']);
        // the error leaves the branch: the parallel's handler runs inside the
        // call, the step after it in a setImmediate() (the flow owns nothing)
        const trace = [];
        await new Promise((resolve) => {
            $as().add((as) => {
                as.parallel((as, err) => {
                    trace.push(`parallel ${err}`);
                    as.success();
                }).add((as) => {
                    as.add(hop);
                    as.add((as) => {
                        as.waitExternal();
                        setImmediate(() => {
                            try {
                                as.error('Fail');
                            } catch (e) {
                                trace.push(`threw ${e.message}`);
                            }
                        });
                    });
                });
            }).add((as) => {
                trace.push('after parallel');
                resolve();
            }).execute();
        });
        assert.deepStrictEqual(trace, ['parallel Fail', 'threw Fail', 'after parallel']);
    });

test('a step timeout that falls due in the turn that set it fires in a later timers phase, after the setImmediate() callbacks queued before, as a setTimeout() of Node\'s', T,
    async () => {
        const trace = [];
        const done = deferred();
        $as().add((as) => {
            as.add((as) => {
                as.waitExternal();
                setImmediate(() => {
                    as.success(); // the step below runs in a setImmediate() queued now
                    setImmediate(() => trace.push('immediate'));
                });
            });
            as.add((as) => {
                as.setTimeout(1);
                const end = Date.now() + 3;
                while (Date.now() <= end) {
                    // its deadline passes before the turn ends
                }
            });
        }, (as, err) => {
            trace.push(`handled ${err}`);
            done.resolve();
        }).execute();
        await done.promise;
        assert.deepStrictEqual(trace, ['immediate', 'handled Timeout']);
    });

test('a loop turn that comes late fires a step timeout before a JS timer due after it', T, () => {
    // a fresh process: Node's own timers as right after require(); the
    // busy wait makes both deadlines pass before the loop's first turn
    const { spawnSync } = require('child_process');
    const { IMPL } = require('./helpers');
    const script = `
        const $as = require(${JSON.stringify(IMPL)});
        const log = [];
        $as().add((as) => {
            as.add((as) => {
                as.setTimeout(5);
                setTimeout(() => {
                    log.push('late ' + (as.state ? 'live' : 'gone'));
                    if (as.state) as.success('late');
                }, 30);
            }, (as, err) => {
                log.push('handled ' + err);
                as.success('recovered');
            });
        }).add((as, v) => {
            log.push('end ' + v);
            console.log(log.join(', '));
        }).execute();
        const until = Date.now() + 60;
        while (Date.now() < until) {}
    `;
    const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 60000 });
    assert.strictEqual(r.status, 0, r.stderr);
    assert.strictEqual(r.stdout.trim(), 'handled Timeout, late gone, end recovered');
});

test('the step after a parallel goes on after the setImmediate() callbacks its branches queued', T, async () => {
    // as futoin-asyncsteps: the branches end inside execute(), the step
    // after the parallel comes through callImmediate()
    const order = [];
    const root = $as();
    root.parallel().add((as) => {
        order.push('branch');
        setImmediate(() => order.push('immediate'));
    });
    root.add((as) => order.push('after'));
    const done = root.promise();
    order.push('execute() returned');
    await done;
    assert.deepStrictEqual(order, ['branch', 'execute() returned', 'immediate', 'after']);
});

test('the step after a parallel whose branches ended inside execute() comes before setImmediate() callbacks queued after it', T,
    async () => {
        // as futoin-asyncsteps: its callImmediate() is queued when the
        // parallel ends, inside execute()
        const order = [];
        const root = $as();
        root.parallel().add((as) => {
            order.push('branch');
        });
        root.add((as) => order.push('after'));
        const done = root.promise();
        setImmediate(() => order.push('immediate'));
        process.nextTick(() => setImmediate(() => order.push('from nextTick')));
        await done;
        await new Promise((resolve) => setImmediate(resolve));
        assert.deepStrictEqual(order, ['branch', 'after', 'immediate', 'from nextTick']);
    });

test('... and before another flow completed from outside after it', T, async () => {
    // ours went on in a turn shared by every flow, behind the last of them
    const order = [];
    const completeOther = otherFlow(order);
    const root = $as();
    root.parallel().add((as) => order.push('b1')).add((as) => order.push('b2'));
    root.add((as) => order.push('after'));
    const done = root.promise();
    setImmediate(() => order.push('immediate'));
    completeOther();
    await done;
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepStrictEqual(order, ['b1', 'b2', 'after', 'immediate', 'other flow']);
});

test('a flow that never waits (an endless loop) does not starve step timeouts and Throttle periods', T, async () => {
    // as futoin-asyncsteps, whose bursts yield through setImmediate(): Node
    // runs its timers phase on every loop iteration
    const log = [];
    const done = deferred();
    const busy = $as();
    busy.loop((as) => {});
    busy.execute();
    const th = new $as.Throttle(1, 10);
    let entries = 0;
    const enter = (i) => $as().sync(th, (as) => {
        log.push(`entry ${i}`);
        if (++entries === 2) {
            $as().add((as) => as.setTimeout(5), (as, err) => {
                log.push(`step ${err}`);
                setTimeout(() => {
                    log.push('timer after it');
                    done.resolve();
                }, 20);
            }).execute();
        }
    }).execute();
    enter(0);
    enter(1);
    const starved = setTimeout(() => {
        log.push('starved');
        done.resolve();
    }, 1000);
    try {
        await done.promise;
    } finally {
        busy.cancel();
        clearTimeout(starved);
    }
    assert.deepStrictEqual(log, ['entry 0', 'entry 1', 'step Timeout', 'timer after it']);
});

test('a step timeout below 1 ms waits 1 ms, as Node\'s setTimeout(): a setImmediate() of its timer\'s turn completes the step first', T,
    async () => {
        // futoin-asyncsteps hands it to setTimeout(), which makes 0, negative
        // and non-numeric delays 1 ms: within a timer callback a 0 ms timer
        // would still fire in that loop turn's timer phase, before the check
        // phase runs the immediate (a deadline already past: deadline - now)
        const got = [];
        for (const ms of [0, -5, 0.5, NaN, null, 'soon']) {
            const done = deferred();
            setTimeout(() => {
                $as().add((as) => {
                    as.setTimeout(ms);
                    setImmediate(() => as.success('ok'));
                }, (as, err) => {
                    got.push(`${ms}:${err}`);
                    done.resolve();
                }).add((as, v) => {
                    got.push(`${ms}:${v}`);
                    done.resolve();
                }).execute();
            }, 1);
            await done.promise;
        }
        assert.deepStrictEqual(got, ['0:ok', '-5:ok', '0.5:ok', 'NaN:ok', 'null:ok', 'soon:ok']);
    });

test('AsyncToolTest: a huge step timeout or callLater() delay comes after the events before it', T, () => onTestTool(async (AT) => {
    // its virtual clock takes any delay, as futoin-asyncsteps' test tool
    // (Node's rule that such a delay is 1 ms is for real timers)
    const warnings = [];
    const warn = (w) => warnings.push(w.name);
    process.on('warning', warn);
    try {
        for (const ms of [2 ** 31, 2 ** 40, Infinity]) {
            const out = [];
            $as().add((as) => {
                as.setTimeout(ms);
            }, (as, err) => out.push(err)).execute();
            AT.callLater(() => out.push('event'), 100);
            AT.run();
            assert.deepStrictEqual(out, ['event', 'Timeout'], String(ms));
        }
        const out = [];
        AT.callLater(() => out.push('Infinity'), Infinity);
        AT.callLater(() => out.push('0ms'), 0);
        AT.callLater(() => out.push('2^31'), 2 ** 31);
        AT.callLater(() => out.push('5ms'), 5);
        AT.run();
        assert.deepStrictEqual(out, ['0ms', '5ms', '2^31', 'Infinity']);
        await new Promise((resolve) => setImmediate(resolve)); // process.emitWarning() emits on a tick
    } finally {
        process.off('warning', warn);
    }
    assert.deepStrictEqual(warnings, []);
}));
