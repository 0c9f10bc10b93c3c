'use strict';

// AsyncToolTest (events run only when the test asks, in virtual time),
// installAsyncToolTest() and testcase().

const test = require('node:test');
const assert = require('node:assert');
const { $as, deferred, T, IMPL, isPolyglot, onTestTool } = require('./helpers');

const AT = $as.AsyncToolTest;

/* run `body` with AsyncToolTest installed, then restore AsyncTool */
const withTestTool = (body) => () => {
    $as.installAsyncToolTest();
    try {
        assert.strictEqual($as.ActiveAsyncTool, AT);
        body();
    } finally {
        AT.resetEvents();
        $as.installAsyncToolTest(false);
    }
};

test('installAsyncToolTest() installs AsyncToolTest, (false) restores AsyncTool', () => {
    assert.strictEqual($as.ActiveAsyncTool, $as.AsyncTool);
    $as.installAsyncToolTest();
    assert.strictEqual($as.ActiveAsyncTool, $as.AsyncToolTest);
    $as.installAsyncToolTest(true);
    assert.strictEqual($as.ActiveAsyncTool, $as.AsyncToolTest);
    $as.installAsyncToolTest(false);
    assert.strictEqual($as.ActiveAsyncTool, $as.AsyncTool);
});

test('AsyncTool and AsyncToolTest have the keys of futoin-asyncsteps\' ones, no more', () => {
    assert.deepStrictEqual(Object.keys($as.AsyncTool).sort(),
        ['callImmediate', 'callLater', 'cancelCall', 'cancelImmediate']);
    assert.deepStrictEqual(Object.keys($as.AsyncToolTest).sort(),
        ['callImmediate', 'callLater', 'cancelCall', 'cancelImmediate', 'getEvents', 'hasEvents', 'nextEvent',
            'resetEvents', 'run']);
});

test('AsyncToolTest keys come in futoin-asyncsteps\' order (the immediate aliases last)', () => {
    assert.deepStrictEqual(Object.keys($as.AsyncToolTest),
        ['callLater', 'cancelCall', 'nextEvent', 'hasEvents', 'getEvents', 'resetEvents', 'run',
            'callImmediate', 'cancelImmediate']);
});

test('an AsyncToolTest event handle has futoin-asyncsteps\' keys: f and t', withTestTool(() => {
    const f = () => {};
    const h = AT.callLater(f, 5);
    assert.deepStrictEqual(Object.keys(h), ['f', 't']);
    assert.strictEqual(h.f, f);
    assert.strictEqual(typeof h.t, 'number');
    assert.strictEqual(AT.getEvents().indexOf(h), 0);
    AT.cancelCall(h);
    assert.strictEqual(AT.hasEvents(), false);
}));

test('nextEvent() with no event queued throws a TypeError, as futoin-asyncsteps', withTestTool(() => {
    assert.strictEqual(AT.hasEvents(), false);
    assert.throws(() => AT.nextEvent(), TypeError);
}));

test('AsyncTool: callLater/cancelCall and callImmediate/cancelImmediate on the real loop', T, async () => {
    const tool = $as.AsyncTool;
    const trace = [];
    await new Promise((resolve) => {
        const dropped = tool.callLater(() => trace.push('dropped timer'), 1);
        tool.cancelCall(dropped);
        tool.callLater(() => {
            trace.push('timer');
            const droppedImm = tool.callImmediate(() => trace.push('dropped immediate'));
            tool.cancelImmediate(droppedImm);
            tool.callImmediate(() => {
                trace.push('immediate');
                resolve();
            });
        }, 5);
    });
    assert.deepStrictEqual(trace, ['timer', 'immediate']);
});

test('getEvents() lists the callLater() events in deadline order, equal deadlines as scheduled', withTestTool(() => {
    const late = (as) => {};
    const early = (as) => {};
    const early2 = (as) => {};
    AT.callLater(late, 100);
    AT.callLater(early, 10);
    AT.callLater(early2, 10);
    const ev = AT.getEvents();
    assert.deepStrictEqual(ev.map((e) => e.f), [early, early2, late]);
    assert.ok(ev[0].t <= ev[1].t && ev[1].t < ev[2].t);
    AT.resetEvents();
    assert.strictEqual(AT.getEvents().length, 0);
}));

