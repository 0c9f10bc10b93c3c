'use strict';

// Errors: codes, error_info, last_exception, async_stack and what error
// handlers can do (recover, continue with steps, replace the code).

const test = require('node:test');
const assert = require('node:assert');
const { $as, isPolyglot, runFlow, onTestTool, deferred, T } = require('./helpers');

test('as.error(code, info): the handler gets the code, error_info and last_exception', T, async () => {
    const seen = [];
    const r = await runFlow((as) => {
        as.add(
            (as) => {
                as.error('MyError', 'my info');
                seen.push('not reached');
            },
            (as, err) => {
                seen.push(err, as.state.error_info);
                const e = as.state.last_exception;
                seen.push(e instanceof Error, e.message);
            },
        );
    });
    assert.deepStrictEqual(seen, ['MyError', 'my info', true, 'MyError']);
    // the handler did nothing: the error goes on to the outer handler
    assert.strictEqual(r.err, 'MyError');
    assert.strictEqual(r.info, 'my info');
});

test('as.error() throws an Error of the code', T, async () => {
    let thrown = null;
    const r = await runFlow((as) => {
        try {
            as.error('Thrown', 'x');
        } catch (e) {
            thrown = e;
            throw e;
        }
    });
    assert.ok(thrown instanceof Error);
    assert.strictEqual(thrown.message, 'Thrown');
    assert.strictEqual(r.err, 'Thrown');
});

test('the Error of as.error() has a stack from its caller on, without the engine\'s frames', T, async () => {
    const stacks = [];
    function userCheck(as) {
        as.error('Checked');
    }
    const r = await runFlow((as) => {
        as.add(function userStep(as) {
            userCheck(as);
        }, (as, err) => {
            stacks.push(as.state.last_exception.stack);
            as.success();
        });
        as.add((as) => {
            as.waitExternal();
            setImmediate(function userEvent() {
                try {
                    as.error('Outside');
                } catch (e) {
                    stacks.push(e.stack);
                }
            });
        });
    });
    assert.strictEqual(r.err, 'Outside');
    assert.strictEqual(stacks.length, 2);
    const [inStep, outside] = stacks.map((s) => s.split('\n'));
    assert.strictEqual(inStep[0], 'Error: Checked');
    assert.match(inStep[1], /userCheck/);
    assert.match(inStep[2], /userStep/);
    assert.strictEqual(outside[0], 'Error: Outside');
    assert.match(outside[1], /userEvent/);
    for (const s of [inStep[1], inStep[2], outside[1]]) {
        assert.doesNotMatch(s, /[\\/]lib[\\/]AsyncSteps\.js/);
    }
});

test('the Error of as.error() follows Error.stackTraceLimit, and leaves it as it was', T, async () => {
    const saved = Error.stackTraceLimit;
    let stack = null;
    let limit = null;
    try {
        Error.stackTraceLimit = 0;
        await runFlow((as) => {
            as.add((as) => as.error('NoFrames'), (as, err) => {
                stack = as.state.last_exception.stack;
                limit = Error.stackTraceLimit;
            });
        });
    } finally {
        Error.stackTraceLimit = saved;
    }
    assert.strictEqual(stack, 'Error: NoFrames');
    assert.strictEqual(limit, 0);
});

test('NODE_ENV=production: the Error of as.error() carries no frames, Error.stackTraceLimit stays as it was', () => {
    // capturing a stack through optimized frames costs V8 several times the
    // rest of the error path; production mode drops it, as it drops async_stack
    const script = `
        const $as = require(${JSON.stringify(require('./helpers').IMPL)});
        const out = [Error.stackTraceLimit];
        $as().add((as) => as.error('Boom'), (as, err) => {
            out.push(as.state.last_exception.stack, Error.stackTraceLimit);
        }).execute();
        process.once('beforeExit', () => console.log(JSON.stringify(out)));
    `;
    const res = require('child_process').spawnSync(process.execPath, ['-e', script], {
        env: { ...process.env, NODE_ENV: 'production' },
        encoding: 'utf8',
    });
    assert.strictEqual(res.status, 0, res.stderr);
    const [before, stack, after] = JSON.parse(res.stdout);
    assert.ok(before > 0);
    assert.strictEqual(stack, 'Error: Boom');
    assert.strictEqual(after, before);
});

