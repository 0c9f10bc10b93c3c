'use strict';

// Argument validation and misuse: what futoin-asyncsteps reports outside
// production mode, and what production mode skips.

const test = require('node:test');
const assert = require('node:assert');
const { spawnSync } = require('child_process');
const { $as, IMPL, isPolyglot, runFlow, onTestTool, deferred, T } = require('./helpers');

const STEP_MSG = 'Step function must expect at least AsyncStep interface';
const ONERROR_MSG = 'Error handler must take exactly two arguments';
const STALE_MSG = 'InternalError: Unexpected call, object is out of service';

/* what `script` prints as JSON, run in a child process in production mode */
const productionOutput = (script) => {
    const res = spawnSync(process.execPath, ['-e', script], {
        env: { ...process.env, NODE_ENV: 'production' },
        encoding: 'utf8',
    });
    assert.strictEqual(res.status, 0, res.stderr);
    return JSON.parse(res.stdout);
};

/* expect fn() to throw the InternalError of the argument checks and leave
 * error_info in the state */
const internalError = (root, fn, info) => {
    assert.throws(fn, (e) => {
        assert.ok(e instanceof Error);
        assert.strictEqual(e.message, 'InternalError');
        return true;
    });
    assert.strictEqual(root.state.error_info, info);
};

test('add(null) and add(undefined) throw a TypeError', () => {
    assert.throws(() => $as().add(null), TypeError);
    assert.throws(() => $as().add(undefined), TypeError);
    assert.throws(() => $as().add(), TypeError);
});

test('copyFrom() of no AsyncSteps throws a TypeError that names copyFrom()', () => {
    // futoin-asyncsteps copies nothing from a number or a string
    for (const other of isPolyglot ? [null, undefined, 5, 'x', {}] : [null, undefined]) {
        assert.throws(() => $as().copyFrom(other), (e) => {
            assert.ok(e instanceof TypeError, String(e));
            if (isPolyglot) {
                assert.match(e.message, /copyFrom\(\) expects an AsyncSteps/);
            }
            return true;
        });
    }
});

test('a step function taking no arguments is an InternalError', () => {
    for (const call of [
        (r) => r.add(() => {}),
        (r) => r.add(function() {}),
        (r) => r.loop(() => {}),
        (r) => r.repeat(2, () => {}),
        (r) => r.forEach([1], () => {}),
        (r) => r.sync(new $as.Mutex(), () => {}),
    ]) {
        const root = $as();
        internalError(root, () => call(root), STEP_MSG);
        assert.strictEqual(root.state.last_exception.message, 'InternalError');
    }
});

test('an error handler not taking exactly two arguments is an InternalError', () => {
    for (const onerror of [() => {}, (as) => {}, (as, err, extra) => {}]) {
        for (const call of [
            (r) => r.add((as) => {}, onerror),
            (r) => r.parallel(onerror),
            (r) => r.await(Promise.resolve(), onerror),
            (r) => r.sync(new $as.Mutex(), (as) => {}, onerror),
        ]) {
            const root = $as();
            internalError(root, () => call(root), ONERROR_MSG);
        }
    }
});

test('inside a step the argument checks fail the step with InternalError', T, async () => {
    const cases = [
        [(as) => as.add(() => {}), STEP_MSG],
        [(as) => as.add((as) => {}, (as) => {}), ONERROR_MSG],
        [(as) => as.loop(() => {}), STEP_MSG],
        [(as) => as.repeat(1, () => {}), STEP_MSG],
        [(as) => as.forEach({ a: 1 }, () => {}), STEP_MSG],
        [(as) => as.parallel((as) => {}), ONERROR_MSG],
    ];
    for (const [call, info] of cases) {
        const r = await runFlow(call);
        assert.strictEqual(r.err, 'InternalError', info);
        assert.strictEqual(r.info, info);
    }
});