test('callLater() events run in deadline order; cancelCall() drops one', withTestTool(() => {
    assert.strictEqual(AT.hasEvents(), false);
    const trace = [];
    AT.callLater(() => trace.push('late'), 200000);
    AT.callLater(() => trace.push('early'), 100000);
    AT.callLater(() => trace.push('now'));
    const dropped = AT.callLater(() => trace.push('dropped'), 300000);
    assert.strictEqual(AT.getEvents().length, 4);
    AT.cancelCall(dropped);
    assert.strictEqual(AT.getEvents().length, 3);
    assert.strictEqual(AT.hasEvents(), true);
    assert.deepStrictEqual(trace, []);
    AT.nextEvent();
    assert.deepStrictEqual(trace, ['now']);
    AT.run();
    assert.deepStrictEqual(trace, ['now', 'early', 'late']);
    assert.strictEqual(AT.hasEvents(), false);
}));

test('callImmediate()/cancelImmediate() are events of the test tool too', withTestTool(() => {
    const trace = [];
    AT.callImmediate(() => trace.push('a'));
    const h = AT.callImmediate(() => trace.push('b'));
    AT.cancelImmediate(h);
    assert.deepStrictEqual(trace, []);
    AT.run();
    assert.deepStrictEqual(trace, ['a']);
}));

test('resetEvents() drops every pending event', withTestTool(() => {
    const trace = [];
    const root = $as();
    root.add((as) => as.setTimeout(100), (as, err) => trace.push(err));
    root.execute();
    AT.callLater(() => trace.push('x'), 5);
    assert.strictEqual(AT.hasEvents(), true);
    AT.resetEvents();
    assert.strictEqual(AT.hasEvents(), false);
    AT.run();
    assert.deepStrictEqual(trace, []);
}));

test('a step timeout is an event in virtual time', withTestTool(() => {
    const trace = [];
    const root = $as();
    root.add(
        (as) => {
            trace.push('step');
            as.setTimeout(3600 * 1000); // an hour, in virtual time
        },
        (as, err) => trace.push(`error ${err}`),
    );
    root.add((as) => trace.push('not run'));
    root.execute();
    assert.deepStrictEqual(trace, ['step']);
    assert.strictEqual(AT.hasEvents(), true);
    assert.strictEqual(AT.getEvents().length, 1);
    AT.nextEvent();
    assert.deepStrictEqual(trace, ['step', 'error Timeout']);
    assert.strictEqual(AT.hasEvents(), false);
}));

test('an external success() from a test event continues the flow on a later event', withTestTool(() => {
    const trace = [];
    const root = $as();
    root.add((as) => {
        trace.push('s1');
        as.waitExternal();
        AT.callLater(() => {
            trace.push('external');
            as.success('v');
        }, 100);
    });
    root.add((as, v) => trace.push(`s2 ${v}`));
    root.add((as) => trace.push('s3'));
    root.execute();
    assert.deepStrictEqual(trace, ['s1']);
    AT.nextEvent();
    assert.deepStrictEqual(trace, ['s1', 'external']);
    assert.strictEqual(AT.hasEvents(), true);
    AT.run();
    assert.deepStrictEqual(trace, ['s1', 'external', 's2 v', 's3']);
}));

test('a deadline before the external event wins, and the other way round', withTestTool(() => {
    const trace = [];
    const root = $as();
    root.add(
        (as) => {
            as.setTimeout(50);
            AT.callLater(() => {
                try {
                    as.success();
                } catch (e) {
                    trace.push('stale success');
                }
            }, 100);
        },
        (as, err) => trace.push(err),
    );
    root.execute();
    AT.run();
    assert.deepStrictEqual(trace, ['Timeout', 'stale success']);

    const t2 = [];
    const r2 = $as();
    r2.add(
        (as) => {
            as.setTimeout(100);
            AT.callLater(() => as.success(), 50);
        },
        (as, err) => t2.push(err),
    );
    r2.add((as) => t2.push('next'));
    r2.execute();
    AT.run();
    assert.deepStrictEqual(t2, ['next']);
}));