test('as.error() with a read-only Error.stackTraceLimit (frozen intrinsics) still raises its code', () => {
    // the Error's frames are captured with the limit changed meanwhile: a
    // limit that cannot change must not turn the error into a TypeError
    const script = `
        'use strict';
        Object.defineProperty(Error, 'stackTraceLimit', { value: 10, writable: false });
        const $as = require(${JSON.stringify(require('./helpers').IMPL)});
        const out = [];
        $as().add((as) => as.error('Boom', 'info'), (as, err) => {
            const e = as.state.last_exception;
            out.push(err, as.state.error_info, e instanceof Error && e.message, e.stack.split('\\n')[0]);
        }).execute();
        process.once('beforeExit', () => console.log(JSON.stringify(out)));
    `;
    for (const NODE_ENV of ['development', 'production']) {
        const res = require('child_process').spawnSync(process.execPath, ['-e', script], {
            env: { ...process.env, NODE_ENV },
            encoding: 'utf8',
        });
        assert.strictEqual(res.status, 0, res.stderr);
        assert.deepStrictEqual(JSON.parse(res.stdout), ['Boom', 'info', 'Boom', 'Error: Boom'], NODE_ENV);
    }
});

test('error_info is undefined when as.error() has none; any value is kept as is', T, async () => {
    const root = $as();
    root.state.error_info = 'stale';
    const r = await runFlow((as) => as.error('NoInfo'), root);
    assert.strictEqual(r.err, 'NoInfo');
    assert.strictEqual(r.info, undefined);
    assert.ok('error_info' in r.state);

    const info = { detail: [1, 2] };
    const r2 = await runFlow((as) => as.error('ObjInfo', info));
    assert.strictEqual(r2.info, info);
});

test('a handler that calls success() recovers; its results reach the next step', T, async () => {
    const trace = [];
    const r = await runFlow((as) => {
        as.add(
            (as) => {
                as.add((as) => as.error('Inner'));
                as.add((as) => trace.push('skipped sibling'));
            },
            (as, err) => {
                trace.push(`handled ${err}`);
                as.success('recovered', err);
            },
        );
        as.add((as, a, b) => {
            trace.push(a, b);
            as.success('end');
        });
    });
    assert.strictEqual(r.err, null);
    assert.deepStrictEqual(trace, ['handled Inner', 'recovered', 'Inner']);
    assert.deepStrictEqual(r.args, ['end']);
});

test('a handler that adds steps continues the flow after them', T, async () => {
    const trace = [];
    const r = await runFlow((as) => {
        as.add(
            (as) => as.error('First'),
            (as, err) => {
                as.add((as) => {
                    trace.push('handler step');
                    as.success('from handler step');
                });
            },
        );
        as.add((as, v) => {
            trace.push(v);
        });
    });
    assert.strictEqual(r.err, null);
    assert.deepStrictEqual(trace, ['handler step', 'from handler step']);
});

test('a failing step added by a handler goes to the outer handler', T, async () => {
    const r = await runFlow((as) => {
        as.add(
            (as) => as.error('First'),
            (as, err) => {
                as.add((as) => as.error('FromHandlerStep', 'second'));
            },
        );
    });
    assert.strictEqual(r.err, 'FromHandlerStep');
    assert.strictEqual(r.info, 'second');
});

test('as.error() in a handler replaces the code for the outer handlers', T, async () => {
    const r = await runFlow((as) => {
        as.add(
            (as) => as.error('First', 'first info'),
            (as, err) => {
                assert.strictEqual(err, 'First');
                as.error('Second', 'second info');
            },
        );
    });
    assert.strictEqual(r.err, 'Second');
    assert.strictEqual(r.info, 'second info');
    assert.strictEqual(r.state.last_exception.message, 'Second');
});

test('an exception thrown in a handler replaces the code with its message', T, async () => {
    const thrown = new TypeError('HandlerThrow');
    const r = await runFlow((as) => {
        as.add(
            (as) => as.error('First', 'first info'),
            (as, err) => {
                throw thrown;
            },
        );
    });
    assert.strictEqual(r.err, 'HandlerThrow');
    assert.strictEqual(r.state.last_exception, thrown);
});

test('as.error() of a code that is no string: the handler gets the Error\'s message', T, async () => {
    for (const [code, want] of [[123, '123'], [undefined, ''], [{ x: 1 }, '[object Object]']]) {
        const r = await runFlow((as) => {
            as.error(code);
        });
        assert.strictEqual(r.err, want);
        assert.strictEqual(r.state.last_exception.message, want);
    }
});