test('as.add(null) inside a step fails the step with the TypeError', T, async () => {
    const r = await runFlow((as) => as.add(null));
    assert.ok(r.state.last_exception instanceof TypeError);
    assert.strictEqual(r.err, r.state.last_exception.message);
});

test('success() after add() in the same step is an InternalError', T, async () => {
    const r = await runFlow((as) => {
        as.add((as) => {});
        as.success();
    });
    assert.strictEqual(r.err, 'InternalError');
    assert.strictEqual(r.info, 'Invalid success() call');
});

test('a root add() while the root executes is an InternalError', T, async () => {
    const root = $as();
    const r = await runFlow((as) => {
        root.add((as) => {});
    }, root);
    assert.strictEqual(r.err, 'InternalError');
    assert.strictEqual(r.info, 'Top level add in execution');
});

test('promise() of a root that executes throws InternalError at the call', T, async () => {
    const root = $as();
    root.add((as) => {
        as.waitExternal();
    });
    root.execute();
    // as error() on a running root: the flow fails at its waiting step
    assert.throws(() => root.promise(), (e) => e.message === 'InternalError' &&
        root.state.error_info === 'Top level add in execution');
});

test('using the interface of an outer step from a sub-step is an InternalError', T, async () => {
    const trace = [];
    const r = await runFlow((as) => {
        as.add((inner) => {
            as.success('wrong interface');
        });
        as.add((as) => trace.push('not run'));
    });
    assert.strictEqual(r.err, 'InternalError');
    assert.strictEqual(r.info, 'Invalid call (sanity check)');
    assert.deepStrictEqual(trace, []);
});

test('a step interface is out of service after its step ended', T, async () => {
    let saved = null;
    const r = await runFlow((as) => {
        as.add((as) => {
            saved = as;
        });
    });
    assert.strictEqual(r.err, null);
    for (const call of [
        () => saved.success(),
        () => saved.error('Late'),
        () => saved.add((as) => {}),
        () => saved.setTimeout(10),
        () => saved.loop((as) => {}),
        () => saved.break(),
    ]) {
        assert.throws(call, (e) => {
            assert.ok(e instanceof Error);
            assert.strictEqual(e.message, STALE_MSG);
            return true;
        });
    }
});

test('a step interface has state null once its step ended', T, async () => {
    const seen = {};
    let plain = null;
    let succeeded = null;
    let outer = null;
    const r = await runFlow((as) => {
        as.add((as) => {
            plain = as;
            seen.during = as.state !== null && typeof as.state === 'function';
        });
        as.add((as) => {
            seen.plainAfter = plain.state;
            succeeded = as;
            as.success();
            seen.afterSuccess = succeeded.state;
        });
        as.add((as) => {
            outer = as;
            as.add((as) => {
                // the outer step has not ended: its sub-steps run
                seen.outerWhileInner = outer.state === as.state;
            });
        });
        as.add((as) => {
            seen.outerAfter = outer.state;
        });
    });
    assert.strictEqual(r.err, null);
    assert.deepStrictEqual(seen, {
        during: true, plainAfter: null, afterSuccess: null, outerWhileInner: true, outerAfter: null,
    });
});

test('a late callback guarded by as.state does nothing once the step timed out', T, async () => {
    const late = deferred();
    const r = await runFlow((as) => {
        as.add(
            (as) => {
                as.setTimeout(5);
                setTimeout(() => {
                    try {
                        if (as.state) {
                            as.success('late');
                        }
                        late.resolve(as.state);
                    } catch (e) {
                        late.resolve(e);
                    }
                }, 30);
            },
            (as, err) => {
                as.state.handled = err;
                as.success('recovered');
            });
    });
    assert.strictEqual(r.err, null);
    assert.strictEqual(r.state.handled, 'Timeout');
    assert.strictEqual(await late.promise, null);
});