test('a flow of many steps yields between bursts: nextEvent() moves it on', withTestTool(() => {
    let count = 0;
    const root = $as();
    root.repeat(1000, (as) => {
        ++count;
    });
    root.execute();
    assert.ok(count > 0, 'the first steps run in execute()');
    assert.ok(count < 1000, 'not all of them');
    assert.strictEqual(AT.hasEvents(), true);
    let events = 0;
    while (AT.hasEvents()) {
        const before = count;
        AT.nextEvent();
        ++events;
        assert.ok(count > before || !AT.hasEvents(), 'each event runs some steps');
    }
    assert.strictEqual(count, 1000);
    assert.ok(events > 1);
}));

test('two flows in virtual time share the events', withTestTool(() => {
    const trace = [];
    const mk = (name, ms) => {
        const root = $as();
        root.add((as) => {
            as.waitExternal();
            AT.callLater(() => as.success(name), ms);
        });
        root.add((as, v) => trace.push(v));
        root.execute();
    };
    mk('slow', 300000);
    mk('fast', 100000);
    AT.run();
    assert.deepStrictEqual(trace, ['fast', 'slow']);
}));

test('a Mutex made before installAsyncToolTest() serves flows on the test tool', () => {
    const mtx = new $as.Mutex();
    withTestTool(() => {
        const trace = [];
        for (const n of ['a', 'b']) {
            const root = $as();
            root.sync(mtx, (as) => {
                trace.push(`${n} in`);
                as.waitExternal();
                AT.callLater(() => {
                    trace.push(`${n} out`);
                    as.success();
                }, 10);
            });
            root.add((as) => trace.push(`${n} done`));
            root.execute();
        }
        assert.deepStrictEqual(trace, ['a in']);
        AT.run();
        assert.deepStrictEqual(trace, ['a in', 'a out', 'a done', 'b in', 'b out', 'b done']);
    })();
});

test('promise() of a flow on the test tool', withTestTool(() => {
    const root = $as();
    root.add((as) => {
        as.waitExternal();
        AT.callLater(() => as.success(5));
    });
    const p = root.promise();
    AT.run();
    // the promise settles in a microtask: hand it to the runner
    return p.then((v) => assert.strictEqual(v, 5));
}));

test('after installAsyncToolTest(false) flows run on the real event loop', T, async () => {
    $as.installAsyncToolTest();
    $as.installAsyncToolTest(false);
    const root = $as();
    root.add((as) => {
        as.waitExternal();
        setTimeout(() => as.success('real'), 1);
    });
    assert.strictEqual(await root.promise(), 'real');
    assert.strictEqual(AT.hasEvents(), false);
});

/* run a testcase() test function; resolves with what it passed to done()
 * and the lines it logged meanwhile */
const runTestcase = (fn) => {
    const d = deferred();
    const log = console.log;
    const lines = [];
    console.log = (...a) => lines.push(a.join(' '));
    try {
        fn.call({ mocha: 'context' }, (err) => d.resolve({ err, lines }));
    } catch (e) {
        d.reject(e);
    }
    return d.promise.finally(() => {
        console.log = log;
    });
};

test('testcase(): a passing test calls done() with nothing', T, async () => {
    let self = null;
    const { err } = await runTestcase($as.testcase(function(as) {
        self = this;
        as.add((as) => {
            as.waitExternal();
            setTimeout(() => as.success(), 1);
        });
    }));
    assert.strictEqual(err, undefined);
    assert.deepStrictEqual(self, { mocha: 'context' });
});

test('testcase(): a failing test calls done() with last_exception', T, async () => {
    const thrown = new Error('Broken');
    const res = await runTestcase($as.testcase((as) => {
        as.add((as) => {
            throw thrown;
        });
    }));
    assert.strictEqual(res.err, thrown);
    assert.deepStrictEqual(res.lines, ['ERROR: Broken (undefined)']);
});