test('as.error() of a code that is no string from an event: the handler gets the code itself', T,
    async () => {
        const code = { status: 404 };
        const r = await runFlow((as) => {
            as.waitExternal();
            setTimeout(() => {
                try {
                    as.error(code);
                } catch (e) {
                    // error() throws, the caller catches
                }
            }, 1);
        });
        assert.strictEqual(r.err, code);
        assert.strictEqual(r.state.last_exception.message, '[object Object]');
    });

test('a thrown non-FutoIn exception: its message is the code, the object is last_exception', T, async () => {
    class Custom extends Error {}
    for (const thrown of [new TypeError('boom'), new Custom('custom'), { message: 'plain object' }]) {
        const root = $as();
        root.state.error_info = 'stale';
        const r = await runFlow((as) => {
            throw thrown;
        }, root);
        assert.strictEqual(r.err, thrown.message);
        assert.strictEqual(r.state.last_exception, thrown);
        assert.strictEqual(r.info, 'stale'); // error_info is set by as.error() only
    }
});

test('a thrown value that is no Error: String(value) is the code, even when that throws', T, async () => {
    const hostile = {
        toString() {
            throw new Error('no string for you');
        },
    };
    for (const [thrown, want] of [[42, '42'], ['text', 'text'], [null, 'null'], [hostile, 'InternalError']]) {
        const r = await runFlow((as) => {
            throw thrown;
        });
        assert.strictEqual(r.err, want);
        assert.strictEqual(r.state.last_exception, thrown);
    }
});

test('a runtime error in a step becomes the error of the step', T, async () => {
    const r = await runFlow((as) => {
        null.property; // eslint-disable-line no-unused-expressions
    });
    assert.ok(r.state.last_exception instanceof TypeError);
    assert.strictEqual(r.err, r.state.last_exception.message);
});

test('handlers run innermost first; unhandled levels are unwound', T, async () => {
    const trace = [];
    const r = await runFlow((as) => {
        as.add(
            (as) => {
                as.add(
                    (as) => {
                        as.add((as) => as.error('Deep'));
                        as.add((as) => trace.push('not run'));
                    },
                    (as, err) => trace.push(`level2 ${err}`),
                );
                as.add((as) => trace.push('not run either'));
            },
            (as, err) => trace.push(`level1 ${err}`),
        );
    });
    assert.deepStrictEqual(trace, ['level2 Deep', 'level1 Deep']);
    assert.strictEqual(r.err, 'Deep');
});

test('an unhandled error ends the flow without throwing out of execute()', T, async () => {
    const trace = [];
    const root = await onTestTool((AT) => {
        const root = $as();
        root.add((as) => as.error('Unhandled', 'unhandled info'));
        root.add((as) => trace.push('not run'));
        root.execute();
        AT.run();
        return root;
    });
    assert.deepStrictEqual(trace, []);
    assert.strictEqual(root.state.error_info, 'unhandled info');
    assert.strictEqual(root.state.last_exception.message, 'Unhandled');
});

test('an error caught inside the step itself does not fail the step', T, async () => {
    const trace = [];
    const r = await runFlow((as) => {
        as.add(
            (as) => {
                try {
                    as.error('Caught', 'caught info');
                } catch (e) {
                    trace.push(`caught ${e.message}`);
                }
                as.success('continued');
            },
            (as, err) => {
                trace.push(`handler ${err}`);
            },
        );
    });
    assert.deepStrictEqual(trace, ['caught Caught']);
    assert.strictEqual(r.err, null, r.info);
    assert.deepStrictEqual(r.args, ['continued']);
});

test('an error caught inside its step leaves last_exception alone (error_info is set at once)', T, async () => {
    const seen = [];
    const r = await runFlow((as) => {
        as.add((as) => {
            as.state.last_exception = 'before';
            try {
                as.error('Caught', 'caught info');
            } catch (e) {
                seen.push(as.state.last_exception, as.state.error_info);
            }
            const other = as;
            as.add((as) => {
                try {
                    other.add(() => {}); // the parent's interface: a sanity check error
                } catch (e) {
                    seen.push(e.message, as.state.last_exception, as.state.error_info);
                }
            });
        });
    });
    assert.strictEqual(r.err, null, r.info);
    assert.deepStrictEqual(seen, ['before', 'caught info', 'InternalError', 'before', 'Invalid call (sanity check)']);
});