test('success() twice, or error() after success(): the flow does not go on', T, async () => {
    for (const misuse of [
        (as) => {
            as.success(1);
            as.success(2);
        },
        (as) => {
            as.success(1);
            as.error('Late');
        },
    ]) {
        const trace = [];
        await onTestTool((AT) => {
            const root = $as();
            root.add((as) => {
                as.add((as) => misuse(as));
                as.add((as) => trace.push('next step'));
            });
            root.execute();
            AT.run();
        });
        assert.deepStrictEqual(trace, []);
    }
});

// calls on the interface of a step whose sub-steps run, from an event
const OUTER_CALLS = [
    ['success', (as) => as.success()],
    ['add', (as) => as.add((as) => {})],
    ['error', (as) => as.error('Late')],
];

test('from an event, a call on a step whose sub-steps run fails the flow where it is (sanity check)', T, async () => {
    // as futoin-asyncsteps: the parent is out of bounds while its sub-steps
    // run; its flow gets an InternalError at its current step, whose
    // handlers run before the call throws
    for (const [name, call] of OUTER_CALLS) {
        const trace = [];
        const late = deferred();
        const r = await runFlow((as) => {
            const parent = as;
            as.add((as) => {
                as.waitExternal();
                setTimeout(() => {
                    try {
                        call(parent);
                        trace.push('no throw');
                    } catch (e) {
                        trace.push(`throws ${e.message}`);
                    }
                    setTimeout(() => late.resolve(as.state), 1);
                }, 1);
            }, (as, err) => trace.push(`sub handler ${err} ${as.state.error_info}`));
        });
        assert.strictEqual(r.err, 'InternalError', name);
        assert.strictEqual(await late.promise, null, name);
        assert.deepStrictEqual(trace, [
            'sub handler InternalError Invalid call (sanity check)',
            'throws InternalError',
        ], name);
    }
});

test('from an event, a call on a parallel branch\'s step whose sub-steps run fails that branch where it is', T, async () => {
    // as futoin-asyncsteps, where each branch runs as a root of its own: the
    // branch's waiting step fails, its handler recovers, the parallel goes on
    for (const [name, call] of OUTER_CALLS) {
        const trace = [];
        const r = await runFlow((as) => {
            as.parallel((as, err) => trace.push(`parallel handler ${err}`))
                .add((as) => {
                    const parent = as;
                    as.add((as) => {
                        as.waitExternal();
                        setImmediate(() => {
                            try {
                                call(parent);
                                trace.push('no throw');
                            } catch (e) {
                                trace.push(`throws ${e.message}`);
                            }
                        });
                    }, (as, err) => {
                        trace.push(`sub handler ${err} ${as.state.error_info}`);
                        as.success('rec');
                    });
                    as.add((as, v) => trace.push(`branch goes on ${v}`));
                })
                .add((as) => trace.push('other branch'));
            as.add((as) => trace.push('after parallel'));
        });
        assert.strictEqual(r.err, null, name);
        assert.deepStrictEqual(trace, [
            'other branch',
            'sub handler InternalError Invalid call (sanity check)',
            'throws InternalError',
            'branch goes on rec',
            'after parallel',
        ], name);
    }
});

test('NODE_ENV=production skips the argument checks', () => {
    const script = `
        const $as = require(${JSON.stringify(IMPL)});
        const out = { isProduction: $as.isProduction, ran: [] };
        const root = $as();
        root.add(() => out.ran.push('no-arg step'), (as) => {});
        root.add(function(as) { out.ran.push('second'); });
        root.execute();
        process.once('beforeExit', () => console.log(JSON.stringify(out))); // every flow ended
    `;
    assert.deepStrictEqual(productionOutput(script), {
        isProduction: true,
        ran: ['no-arg step', 'second'],
    });
});