test('testcase(func, onerror): a negative test passes when func fails into onerror', T, async () => {
    const { err } = await runTestcase($as.testcase(
        (as) => as.error('Expected'),
        (as, err) => {
            if (err === 'Expected') {
                as.success();
            }
        },
    ));
    assert.strictEqual(err, undefined);
});

test('testcase(func, onerror): a negative test fails when func does not fail', T, async () => {
    const res = await runTestcase($as.testcase(
        (as) => {},
        (as, err) => {
            if (err === 'Expected') {
                as.success();
            }
        },
    ));
    assert.ok(res.err instanceof Error);
    assert.strictEqual(res.err.message, 'NegativeTestMustThrow');
});

test('an error() from a callLater() event runs the step\'s error handler inside that event', withTestTool(() => {
    const trace = [];
    const root = $as();
    root.add((as) => {
        AT.callLater(() => {
            try {
                as.error('MyError', 'late');
            } catch (e) {
                trace.push(`threw ${e.message}`);
            }
        });
        as.waitExternal();
    }, (as, err) => {
        trace.push(`handled ${err} ${as.state.error_info}`);
    });
    root.add((as) => trace.push('not reached'));
    root.execute();
    assert.strictEqual(AT.getEvents().length, 1);
    AT.nextEvent();
    // the handler runs before error() throws, as outside any event
    assert.deepStrictEqual(trace, ['handled MyError late', 'threw MyError']);
    assert.strictEqual(AT.getEvents().length, 0);
    assert.strictEqual(AT.hasEvents(), false);
}));

test('an error() from outside any event under AsyncToolTest runs the handler inside the call', withTestTool(() => {
    const trace = [];
    let step = null;
    const root = $as();
    root.add((as) => {
        step = as;
        as.waitExternal();
    }, (as, err) => {
        trace.push(`handled ${err}`);
        as.success();
    });
    root.add((as) => trace.push('next'));
    root.execute();
    assert.throws(() => step.error('Outside'), /Outside/);
    // (the next step may run in the same burst: the reference defers it)
    assert.strictEqual(trace[0], 'handled Outside');
    AT.run();
    assert.deepStrictEqual(trace, ['handled Outside', 'next']);
    assert.strictEqual(AT.hasEvents(), false);
}));

/* the log of a child process running `body` under AsyncToolTest (a crash
 * or a hang fails the test, not the runner) */
const logOfChild = (body) => {
    const { spawnSync } = require('child_process');
    const script = `
        const $as = require(${JSON.stringify(IMPL)});
        const AT = $as.AsyncToolTest;
        $as.installAsyncToolTest();
        const log = [];
        ${body}
        console.log(JSON.stringify(log));
    `;
    const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 20000 });
    assert.strictEqual(r.signal, null, 'it crashed or hung');
    assert.strictEqual(r.status, 0, r.stderr);
    return JSON.parse(r.stdout);
};

test('run() or nextEvent() inside an event of its own runs the events; inside a cancel handler the reference runs them, ours says it cannot (it spun for ever)', () => {
    const log = logOfChild(`
        const attempt = (where) => {
            try {
                AT.run();
                log.push(where + ' end');
            } catch (e) {
                log.push(where + ' threw ' + /inside a callback the test tool runs/.test(e.message));
            }
        };
        AT.callLater(() => { log.push('ev1'); attempt('ev1'); }, 5);
        AT.callLater(() => log.push('ev2'), 10);
        AT.run();
        AT.callLater(() => log.push('ev3'), 20);
        $as().add((as) => { as.setTimeout(5); as.setCancel(() => attempt('cancel')); }, (as, err) => log.push(err)).execute();
        AT.run();
    `);
    if (isPolyglot) {
        assert.deepStrictEqual(log, ['ev1', 'ev2', 'ev1 end', 'cancel threw true', 'Timeout', 'ev3']);
    } else {
        assert.deepStrictEqual(log, ['ev1', 'ev2', 'ev1 end', 'ev3', 'cancel end', 'Timeout']);
    }
});