test('async_stack holds the executed step handlers, up to the failing one', T, async () => {
    let stack = null;
    function outerStep(as) {
        as.add(middleStep, handler);
    }
    function middleStep(as) {
        as.add(failingStep);
    }
    function failingStep(as) {
        as.error('Fail');
    }
    function handler(as, err) {
        stack = as.state.async_stack.slice();
    }
    const r = await runFlow((as) => {
        as.add(outerStep);
    });
    assert.strictEqual(r.err, 'Fail');
    assert.ok(Array.isArray(stack));
    const at = (f) => stack.indexOf(f);
    assert.ok(at(failingStep) >= 0, 'the failing step is in async_stack');
    assert.ok(at(outerStep) >= 0 && at(outerStep) < at(middleStep), 'outer before middle');
    assert.ok(at(middleStep) < at(failingStep), 'middle before the failing step');
    assert.strictEqual(stack[stack.length - 1], handler);
});

test('a root executed again adds to its async_stack, as futoin-asyncsteps\' exec stack', () => {
    const root = $as();
    function run1(as) {}
    function run2(as) {
        as.error('E');
    }
    let stack = null;
    function handler(as, err) {
        stack = as.state.async_stack.slice();
        as.success();
    }
    root.add(run1).execute(); // (the first burst runs in execute())
    root.add(run2, handler).execute();
    assert.deepStrictEqual(stack, [run1, run2, handler]);
});

test('error() on an idle root leaves async_stack in its state too, as futoin-asyncsteps', () => {
    const root = $as();
    assert.throws(() => root.error('X', 'y'), /^Error: X$/);
    assert.deepStrictEqual(Object.keys(root.state), ['error_info', 'last_exception', 'async_stack']);
    assert.ok(Array.isArray(root.state.async_stack));
});

test('NODE_ENV=production: async_stack is an empty stand-in, as in futoin-asyncsteps', () => {
    // handlers that pass async_stack on (futoin-executor's notExpected
    // event) read its length there too
    const script = `
        const $as = require(${JSON.stringify(require('./helpers').IMPL)});
        const out = [];
        const show = (what, s) => {
            s.push('ignored');
            out.push([what, typeof s, Array.isArray(s), s.length, Array.from(s)]);
        };
        $as().add((as) => as.add((as) => as.error('Boom')), (as, err) => show(err, as.state.async_stack)).execute();
        $as().add((as) => {
            as.waitExternal();
            setTimeout(() => {
                try {
                    as.error('Ext');
                } catch (e) {}
            }, 1);
        }, (as, err) => show(err, as.state.async_stack)).execute();
        $as().add((as) => as.setTimeout(2), (as, err) => show(err, as.state.async_stack)).execute();
        const r = $as();
        r.add((as) => {
            out.push(['_exec_stack', r._exec_stack.length]);
            as.error('Unhandled');
        });
        r.promise().catch((e) => {
            show(e.message, r.state.async_stack);
        });
        process.once('beforeExit', () => console.log(JSON.stringify(out))); // every flow ended
    `;
    const res = require('child_process').spawnSync(process.execPath, ['-e', script], {
        env: { ...process.env, NODE_ENV: 'production' },
        encoding: 'utf8',
    });
    assert.strictEqual(res.status, 0, res.stderr);
    const out = JSON.parse(res.stdout);
    const sorted = out.slice().sort((a, b) => String(a[0]).localeCompare(String(b[0])));
    assert.deepStrictEqual(sorted, [
        ['_exec_stack', 0],
        ['Boom', 'object', false, 0, []],
        ['Ext', 'object', false, 0, []],
        ['Timeout', 'object', false, 0, []],
        ['Unhandled', 'object', false, 0, []],
    ]);
});

test('the error handler of a step runs once: a second error goes outwards', T, async () => {
    let calls = 0;
    const r = await runFlow((as) => {
        as.add(
            (as) => {
                as.add((as) => as.error('One'));
            },
            (as, err) => {
                ++calls;
                as.add((as) => as.error('Two'));
            },
        );
    });
    assert.strictEqual(calls, 1);
    assert.strictEqual(r.err, 'Two');
});