test('root.cancel() inside a step puts that step\'s interface out of service', T, async () => {
    // as futoin-asyncsteps: the step is cleaned up at once; only
    // waitExternal() and setCancel() stay harmless
    const calls = {
        add: (as) => as.add((as) => {}),
        success: (as) => as.success(),
        error: (as) => as.error('Late'),
        setTimeout: (as) => as.setTimeout(10),
        loop: (as) => as.loop((as) => {}),
        repeat: (as) => as.repeat(2, (as) => {}),
        break: (as) => as.break(),
        successStep: (as) => as.successStep(1),
        parallel: (as) => as.parallel(),
    };
    const trace = [];
    await onTestTool((AT) => {
        for (const [name, call] of Object.entries(calls)) {
            const root = $as();
            root.add((as) => {
                root.cancel();
                trace.push(`${name}:${as.state}`);
                try {
                    call(as);
                    trace.push(`${name}: no throw`);
                } catch (e) {
                    assert.strictEqual(e.message, STALE_MSG, name);
                }
                as.waitExternal();
                as.setCancel(() => trace.push('cancel handler'));
            }, (as, err) => trace.push(`handler ${err}`));
            root.add((as) => trace.push('next step'));
            root.execute();
            assert.strictEqual(root.state.error_info, undefined, name);
            assert.strictEqual(root.state.last_exception, undefined, name);
        }
        AT.run(); // every event of the flows, in virtual time
    });
    assert.deepStrictEqual(trace, Object.keys(calls).map((name) => `${name}:null`));
});

test('what a step throws after root.cancel() inside it ends nowhere but in last_exception', T, async () => {
    const trace = [];
    await onTestTool((AT) => {
        const boom = new Error('after cancel');
        const root = $as();
        root.add((as) => {
            root.cancel();
            throw boom;
        }, (as, err) => trace.push(`handler ${err}`));
        root.add((as) => trace.push('next step'));
        root.execute(); // does not throw
        assert.strictEqual(root.state.last_exception, boom);
        assert.strictEqual(root.state.error_info, undefined);

        const root2 = $as();
        root2.add((as) => {
            as.add((as) => {
                root2.cancel();
                as.error('Late', 'late info'); // out of service: throws
            });
        }, (as, err) => trace.push(`handler ${err}`));
        root2.execute();
        assert.strictEqual(root2.state.last_exception.message, STALE_MSG);
        assert.strictEqual(root2.state.error_info, undefined);
        AT.run(); // every event of the flows, in virtual time
    });
    assert.deepStrictEqual(trace, []);
});

test('a step interface kept after its step ended never names a later step', T, async () => {
    // a handle's generation bits came back after 1024 reuses of its slot:
    // the kept interface of a timed-out step completed another flow's step
    let late = null;
    const first = new Promise((resolve) => {
        $as().add((as) => {
            as.setTimeout(1);
            late = (v) => {
                if (as.state) {
                    as.success(v);
                    return true;
                }
                return false;
            };
        }, (as, err) => resolve(err)).execute();
    });
    assert.strictEqual(await first, 'Timeout');
    let revived = 0;
    const got = [];
    for (let i = 1; i < 100000 && !revived; ++i) {
        const r = $as();
        r.add((as) => as.waitExternal()).add((as, v) => got.push(v));
        r.execute();
        if (late('reply meant for the first flow')) {
            revived = i;
        }
        r.cancel();
    }
    assert.strictEqual(revived, 0);
    assert.deepStrictEqual(got, []);
});

test('a second completion from outside throws and changes nothing', T, async () => {
    // it was accepted with a line on stderr, and an error() after it ran
    // the next step inside the call
    let S = null;
    const seen = [];
    const done = new Promise((resolve) => {
        $as().add((as) => {
            S = as;
            as.waitExternal();
        }, (as, err) => seen.push(`handler ${err}`)).add((as, v) => {
            seen.push(`next ${v}`);
            resolve();
        }).execute();
    });
    S.success(1);
    assert.throws(() => S.success(2), /InternalError/);
    assert.throws(() => S.error('Late'), /InternalError/);
    assert.deepStrictEqual(seen, []);
    await done;
    assert.deepStrictEqual(seen, ['next 1']);
});