test('nextEvent() inside a step whose own timeout is the next event: ours says it cannot and the step goes on (it crashed); the reference fires the timeout inside the step', () => {
    const log = logOfChild(`
        const next = (where) => {
            try {
                AT.nextEvent();
                log.push(where + ' next');
            } catch (e) {
                log.push(where + ' threw ' + /of that step's own flow/.test(e.message));
            }
        };
        $as().add((as) => {
            as.setTimeout(0);
            next('own');
            as.success(1);
        }, (as, err) => log.push('eh ' + err)).add((as, v) => log.push('s2 ' + v)).execute();
        $as().add((as) => {
            as.setTimeout(0);
            as.add((as) => { next('outer'); as.success(); });
        }, (as, err) => log.push('eh ' + err)).add((as) => log.push('after outer')).execute();
        AT.run();
    `);
    if (isPolyglot) {
        assert.deepStrictEqual(log, ['own threw true', 's2 1', 'outer threw true', 'after outer']);
    } else {
        assert.deepStrictEqual(log, ['eh Timeout', 'own next', 'eh Timeout', 'outer next']);
    }
});

test('nextEvent() inside a parallel branch runs the next event that is not of its own flow, as the reference', withTestTool(() => {
    const log = [];
    const root = $as();
    root.add((as) => {
        const p = as.parallel();
        p.add((as) => {
            AT.callLater(() => log.push('later'));
            AT.nextEvent();
            log.push('b1');
        });
        p.add((as) => log.push('b2'));
    });
    root.add((as) => log.push('after'));
    root.execute();
    AT.run();
    assert.deepStrictEqual(log, ['later', 'b1', 'b2', 'after']);
}));

test('execute() inside a callLater() event runs the first burst inside that call', withTestTool(() => {
    const log = [];
    AT.callLater(() => {
        const r = $as();
        r.add((as) => {
            log.push('s1');
            as.add((as) => log.push('s1.1'));
        });
        r.add((as) => log.push('s2'));
        r.execute();
        log.push('after execute');
    });
    AT.callLater(() => log.push('event2'));
    AT.nextEvent();
    log.push('after nextEvent');
    AT.run();
    assert.deepStrictEqual(log, ['s1', 's1.1', 's2', 'after execute', 'after nextEvent', 'event2']);
}));

test('AsyncToolTest: a parallel branch goes on with its await() in the promise\'s reaction, its error handler too', T, async () => {
    $as.installAsyncToolTest();
    try {
        const order = [];
        const R = $as();
        const p = R.parallel((as, err) => order.push(`par ${err}`));
        p.add((as) => {
            as.await(Promise.resolve('pv'));
            as.add((as, v) => order.push(`branch ${v}`));
        });
        p.add((as) => {
            as.add((as) => as.await(Promise.reject(new Error('no'))), (as, err) => {
                order.push(`branch handler ${err}`);
                as.success();
            });
        });
        R.add((as) => order.push('after parallel'));
        R.execute();
        order.push('main end');
        await Promise.resolve();
        await Promise.resolve();
        order.push('microtasks done');
        AT.run();
        assert.deepStrictEqual(order, ['main end', 'branch pv', 'branch handler PromiseReject',
            'microtasks done', 'after parallel']);
    } finally {
        AT.resetEvents();
        $as.installAsyncToolTest(false);
    }
});

test('a step timeout\'s handlers run in its event, the steps after them in the next event, as futoin-asyncsteps',
    withTestTool(() => {
        const trace = [];
        $as().add((as) => {
            as.loop((as) => {
                as.add((as) => {
                    trace.push('wait');
                    as.setTimeout(5);
                }, (as, err) => {
                    trace.push(`handled ${err}`);
                    as.break();
                });
            });
        }).add((as) => trace.push('after')).execute();
        assert.deepStrictEqual(trace, ['wait']);
        AT.nextEvent();
        assert.deepStrictEqual(trace, ['wait', 'handled Timeout']);
        assert.strictEqual(AT.hasEvents(), true);
        AT.nextEvent();
        assert.deepStrictEqual(trace, ['wait', 'handled Timeout', 'after']);
        assert.strictEqual(AT.hasEvents(), false);
    }));