test('setTimeout() from an event restarts the timeout of the waiting step', T, async () => {
    await onTestTool((AT) => {
        const trace = [];
        const root = $as();
        root.add((as) => {
            as.setTimeout(1000);
            AT.callLater(() => {
                as.setTimeout(5); // progress: a new deadline, 5 ms from now
                trace.push('restarted');
            }, 10);
        }, (as, err) => {
            trace.push(err);
        });
        root.execute();
        AT.callLater(() => trace.push('at 100'), 100);
        AT.run();
        assert.deepStrictEqual(trace, ['restarted', 'Timeout', 'at 100']);
    });
});

test('waitExternal() from an event on a step that waits changes nothing', T, async () => {
    const r = await runFlow((as) => {
        as.waitExternal();
        setTimeout(() => {
            as.waitExternal();
            setTimeout(() => as.success('done'), 1);
        }, 1);
    });
    assert.strictEqual(r.err, null, r.info);
    assert.deepStrictEqual(r.args, ['done']);
});

test('a timeout goes to the error handler of the waiting step', T, async () => {
    let cancelled = 0;
    const r = await runFlow((as) => {
        as.add(
            (as) => {
                as.setCancel((as) => ++cancelled);
                as.setTimeout(5);
            },
            (as, err) => {
                as.success('timed out', err);
            },
        );
    });
    assert.deepStrictEqual(r.args, ['timed out', 'Timeout']);
    assert.strictEqual(cancelled, 1);
});

test('setTimeout() takes what Node\'s timers take: a numeric string, and no number is the shortest delay', T,
    async () => {
        // as futoin-asyncsteps, which passes it on to Node's setTimeout()
        for (const ms of ['2', 'soon', undefined, null, {}, true, { valueOf: () => 3 }]) {
            const r = await runFlow((as) => {
                as.setTimeout(ms);
            });
            assert.strictEqual(r.err, 'Timeout', String(ms));
        }
        // what cannot become a number throws there too
        for (const ms of [Symbol('ms'), 5n]) {
            const r = await runFlow((as) => {
                as.setTimeout(ms);
            });
            assert.ok(r.state.last_exception instanceof TypeError);
        }
    });

test('an external as.error() from an event fails the waiting step', T, async () => {
    const r = await runFlow((as) => {
        as.add(
            (as) => {
                as.waitExternal();
                setTimeout(() => {
                    try {
                        as.error('External', 'from an event');
                    } catch (e) {
                        // as documented: error() throws, the caller catches
                    }
                }, 1);
            },
            (as, err) => as.success(`handled ${err}`, as.state.error_info),
        );
    });
    assert.strictEqual(r.err, null);
    assert.deepStrictEqual(r.args, ['handled External', 'from an event']);
});

/* a flow whose step waits; an event 1 ms later calls as.error('Ext') and
 * catches it; `handler` is the step's error handler */
const externalError = (handler, outer) => new Promise((resolve) => {
    const trace = [];
    const root = $as();
    root.add((as) => {
        as.add((as) => {
            as.waitExternal();
            setTimeout(() => {
                try {
                    as.error('Ext');
                } catch (e) {
                    trace.push(`thrown ${e.message}`);
                }
                trace.push('event end');
            }, 1);
        }, (as, err) => handler(as, err, trace));
    }, (as, err) => {
        trace.push(`outer ${err}`);
        outer(as);
    });
    root.add((as) => {
        trace.push('next');
    });
    root.add((as) => resolve(trace));
    root.execute();
});

test('an external error(): its handlers run inside the call, the steps after them on a later turn', T,
    async () => {
        // recovered by the step's own handler
        assert.deepStrictEqual(await externalError((as, err, trace) => {
            trace.push(`handler ${err}`);
            as.success();
        }), ['handler Ext', 'thrown Ext', 'event end', 'next']);
        // a handler that adds a step: that step is one of the steps after
        assert.deepStrictEqual(await externalError((as, err, trace) => {
            trace.push(`handler ${err}`);
            as.add((as) => {
                trace.push('added');
            });
        }), ['handler Ext', 'thrown Ext', 'event end', 'added', 'next']);
        // not handled there: the outer handler runs inside the call too
        assert.deepStrictEqual(await externalError((as, err, trace) => {
            trace.push(`handler ${err}`);
        }, (as) => as.success()), ['handler Ext', 'outer Ext', 'thrown Ext', 'event end', 'next']);
    });