test('success() or error() inside a cancel handler throws', T, () => onTestTool((AT) => {
    const seen = [];
    const r = $as();
    r.add((as) => {
        as.setCancel((as) => {
            for (const call of [() => as.success(), () => as.error('InCancel')]) {
                try {
                    call();
                    seen.push('accepted');
                } catch (e) {
                    seen.push(e.message);
                }
            }
        });
    }).add((as) => seen.push('next'));
    r.execute();
    AT.run();
    r.cancel();
    AT.run();
    assert.strictEqual(seen.length, 2);
    assert.ok(seen.every((m) => /InternalError/.test(m)), seen.join());
}));

test('a call on a step interface inside its cancel handler throws InternalError, as the sanity check', T, async () => {
    const seen = [];
    const infos = [];
    const warnings = [];
    const onWarning = (w) => warnings.push(w.message);
    process.on('warning', onWarning);
    const r = $as();
    r.add((as) => {
        as.setCancel((as) => {
            const calls = {
                success: () => as.success(),
                error: () => as.error('InCancel'),
                add: () => as.add((as) => {}),
                setTimeout: () => as.setTimeout(10),
                loop: () => as.loop((as) => {}),
                repeat: () => as.repeat(1, (as) => {}),
                forEach: () => as.forEach([1], (as) => {}),
                successStep: () => as.successStep(),
                await: () => as.await(Promise.resolve(1)),
                copyFrom: () => as.copyFrom($as()),
                break: () => as.break(),
                continue: () => as.continue(),
            };
            for (const name of Object.keys(calls)) {
                r.state.error_info = undefined;
                try {
                    calls[name]();
                    seen.push(`${name}: accepted`);
                } catch (e) {
                    seen.push(`${name}: ${e.message}`);
                }
                infos.push(r.state.error_info);
            }
            // harmless there, as in futoin-asyncsteps
            as.setCancel((as) => {});
            as.waitExternal();
        });
    });
    r.execute();
    r.cancel();
    await new Promise((resolve) => setImmediate(resolve)); // warnings come on a later tick
    process.removeListener('warning', onWarning);
    assert.deepStrictEqual(seen, ['success', 'error', 'add', 'setTimeout', 'loop', 'repeat', 'forEach',
        'successStep', 'await', 'copyFrom', 'break', 'continue'].map((n) => `${n}: InternalError`));
    // the state keeps what the flow unwinds (futoin-asyncsteps accepts the calls there)
    assert.ok(infos.every((i) => i === undefined), infos.join());
    assert.deepStrictEqual(warnings, []);
});

test('error() with an error_info whose conversion throws still fails the step', T, async () => {
    const odd = Object.create(null);
    const r = await runFlow((as) => as.error('Odd', odd));
    assert.strictEqual(r.err, 'Odd');
    assert.strictEqual(r.state.error_info, odd);
});

test('a root add() between the steps of its running flow appends to that flow, as futoin-asyncsteps', T, async () => {
    // its step completed from outside: no step of the flow is on the stack
    const trace = [];
    const done = deferred();
    let waiting;
    const root = $as();
    root.add((as) => {
        waiting = as;
        as.waitExternal();
    });
    root.add((as) => trace.push('B'));
    root.execute();
    waiting.success();
    root.add((as) => {
        trace.push('C');
        done.resolve();
    });
    await done.promise;
    assert.deepStrictEqual(trace, ['B', 'C']);
});

test('NODE_ENV=production: a root add() inside a step of its flow appends to the running flow, as futoin-asyncsteps', () => {
    const script = `
        const $as = require(${JSON.stringify(IMPL)});
        const ran = [];
        const root = $as();
        root.add((as) => {
            root.add((as) => {
                ran.push('added');
                console.log(JSON.stringify(ran));
            });
        });
        root.add((as) => ran.push('second'));
        root.execute();
    `;
    assert.deepStrictEqual(productionOutput(script), ['second', 'added']);
});