test('a step timeout of the flow whose steps ran last: its handlers and the steps after them are one event, as futoin-asyncsteps',
    withTestTool(() => {
        const trace = [];
        $as().add((as) => {
            as.add((as) => {
                as.waitExternal();
                AT.callImmediate(() => as.success());
            });
            as.add((as) => {
                trace.push('wait');
                as.setTimeout(5);
            });
        }, (as, err) => {
            trace.push(`handled ${err}`);
            AT.callImmediate(() => trace.push('immediate'));
            as.success();
        }).add((as) => trace.push('after')).execute();
        AT.nextEvent(); // the success()
        AT.nextEvent(); // the flow goes on: its step ran last
        assert.deepStrictEqual(trace, ['wait']);
        AT.nextEvent();
        assert.deepStrictEqual(trace, ['wait', 'handled Timeout', 'after']);
        AT.nextEvent();
        assert.deepStrictEqual(trace, ['wait', 'handled Timeout', 'after', 'immediate']);
        assert.strictEqual(AT.hasEvents(), false);
    }));

test('error() from an event on a step of the flow whose steps ran last: the steps after its handler run inside that call, as futoin-asyncsteps',
    withTestTool(() => {
        const trace = [];
        const fail = (as, name) => {
            as.waitExternal();
            AT.callImmediate(() => {
                try {
                    as.error(name);
                } catch (e) {
                    trace.push(`threw ${e.message}`);
                }
            });
        };
        const recover = (as, err) => {
            trace.push(`handled ${err}`);
            as.success();
        };
        $as().add((as) => {
            as.add((as) => {
                as.waitExternal();
                AT.callImmediate(() => as.success());
            });
            as.add((as) => fail(as, 'Owner'));
        }, recover).add((as) => trace.push('after owner')).execute();
        AT.nextEvent(); // the success()
        AT.nextEvent(); // the flow goes on: its step ran last
        AT.nextEvent();
        assert.deepStrictEqual(trace, ['handled Owner', 'after owner', 'threw Owner']);
        // execute() gives the burst back: the next event runs the rest
        trace.length = 0;
        $as().add((as) => fail(as, 'Other'), recover).add((as) => trace.push('after other')).execute();
        AT.nextEvent();
        assert.deepStrictEqual(trace, ['handled Other', 'threw Other']);
        AT.run();
        assert.deepStrictEqual(trace, ['handled Other', 'threw Other', 'after other']);
    }));

test('a step completed by a flow executed inside its callback goes on in a later event, as futoin-asyncsteps', withTestTool(() => {
    const trace = [];
    $as().add((as) => {
        as.waitExternal();
        $as().add((as2) => as.success('v')).execute();
        trace.push('step end');
    }).add((as, v) => trace.push(`next ${v}`)).execute();
    assert.deepStrictEqual(trace, ['step end']);
    AT.nextEvent();
    assert.deepStrictEqual(trace, ['step end', 'next v']);
    assert.strictEqual(AT.hasEvents(), false);
}));

test('a step timeout in a parallel branch reaches the parallel\'s handler in its event', withTestTool(() => {
    const trace = [];
    $as().add((as) => {
        const p = as.parallel((as, err) => {
            trace.push(`parallel ${err}`);
            as.success();
        });
        p.add((as) => as.setTimeout(3));
        p.add((as) => as.waitExternal());
    }).add((as) => trace.push('after')).execute();
    assert.deepStrictEqual(trace, []);
    AT.nextEvent();
    assert.deepStrictEqual(trace, ['parallel Timeout']);
    AT.nextEvent();
    assert.deepStrictEqual(trace, ['parallel Timeout', 'after']);
    assert.strictEqual(AT.hasEvents(), false);
}));