test('error() on a root whose flow waits fails that flow at its waiting step', T, () => onTestTool((AT) => {
    const trace = [];
    const root = $as();
    root.add((as) => {
        as.waitExternal();
    }, (as, err) => {
        trace.push(`handled ${err} ${as.state.error_info}`);
    });
    root.add((as) => trace.push('not reached'));
    root.execute();
    AT.run();
    assert.throws(() => root.error('MyError', 'from outside'), /MyError/);
    assert.deepStrictEqual(trace, ['handled MyError from outside']);
    AT.run(); // every event left: the step after it never runs
    assert.deepStrictEqual(trace, ['handled MyError from outside']);
}));

test('a throw after success() keeps the thrown value as last_exception', T, () => onTestTool((AT) => {
    const thrown = new Error('after success');
    const r = $as();
    r.add((as) => {
        as.success(1);
        throw thrown;
    }, (as, err) => {});
    r.execute();
    AT.run();
    assert.strictEqual(r.state.last_exception, thrown);
}));

test('a cancel handler a step timeout runs sees the Timeout in state.last_exception, as futoin-asyncsteps', T, async () => {
    const done = deferred();
    const seen = [];
    $as()
        .add((as) => {
            as.setTimeout(1);
            as.setCancel((as) => {
                const { error_info, last_exception } = as.state;
                seen.push(['cancel', error_info, last_exception && last_exception.message]);
            });
        }, (as, err) => {
            seen.push(['handler', err, as.state.last_exception.message]);
            done.resolve();
        })
        .execute();
    await done.promise;
    assert.deepStrictEqual(seen, [['cancel', undefined, 'Timeout'], ['handler', 'Timeout', 'Timeout']]);
});

test('root.error() while its flow\'s next step waits for a later turn ends the flow, as futoin-asyncsteps', T, async () => {
    // a step completed from outside: its flow goes on in a later turn, and
    // an error raised on the root meanwhile cancels the flow there (no
    // error handler runs); the state gets the error, the call throws it
    const seen = [];
    const done = deferred();
    const r = $as();
    r.add((as) => {
        as.add((as) => {
            as.waitExternal();
            setImmediate(() => {
                as.success(1);
                try {
                    r.error('EXT', 'ext info');
                    seen.push('returned');
                } catch (e) {
                    seen.push(`threw ${e.message}`, r.state.error_info, r.state.last_exception === e);
                }
                setImmediate(() => setImmediate(done.resolve)); // past the turn the flow would go on in
            });
        });
    }, (as, err) => seen.push(`H1 ${err}`));
    r.add((as, v) => seen.push(`S2 ${v}`), (as, err) => seen.push(`H2 ${err}`));
    r.execute();
    await done.promise;
    assert.deepStrictEqual(seen, ['threw EXT', 'ext info', true]);
    // the root is idle again: a new run takes new steps
    const again = await r.add((as) => as.success('again')).promise();
    assert.strictEqual(again, 'again');
});

test('root.error() after a handler moved the waiting step on (await rejected, timeout) ends the flow too, silently', T, () => {
    // the step that waited is not waiting any more: its handler added a
    // step that goes on in a later turn; as futoin-asyncsteps the error
    // cancels the flow; before, C printed "not waiting (ignored)" and the
    // flow went on
    const script = `
        const $as = require(${JSON.stringify(require('./helpers').IMPL)});
        const out = [];
        for (const how of ['await', 'timeout']) {
            const r = $as();
            r.add((as) => {
                const onerror = (as, err) => {
                    out.push(how + ' handled ' + err);
                    as.add((as) => out.push(how + ' S4'));
                    setImmediate(() => { // before the turn the steps after go on in
                        try {
                            r.error('EXT', 'extinfo');
                        } catch (e) {
                            out.push(how + ' threw ' + e.message + ' ' + r.state.error_info);
                        }
                    });
                };
                if (how === 'await') {
                    as.await(new Promise((resolve, reject) => process.nextTick(() => reject(new Error('R')))), onerror);
                } else {
                    as.add((as) => as.setTimeout(1), onerror);
                }
                as.add((as) => out.push(how + ' S5'));
            });
            r.add((as) => out.push(how + ' END'));
            r.execute();
        }
        process.once('beforeExit', () => console.log(JSON.stringify(out.sort())));
    `;
    const res = require('child_process').spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
    assert.strictEqual(res.status, 0, res.stderr);
    assert.strictEqual(res.stderr, '');
    assert.deepStrictEqual(JSON.parse(res.stdout), [
        'await handled PromiseReject', 'await threw EXT extinfo',
        'timeout handled Timeout', 'timeout threw EXT extinfo',
    ]);
});