test('success() or error() from outside on a step an error from outside moved on throws, silently, and fails nothing', T, () => {
    // the step's error handler added steps, so its step is not over yet;
    // before, ours printed "futoin: ... (ignored)" lines and returned
    const { spawnSync } = require('child_process');
    const { IMPL } = require('./helpers');
    const script = `
        const $as = require(${JSON.stringify(IMPL)});
        const log = [];
        let ended = 0;
        for (const late of ['success', 'error']) {
            const r = $as();
            let step = null;
            r.add((as) => {
                step = as;
                as.waitExternal();
            }, (as, err) => {
                log.push(late + ': handled ' + err);
                as.add((as) => log.push(late + ': recovered'));
            });
            r.add((as) => {
                if (++ended === 2) {
                    console.log(log.join(', '));
                }
            });
            r.execute();
            setImmediate(() => {
                try {
                    r.error('Outside');
                } catch (e) {
                    // error() throws as documented
                }
                try {
                    late === 'success' ? step.success() : step.error('Late');
                    log.push(late + ': returned');
                } catch (e) {
                    log.push(late + ': threw ' + e.message);
                }
            });
        }
    `;
    const res = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
    assert.strictEqual(res.status, 0, res.stderr);
    assert.strictEqual(res.stderr, '');
    // futoin-asyncsteps throws the same there (its flow then fails with that
    // error, or stalls: its quirk); ours leaves the flow to its handler's steps
    assert.strictEqual(res.stdout.trim(), [
        'success: handled Outside', 'success: threw InternalError',
        'error: handled Outside', 'error: threw Late',
        'success: recovered', 'error: recovered',
    ].join(', '));
});

test('after success() in its callback, error(), setTimeout(), successStep(), await(), break(), add() and the loops throw; caught, the flow goes on as it was', T,
    async () => {
        // as futoin-asyncsteps: the interface is out of service once its step
        // succeeded (there production mode throws a TypeError instead)
        const calls = [
            ['add', (as) => as.add((as) => {})],
            ['add with onerror', (as) => as.add((as) => {}, (as, err) => {})],
            ['parallel', (as) => as.parallel().add((as) => {})],
            ['loop', (as) => as.loop((as) => as.break())],
            ['repeat', (as) => as.repeat(2, (as) => {})],
            ['forEach', (as) => as.forEach([1, 2], (as) => {})],
            ['sync', (as) => as.sync(new $as.Mutex(), (as) => {})],
            ['error', (as) => as.error('Late', 'late info')],
            ['setTimeout', (as) => as.setTimeout(5)],
            ['successStep', (as) => as.successStep(2)],
            ['await', (as) => as.await(Promise.resolve(3))],
            ['break', (as) => as.break()],
            ['continue', (as) => as.continue()],
        ];
        for (const [name, call] of calls) {
            let thrown = null;
            const r = await runFlow((as) => {
                as.success(1);
                try {
                    call(as);
                } catch (e) {
                    thrown = e;
                }
            });
            assert.ok(thrown instanceof Error, name);
            if (process.env.NODE_ENV !== 'production') {
                assert.strictEqual(thrown.message, 'InternalError: Unexpected call, object is out of service', name);
            }
            assert.strictEqual(r.err, null, name);
            assert.deepStrictEqual(r.args, [1], name);
            assert.strictEqual(r.state.error_info, undefined, name);
            assert.strictEqual(r.state.last_exception, undefined, name);
        }
    });

test('after success() in its callback, setCancel() and waitExternal() change nothing: the flow goes on', T, async () => {
    // futoin-asyncsteps takes them without a word; the cancel handler never runs
    let cancelled = 0;
    for (const call of [(as) => as.setCancel((as) => ++cancelled), (as) => as.waitExternal()]) {
        const r = await runFlow((as) => {
            as.success(1);
            assert.strictEqual(call(as), as);
        });
        assert.strictEqual(r.err, null);
        assert.deepStrictEqual(r.args, [1]);
    }
    assert.strictEqual(cancelled, 0);
});