test('two step timeouts due at once are two events, each with its handler; the steps after them come later',
    withTestTool(() => {
        const trace = [];
        for (const name of ['A', 'B']) {
            $as().add((as) => as.setTimeout(2), (as, err) => {
                trace.push(`${name} ${err}`);
                as.success();
            }).add((as) => trace.push(`${name} next`)).execute();
        }
        const events = [];
        while (AT.hasEvents()) {
            AT.nextEvent();
            events.push(trace.splice(0).join(', '));
        }
        assert.deepStrictEqual(events, ['A Timeout', 'B Timeout', 'A next', 'B next']);
    }));

test('a parallel after a step completed by an event starts its branches in the next event, as futoin-asyncsteps', withTestTool(() => {
    // found by a differential fuzzer: the branches started one event later
    for (const where of ['root', 'sub', 'sync']) {
        const out = [];
        let tick = 0;
        const chain = (n) => {
            if (n > 0) {
                AT.callImmediate(() => {
                    out.push(`tick${++tick}`);
                    chain(n - 1);
                });
            }
        };
        const body = (as) => {
            as.add((as) => {
                as.waitExternal();
                AT.callImmediate(() => {
                    out.push('ext');
                    as.success();
                });
            });
            as.parallel().add((as) => out.push('branch1')).add((as) => out.push('branch2'));
        };
        const r = $as();
        if (where === 'root') {
            body(r);
        } else if (where === 'sub') {
            r.add(body);
        } else {
            r.add((as) => as.sync(new $as.Mutex(), body));
        }
        r.add((as) => out.push('after'));
        r.execute();
        chain(4);
        AT.run();
        assert.deepStrictEqual(out.join(' '), 'ext tick1 branch1 branch2 tick2 after tick3 tick4', where);
    }
}));

test('a step timeout of 0 (or none) comes after the events queued before it, as futoin-asyncsteps', withTestTool(() => {
    // found by a differential fuzzer: a due step timeout jumped the queue
    // (a negative or fractional one does the same here; the reference adds
    // it to a clock of microseconds of real time, so its place depends on
    // how fast the calls come)
    for (const ms of [0, undefined, '0']) {
        AT.resetEvents();
        const out = [];
        AT.callImmediate(() => out.push('imm-before'));
        AT.callLater(() => out.push('later0-before'), 0);
        $as().add((as) => {
            out.push('step');
            as.setTimeout(ms);
        }, (as, err) => {
            out.push(`EH ${err}`);
        }).execute();
        AT.callImmediate(() => out.push('imm-after'));
        AT.run();
        assert.strictEqual(out.join(' '), 'step imm-before later0-before EH Timeout imm-after', String(ms));
    }
}));

test('a success() from an event on the last step of a flow ends the flow in that event: no event is left', T, () => onTestTool((AT) => {
    for (const nested of [false, true]) {
        const last = (as) => {
            AT.callLater(() => as.success());
            as.waitExternal();
        };
        const root = $as();
        root.add(nested ? (as) => as.add(last) : last);
        root.execute();
        AT.nextEvent();
        assert.strictEqual(AT.hasEvents(), false, `nested: ${nested}`);
        assert.strictEqual(AT.getEvents().length, 0, `nested: ${nested}`);
        // the root is idle again: a new run works at once
        let ran = false;
        root.add((as) => {
            ran = true;
        });
        root.execute();
        assert.strictEqual(ran, true);
    }
}));

test('a loop of await()s on settled promises waits for the next test event after a burst, as futoin-asyncsteps', T,
    () => onTestTool(async (AT) => {
        let stop = false;
        let iters = 0;
        AT.callLater(() => {
            stop = true;
        }, 0);
        const root = $as();
        root.loop((as) => {
            if (stop || ++iters > 100000) {
                as.break();
            }
            as.await(Promise.resolve(iters));
        });
        const end = root.promise();
        // the promise reactions first, then the events, one at a time
        await new Promise((resolve) => setImmediate(resolve));
        while (AT.hasEvents()) {
            AT.nextEvent();
            await new Promise((resolve) => setImmediate(resolve));
        }
        await end;
        assert.strictEqual(stop, true);
        assert.ok(iters < 1000, `${iters} iterations before the test's event ran`);
    }));