test('a root add() between the steps of its running flow, its next step queued, ends the flow with InternalError, as futoin-asyncsteps', T, async () => {
    // outside production mode a root-level add() while a step of the flow
    // is in progress (here the outer one) is a root error(InternalError):
    // with the flow's next step queued for a later turn, that cancels the flow
    const seen = [];
    const done = deferred();
    let thrown = null;
    const r = $as();
    r.add((as) => {
        as.add((as) => {
            as.waitExternal();
            setImmediate(() => {
                as.success();
                try {
                    r.add((as) => seen.push('late'));
                } catch (e) {
                    thrown = e;
                }
                setImmediate(() => setImmediate(done.resolve)); // past the turn the flow would go on in
            });
        });
        as.add((as) => seen.push('S2'));
    }, (as, err) => seen.push(`H ${err}`));
    r.add((as) => seen.push('S3'));
    r.execute();
    await done.promise;
    if ($as.isProduction) {
        // production mode: the add() joins the running flow
        assert.strictEqual(thrown, null);
        assert.deepStrictEqual(seen, ['S2', 'S3', 'late']);
    } else {
        assert.ok(thrown instanceof Error);
        assert.strictEqual(thrown.message, 'InternalError');
        assert.strictEqual(r.state.error_info, 'Top level add in execution');
        assert.deepStrictEqual(seen, []);
    }
});

test('root.error() while the flow waits inside a parallel branch fails the parallel step, as futoin-asyncsteps', T, async () => {
    // the reference runs each branch as a root of its own: the error hits
    // the step that waits for the branches, not the branch's waiting step
    const seen = [];
    const done = deferred();
    const r = $as();
    r.add((as) => {
        as.setCancel(() => seen.push('cancel outer'));
        as.parallel((as, err) => seen.push(`Hpar ${err}`)).add((as) => {
            as.add((as) => {
                as.waitExternal();
            }, (as, err) => {
                seen.push(`Hbranch ${err}`);
                as.success('recovered');
            });
            as.add((as, v) => seen.push(`S2 ${v}`));
        });
    }, (as, err) => {
        seen.push(`Hstep ${err} ${as.state.error_info}`);
        setImmediate(() => setImmediate(done.resolve)); // past the turn the flow would go on in
    });
    r.add((as) => seen.push('END'));
    r.execute();
    assert.throws(() => r.error('EXT', 'ext info'), /^Error: EXT$/);
    await done.promise;
    assert.deepStrictEqual(seen, ['Hpar EXT', 'cancel outer', 'Hstep EXT ext info']);
});

if (isPolyglot) {
    // futoin-asyncsteps lets these exceptions out of cancel()
    test('an exception of a cancel handler becomes a process warning, whatever its value', T, async () => {
        const warnings = [];
        const onWarning = (w) => warnings.push(w.message);
        process.on('warning', onWarning);
        try {
            for (const thrown of [Symbol('sym'), { get stack() { throw new Error('stack getter'); } }, new Error('plain')]) {
                const r = $as();
                r.add((as) => {
                    as.setCancel(() => {
                        throw thrown;
                    });
                });
                r.execute();
                r.cancel();
            }
            await new Promise((resolve) => setImmediate(resolve));
        } finally {
            process.off('warning', onWarning);
        }
        assert.strictEqual(warnings.length, 3, warnings.join('; '));
        assert.match(warnings[0], /cancel handler: Symbol\(sym\)/);
        assert.match(warnings[1], /cancel handler: \[object\]/);
        assert.match(warnings[2], /cancel handler: Error: plain/);
    });

    // futoin-asyncsteps lets the getter's exception out of execute()
    test('a thrown object whose message getter throws still fails the flow (its own string as the code)', T, async () => {
        const evil = {
            get message() {
                throw new Error('message getter');
            },
        };
        const r = await runFlow((as) => {
            as.add((as) => {
                throw evil;
            });
        });
        assert.strictEqual(r.err, '[object Object]');
        assert.strictEqual(r.state.last_exception, evil);
    });
}

test('a step that fails at once still has its state through its own interface in its cancel handler and error handler, as futoin-asyncsteps', T, () => onTestTool((AT) => {
    const seen = [];
    for (const how of ['throw', 'error']) {
        $as()
            .add((as) => {
                as.setCancel(() => {
                    const s = as.state;
                    seen.push(`${how} cancel ${typeof s} ${s && s.last_exception.message}`);
                });
                if (how === 'throw') {
                    throw new Error('T');
                }
                as.error('E');
            }, (as2, err) => {
                seen.push(`${how} handler ${err}`);
            })
            .execute();
    }
    AT.run();
    assert.deepStrictEqual(seen, [
        'throw cancel function T', 'throw handler T',
        'error cancel function E', 'error handler E',
    ]);
}));