test('NODE_ENV=production: success() or error() on the interface of a root-level step that ended throws, also for the first steps of a root', () => {
    // futoin-asyncsteps throws there too (a TypeError); the interfaces of
    // root-level steps that completed one after another were silently taken
    const script = `
        const $as = require(${JSON.stringify(IMPL)});
        const saved = [];
        $as().add((as) => { saved.push(as); }).add((as) => { saved.push(as); as.success(1); }).add((as) => {}).execute();
        setTimeout(() => {
            const out = [];
            for (const as of saved) {
                for (const call of [() => as.success(), () => as.success(1, 2), () => as.error('Late'),
                    () => as.successStep(3)]) {
                    try {
                        call();
                        out.push('accepted');
                    } catch (e) {
                        out.push('threw');
                    }
                }
            }
            console.log(JSON.stringify(out));
        }, 5);
    `;
    assert.deepStrictEqual(productionOutput(script), new Array(8).fill('threw'));
});

test('NODE_ENV=production: after root.cancel() in a step\'s callback, its success() and error() still throw', () => {
    const script = `
        const $as = require(${JSON.stringify(IMPL)});
        const out = [];
        const r = $as();
        r.add((as) => {
            r.cancel();
            for (const call of [() => as.success(), () => as.error('Late')]) {
                try {
                    call();
                    out.push('accepted');
                } catch (e) {
                    out.push('threw');
                }
            }
        });
        r.add((as) => out.push('next step ran'));
        r.execute();
        setTimeout(() => console.log(JSON.stringify(out)), 5);
    `;
    assert.deepStrictEqual(productionOutput(script), ['threw', 'threw']);
});

test('setCancel() or waitExternal() on an outer step\'s interface from its sub-step changes nothing: the flow goes on', T,
    async () => {
        // as futoin-asyncsteps, which has no check on these two; the flow
        // stalled here (neither ending nor failing)
        for (const call of [(outer) => outer.setCancel(() => {}), (outer) => outer.waitExternal()]) {
            const r = await runFlow((outer) => {
                outer.add((as) => {
                    call(outer);
                    as.success('inner');
                });
            });
            assert.strictEqual(r.err, null);
            assert.deepStrictEqual(r.args, ['inner']);
            let i = 0;
            const loop = $as();
            loop.loop((body) => {
                if (++i > 2) {
                    body.break();
                }
                body.add((as) => call(body));
            });
            await loop.promise();
            assert.strictEqual(i, 3);
        }
    });

test('a state object that refuses writes: the TypeError comes out of execute() or as uncaught, and the process exits by itself', () => {
    // the library's own code throws there (as futoin-asyncsteps' does);
    // the engine must not hand the failed step out again and again
    const script = `
        const $as = require(${JSON.stringify(IMPL)});
        const uncaught = [];
        process.on('uncaughtException', (e) => uncaught.push(e.message));
        let threw = '';
        try {
            new $as.AsyncSteps(Object.freeze({})).add((as) => {
                as.setTimeout(5);
                as.add((as) => as.error('E'));
            }).execute();
        } catch (e) {
            threw = e.message;
        }
        // thrown in a timer turn (an inner step timeout)
        new $as.AsyncSteps(Object.freeze({})).add((as) => as.add((as) => as.setTimeout(1))).execute();
        process.on('exit', () => console.log(JSON.stringify({ threw, uncaught })));
    `;
    // (the timeout only keeps a hang from stalling the suite)
    const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 60000 });
    assert.strictEqual(r.signal, null, 'the process did not exit by itself');
    assert.strictEqual(r.status, 0, r.stderr);
    const { threw, uncaught } = JSON.parse(r.stdout);
    assert.match(threw, /not extensible/);
    assert.ok(uncaught.length >= 1 && uncaught.every((m) => /not extensible/.test(m)), JSON.stringify(uncaught));
});