test('error() from outside on the flow whose turn ran last: the steps after its recovering handler run inside that call, as futoin-asyncsteps\' burst', T, async () => {
    // futoin-asyncsteps goes on inside error() when that flow owns the
    // burst: it ran the last event, or promise() started it; else (a flow
    // that execute() started and that waited since) through callImmediate()
    for (const how of ['promise', 'event', 'execute']) {
        const order = [];
        const waiting = deferred();
        const fin = deferred();
        const root = $as();
        root.add((as) => {
            if (how === 'event') {
                as.add((as) => {
                    as.waitExternal();
                    setImmediate(() => as.success());
                });
            }
            as.add((as) => {
                as.waitExternal();
                waiting.resolve(as);
            });
        }, (as, err) => {
            order.push(`handler ${err}`);
            as.add((as) => order.push('added'));
        });
        root.add((as) => order.push('next'));
        root.add((as) => fin.resolve());
        if (how === 'promise') {
            root.promise();
        } else {
            root.execute();
        }
        const step = await waiting.promise;
        try {
            step.error('Outside');
        } catch (e) {
            order.push('error() threw');
        }
        await fin.promise;
        assert.deepStrictEqual(order, how === 'execute' ?
            ['handler Outside', 'error() threw', 'added', 'next'] :
            ['handler Outside', 'added', 'next', 'error() threw'], how);
    }
});

test('an Error whose message is not a string: the handlers get the message as it is, promise() an Error of its text', T,
    async () => {
        for (const message of [42, null, true, { m: 1 }]) {
            const fail = (as) => {
                const e = new Error('x');
                e.message = message;
                throw e;
            };
            const r = await runFlow(fail);
            assert.strictEqual(r.err, message);
            const outer = await runFlow((as) => as.add(fail));
            assert.strictEqual(outer.err, message);
            await assert.rejects($as().add(fail).promise(), (e) => {
                assert.ok(e instanceof Error);
                assert.strictEqual(e.message, String(message));
                return true;
            });
        }
    });

test('a Timeout that only cancel handlers hear still sets state.async_stack, as every error does', T, async () => {
    const root = $as();
    root.add((as) => {
        as.setTimeout(3);
        as.setCancel(() => {});
    });
    await root.promise().catch(() => {});
    assert.deepStrictEqual(Object.keys(root.state), ['error_info', 'last_exception', 'async_stack']);
    assert.strictEqual(root.state.last_exception.message, 'Timeout');
    const loop = $as();
    loop.loop((as) => as.break());
    await loop.promise();
    assert.deepStrictEqual(Object.keys(loop.state), ['error_info', 'last_exception', 'async_stack']);
});

test('error and cancel handlers are called with this === null, as in futoin-asyncsteps', T, async () => {
    'use strict';
    const seen = [];
    const r = await runFlow((as) => {
        as.add(function(as) {
            as.setCancel(function() {
                seen.push(['cancel', this]);
            });
            as.error('E');
        }, function(as, err) {
            seen.push(['error handler', this]);
            as.success();
        });
    });
    assert.strictEqual(r.err, null);
    assert.deepStrictEqual(seen, [['cancel', null], ['error handler', null]]);
});

test('a falsy error handler (false, 0, \'\', NaN) is none, as in futoin-asyncsteps: `add(step, cond && handler)`', T, async () => {
    const { Mutex } = $as;
    for (const none of [false, 0, '', NaN]) {
        const r = await runFlow((as) => {
            as.add((as) => as.success('a'), none);
            as.parallel(none).add((as) => {});
            as.sync(new Mutex(), (as) => {}, none);
            as.await(Promise.resolve('b'), none);
        });
        assert.strictEqual(r.err, null, String(none));
        assert.deepStrictEqual(r.args, ['b']);
        const failed = await runFlow((as) => as.add((as) => as.error('Deep'), none));
        assert.strictEqual(failed.err, 'Deep'); // no handler of its own: the one further out
        const root = $as();
        root.add((as) => as.success('root'), none);
        assert.strictEqual(await root.promise(), 'root');
    }
});
