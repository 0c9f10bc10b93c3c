'use strict';

// parallel(): branches, shared state, completion, errors cancelling the
// siblings, the parallel error handler.
//
// Branch errors are raised from external events here: futoin-asyncsteps
// 2.5 loses an error raised synchronously while its parallel step starts
// the branches (the flow then never ends), so that case has no reference
// behaviour to compare with.

const test = require('node:test');
const assert = require('node:assert');
const { $as, runFlow, onTestTool, T } = require('./helpers');

/* a step that waits for an event, then calls `then(as)` */
const later = (then, ms = 1) => (as) => {
    as.waitExternal();
    setTimeout(() => {
        try {
            then(as);
        } catch (e) {
            // error() throws to its caller
        }
    }, ms);
};

test('all branches run, then the next step, with no result', T, async () => {
    const trace = [];
    const r = await runFlow((as) => {
        const p = as.parallel();
        p.add((as) => {
            trace.push('a1');
            as.add((as) => trace.push('a2'));
            as.add(later((as) => {
                trace.push('a3');
                as.success('a result');
            }));
        });
        p.add(later((as) => {
            trace.push('b1');
            as.success('b result');
        }, 3));
        p.add((as) => {
            trace.push('c1');
            as.success('c result');
        });
        as.add(function(as) {
            trace.push(`next(${arguments.length - 1})`);
            as.success('end');
        });
    });
    assert.strictEqual(r.err, null);
    assert.deepStrictEqual(r.args, ['end']);
    assert.strictEqual(trace.length, 6);
    assert.strictEqual(trace[5], 'next(0)');
    const order = (x, y) => assert.ok(trace.indexOf(x) < trace.indexOf(y), `${x} before ${y}`);
    order('a1', 'a2');
    order('a2', 'a3');
    for (const s of ['a1', 'a2', 'a3', 'b1', 'c1']) {
        assert.ok(trace.includes(s), s);
    }
});

test('root.parallel() and an empty parallel step', T, async () => {
    const trace = [];
    const root = $as();
    root.parallel()
        .add((as) => trace.push('x'))
        .add((as) => trace.push('y'));
    root.parallel();
    root.add((as) => as.success(trace.slice().sort()));
    assert.deepStrictEqual(await root.promise(), ['x', 'y']);
});

test('branches share the state of the flow (as.state() === root state)', T, async () => {
    const root = $as();
    const seen = [];
    const r = await runFlow((as) => {
        as.state.shared = [];
        const p = as.parallel();
        for (const name of ['a', 'b', 'c']) {
            p.add((as) => {
                seen.push(as.state === root.state, as.state() === root.state);
                as.add(later((as) => {
                    as.state.shared.push(name);
                    as.success();
                }));
            });
        }
    }, root);
    assert.strictEqual(r.err, null);
    assert.deepStrictEqual(seen, [true, true, true, true, true, true]);
    assert.deepStrictEqual(root.state.shared.slice().sort(), ['a', 'b', 'c']);
});

test('a branch error cancels the other branches and fails the parallel step', T, async () => {
    const trace = [];
    let lateB = null;
    const r = await runFlow((as) => {
        as.parallel()
            .add((as) => {
                as.setCancel((as) => trace.push('a cancelled'));
                as.setTimeout(1000);
            })
            .add((as) => {
                as.waitExternal();
                lateB = as;
            })
            .add((as) => {
                as.add(later((as) => as.error('BranchFail', 'branch info'), 2));
                as.add((as) => trace.push('not run'));
            })
            .add((as) => {
                as.add((as) => {
                    as.setCancel((as) => trace.push('d cancelled'));
                });
            });
        as.add((as) => trace.push('next not run'));
    });
    assert.strictEqual(r.err, 'BranchFail');
    assert.strictEqual(r.info, 'branch info');
    assert.deepStrictEqual(trace.slice().sort(), ['a cancelled', 'd cancelled']);
    // the cancelled branch's interface is out of service
    assert.throws(() => lateB.success(), /out of service/);
});

test('the parallel error handler gets the branch error and can recover', T, async () => {
    const trace = [];
    const r = await runFlow((as) => {
        as.parallel((as, err) => {
            trace.push(`handler ${err} ${as.state.error_info}`);
            as.success('recovered');
        })
            .add(later((as) => as.error('P1', 'i1')))
            .add((as) => {
                as.setCancel((as) => trace.push('sibling cancelled'));
            });
        as.add((as, v) => {
            trace.push(v);
        });
    });
    assert.strictEqual(r.err, null, r.info);
    assert.deepStrictEqual(trace, ['sibling cancelled', 'handler P1 i1', 'recovered']);
});

test('the parallel error handler can replace the code', T, async () => {
    const r = await runFlow((as) => {
        as.parallel((as, err) => {
            as.error('Replaced', `was ${err}`);
        }).add(later((as) => as.error('Original')));
    });
    assert.strictEqual(r.err, 'Replaced');
    assert.strictEqual(r.info, 'was Original');
});

test('a branch error handler keeps the error inside its branch', T, async () => {
    const trace = [];
    const r = await runFlow((as) => {
        as.parallel((as, err) => trace.push('parallel handler'))
            .add(
                later((as) => as.error('Local')),
                (as, err) => {
                    trace.push(`branch handler ${err}`);
                    as.success();
                },
            )
            .add(later((as) => {
                trace.push('sibling done');
                as.success();
            }, 4));
    });
    assert.strictEqual(r.err, null, r.info);
    assert.deepStrictEqual(trace.sort(), ['branch handler Local', 'sibling done']);
});

test('a thrown exception in a later branch step is the branch error', T, async () => {
    const thrown = new Error('ThrownInBranch');
    const r = await runFlow((as) => {
        as.parallel().add((as) => {
            as.add(later((as) => as.success()));
            as.add((as) => {
                throw thrown;
            });
        });
    });
    assert.strictEqual(r.err, 'ThrownInBranch');
    assert.strictEqual(r.state.last_exception.message, 'ThrownInBranch');
});

test('an exception out of a branch\'s error handler leaves error_info as it was, for every handler further out', T,
    async () => {
        // as futoin-asyncsteps, where a thrown exception does not touch
        // error_info; here a sibling branch's step ran meanwhile
        const trace = [];
        const r = await runFlow((as) => {
            const p = as.parallel((as, err) => trace.push(`outer ${err} ${as.state.error_info}`));
            p.add((as) => {
                as.parallel((as, err) => trace.push(`inner ${err} ${as.state.error_info}`))
                    .add((as) => {
                        as.add(later((as) => as.success()));
                        as.add((as) => as.error('E3', 'info2'), (as, err) => {
                            trace.push(`branch ${err} ${as.state.error_info}`);
                            throw new Error('H8');
                        });
                    });
            });
            p.add((as) => {
                as.add(later((as) => as.success()));
                as.add((as) => as.waitExternal());
            });
        });
        assert.strictEqual(r.err, 'H8');
        assert.strictEqual(r.info, 'info2');
        assert.deepStrictEqual(trace, ['branch E3 info2', 'inner H8 info2', 'outer H8 info2']);
    });

test('a nested parallel\'s failure reaches the outer parallel before a sibling branch goes on', T, async () => {
    // as futoin-asyncsteps, where the error goes up inside the call that
    // raised it: the sibling is cancelled before its next step
    const trace = [];
    const r = await runFlow((as) => {
        const p = as.parallel();
        p.add((as) => {
            as.parallel((as, err) => trace.push(`inner ${err}`)).add((as) => {
                as.add(later((as) => as.success()));
                as.add((as) => as.error('E3'));
            });
        });
        p.add((as) => {
            as.setCancel((as) => trace.push('sibling cancelled'));
            as.add(later((as) => as.success()));
            as.add((as) => trace.push('sibling next'));
        });
    });
    assert.strictEqual(r.err, 'E3');
    assert.deepStrictEqual(trace, ['inner E3', 'sibling cancelled']);
});

test('cancel() of the flow cancels every branch', T, async () => {
    const trace = [];
    const root = $as();
    let started = 0;
    await new Promise((resolve) => {
        root.add((as) => {
            as.setCancel((as) => trace.push('parallel step cancelled'));
            as.parallel()
                .add((as) => {
                    as.setCancel((as) => trace.push('x cancelled'));
                    if (++started === 2) {
                        resolve();
                    }
                })
                .add((as) => {
                    as.setCancel((as) => trace.push('y cancelled'));
                    if (++started === 2) {
                        resolve();
                    }
                });
        });
        root.add((as) => trace.push('not run'));
        root.execute();
    });
    root.cancel();
    assert.deepStrictEqual(trace.filter((t) => t !== 'parallel step cancelled').sort(),
        ['x cancelled', 'y cancelled']);
    assert.ok(!trace.includes('not run'));
});

test('nested parallel steps', T, async () => {
    const done = [];
    const r = await runFlow((as) => {
        const p = as.parallel();
        for (const i of [1, 2]) {
            p.add((as) => {
                const q = as.parallel();
                for (const j of [1, 2]) {
                    q.add(later((as) => {
                        done.push(`${i}.${j}`);
                        as.success();
                    }));
                }
            });
        }
    });
    assert.strictEqual(r.err, null);
    assert.deepStrictEqual(done.sort(), ['1.1', '1.2', '2.1', '2.2']);
});

test('a branch may complete a waiting step of a sibling branch (no sanity error)', T, async () => {
    const trace = [];
    let waiter = null;
    const r = await runFlow((as) => {
        const p = as.parallel();
        p.add((as) => {
            waiter = as;
            as.waitExternal();
            trace.push('b1 waits');
        });
        p.add((as) => {
            as.add((as) => {
                trace.push('b2 completes b1');
                waiter.success();
            });
        });
    });
    assert.strictEqual(r.err, null, `${r.err}: ${r.info}`);
    assert.deepStrictEqual(trace, ['b1 waits', 'b2 completes b1']);
});

test('execute() runs the first burst of every branch at once, a nested parallel before later siblings', T, async () => {
    // as futoin-asyncsteps starts each branch inside the parallel step; the
    // step after the parallel waits for a later turn
    const trace = [];
    const done = new Promise((resolve) => {
        const root = $as();
        const p = root.parallel();
        p.add((as) => {
            trace.push('a');
            as.add((as) => trace.push('a.sub'));
        });
        p.add((as) => {
            trace.push('b');
            const q = as.parallel();
            q.add((as) => trace.push('b.p'));
            q.add((as) => trace.push('b.q'));
        });
        p.add((as) => trace.push('c'));
        root.add((as) => {
            trace.push('after');
            resolve();
        });
        root.execute();
        trace.push('execute returned');
        // inside a step of another flow, the same
        const outer = $as();
        outer.add((as) => {
            as.parallel().add((as) => trace.push('x')).add((as) => trace.push('y'));
            trace.push('outer step returned');
        });
        outer.execute();
        trace.push('outer execute returned');
    });
    await done;
    assert.deepStrictEqual(trace.slice(0, 11), [
        'a', 'a.sub', 'b', 'b.p', 'b.q', 'c', 'execute returned',
        'outer step returned', 'x', 'y', 'outer execute returned',
    ]);
    assert.ok(trace.includes('after'));
});

test('the branches of a parallel step run before the steps of other flows that wait for their turn', T, async () => {
    // as futoin-asyncsteps starts the branches inside the parallel step
    const trace = [];
    const mk = (name, par) => new Promise((resolve) => {
        const r = $as();
        r.add((as) => {
            as.waitExternal();
            setImmediate(() => as.success()); // the three go on in the same turn
        });
        r.add((as) => {
            trace.push(`${name}1`);
            if (par) {
                as.parallel()
                    .add((as) => trace.push(`${name}.b0`))
                    .add((as) => {
                        trace.push(`${name}.b1`);
                        as.add((as) => trace.push(`${name}.b1s`));
                    });
            }
        });
        r.add((as) => trace.push(`${name}2`));
        r.add((as) => resolve());
        r.execute();
    });
    await Promise.all([mk('A', true), mk('B', false), mk('C', true)]);
    assert.deepStrictEqual(trace, [
        'A1', 'A.b0', 'A.b1', 'A.b1s', 'B1', 'B2', 'C1', 'C.b0', 'C.b1', 'C.b1s', 'A2', 'C2',
    ]);
});

test('a branch failing in the first burst of a second root-level parallel', T, () => onTestTool((AT) => {
    // the other branch of that parallel waited for its turn when it was
    // torn down: futoin-polyglot then ran a freed strand (a crash)
    const seen = [];
    const r = $as();
    r.parallel().add((as) => {
        seen.push('a');
    });
    r.parallel()
        .add((as) => as.error('boom'))
        .add((as) => {
            seen.push('sibling');
        });
    r.add((as) => seen.push('never'));
    r.execute();
    AT.run();
    assert.strictEqual(r.state.last_exception.message, 'boom');
    // futoin-asyncsteps still runs the sibling's first step, started in the
    // same pass; here the failure tears the sibling down before its turn
    assert.deepStrictEqual(seen.filter((s) => s !== 'sibling'), ['a']);
}));

test('a root add() inside a branch\'s callback fails that branch (Top level add in execution), no internal warning', T,
    () => {
        const { spawnSync } = require('child_process');
        const { IMPL } = require('./helpers');
        const script = `
            const $as = require(${JSON.stringify(IMPL)});
            const log = [];
            const root = $as();
            const p = root.parallel((as, err) => log.push('parallel ' + err + ': ' + as.state.error_info));
            p.add((as) => {
                log.push('b1 waits');
                as.setCancel((as) => log.push('b1 cancelled'));
            });
            p.add((as) => {
                log.push('b2');
                root.add((as) => log.push('never'));
            });
            root.promise().then(() => log.push('resolved'), (e) => log.push('rejected ' + e.message))
                .then(() => console.log(log.join(', ')));
        `;
        const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 60000 });
        assert.strictEqual(r.stderr, '');
        assert.strictEqual(r.stdout.trim(), 'b1 waits, b2, b1 cancelled, ' +
            'parallel InternalError: Top level add in execution, rejected InternalError');
    });

test('a parallel inside a branch runs its branches before the later siblings, also on a later loop turn', T,
    async () => {
        // as futoin-asyncsteps, which runs each branch's first burst in turn
        for (const fromEvent of [false, true]) {
            const order = [];
            const root = $as();
            if (fromEvent) {
                root.add((as) => {
                    as.waitExternal();
                    setImmediate(() => as.success());
                });
            }
            const p = root.parallel();
            p.add((as) => {
                order.push('a');
                as.parallel().add((as) => order.push('a1')).add((as) => order.push('a2'));
            });
            p.add((as) => order.push('b'));
            root.add((as) => order.push('after'));
            await root.promise();
            assert.deepStrictEqual(order, ['a', 'a1', 'a2', 'b', 'after'], `from an event: ${fromEvent}`);
        }
    });

test('a branch resumed with a sibling in one loop turn starts its nested parallel before the sibling goes on', T,
    async () => {
        // futoin-asyncsteps continues each resumed branch in an event of its
        // own: the nested branch's first step runs before the sibling fails
        const order = [];
        const hop = (as) => {
            as.waitExternal();
            setImmediate(() => as.success()); // both in the same turn
        };
        const r = await runFlow((as) => {
            as.parallel((as, err) => order.push(`parallel EH ${err}`))
                .add((as) => {
                    as.add(hop);
                    as.add((as) => {
                        order.push('A');
                        as.parallel().add((as) => order.push('AA'));
                        as.add((as) => order.push('A after nested'));
                    });
                })
                .add((as) => {
                    as.add(hop);
                    as.add((as) => {
                        order.push('B throws');
                        throw new Error('TB');
                    });
                });
        });
        assert.strictEqual(r.err, 'TB');
        assert.deepStrictEqual(order, ['A', 'AA', 'B throws', 'parallel EH TB']);
    });

test('a failing parallel runs the same handlers in the same order behind many flows that wait for a turn', T, async () => {
    // the engine looks for the flow's own queued work among every flow's
    // (it searched the whole queue per step: flows started in one go took
    // time growing with their number)
    const run = (busy) => new Promise((resolve) => {
        for (let i = 0; i < busy; ++i) {
            const r = $as();
            for (let k = 0; k < 150; ++k) {
                r.add((as) => {}); // more than a burst: the rest waits for a turn
            }
            r.execute();
        }
        const log = [];
        $as().add((as) => {
            const p = as.parallel();
            p.add((as) => {
                log.push('b1');
                as.add((as) => {
                    log.push('b1.1');
                    as.waitExternal();
                    setImmediate(() => {
                        try {
                            as.error('E');
                        } catch (e) {
                            // error() throws from outside too
                        }
                    });
                });
            });
            p.add((as) => {
                log.push('b2');
                as.parallel().add((as) => log.push('b2.p1')).add((as) => log.push('b2.p2'));
            });
            p.add((as) => log.push('b3'));
        }, (as, err) => {
            log.push(`handled ${err}`);
            as.success();
        }).add((as) => resolve(log)).execute();
    });
    const quiet = await run(0);
    const busy = await run(30);
    assert.ok(quiet.includes('handled E'), quiet.join(' '));
    assert.deepStrictEqual(busy, quiet);
});

test('a branch failing by an error of C (DefenseRejected, Timeout): a waiting sibling\'s cancel handler sees that error in the state, as futoin-asyncsteps', T, () => onTestTool((AT) => {
    // found by a differential fuzzer: the sibling saw the state of an
    // earlier error, or none
    const seen = [];
    const st = (as) => `${as.state.error_info} ${as.state.last_exception && as.state.last_exception.message}`;
    const mutex = new $as.Mutex(1, 0);
    let holder;
    $as().sync(mutex, (as) => {
        holder = as;
        as.waitExternal();
    }).execute();
    AT.run();
    for (const how of ['queue', 'timeout']) {
        $as()
            .add((as) => as.error('Old', 'old info'), (as, err) => as.success())
            .add((as) => {
                as.parallel((as, err) => seen.push(`${how} parallel ${err} ${st(as)}`))
                    .add((as) => as.setCancel((as) => seen.push(`${how} sibling ${st(as)}`)))
                    .add((as) => {
                        if (how === 'queue') {
                            // from an event: futoin-asyncsteps hangs when it
                            // fails in the branch's first run
                            as.add((as) => {
                                as.waitExternal();
                                AT.callLater(() => as.success());
                            });
                            as.sync(mutex, (as) => seen.push('inside'));
                        } else {
                            as.setTimeout(5);
                        }
                    });
            })
            .execute();
        AT.run();
    }
    holder.success();
    AT.run();
    assert.deepStrictEqual(seen, [
        'queue sibling Mutex queue limit DefenseRejected',
        'queue parallel DefenseRejected Mutex queue limit DefenseRejected',
        'timeout sibling undefined Timeout',
        'timeout parallel Timeout undefined Timeout',
    ]);
}));

test('a branch refused by a full Mutex or Throttle queue: the parallel\'s error handler runs in that event, the steps it adds with a later one, as futoin-asyncsteps', T, () => onTestTool((AT) => {
    // found by a differential fuzzer: the added step ran in the handler's
    // event, ahead of an event queued before (as.error() in a branch did not)
    for (const kind of ['mutex', 'throttle', 'error']) {
        const out = [];
        let n = 0;
        const tick = () => AT.callImmediate(() => {
            out.push(`t${++n}`);
            if (n < 3) {
                tick();
            }
        });
        const sync = kind === 'throttle' ? new $as.Throttle(1, 100, 0) : new $as.Mutex(1, 0);
        let holder = null;
        $as().sync(sync, (as) => {
            if (kind !== 'throttle') {
                holder = as;
                as.waitExternal();
            }
        }).execute(); // holds the Mutex, or used up the Throttle's one pass
        $as().add((as) => {
            as.parallel().add((as) => {
                as.add((as) => {
                    as.waitExternal();
                    AT.callImmediate(() => as.success());
                });
                if (kind === 'error') {
                    as.add((as) => as.error('Plain'));
                } else {
                    as.sync(sync, (as) => out.push('inside'));
                }
            });
        }, (as, err) => {
            out.push(`EH ${err}`);
            as.add((as) => out.push('EH step'));
        }).execute();
        tick();
        AT.run();
        const code = kind === 'error' ? 'Plain' : 'DefenseRejected';
        assert.deepStrictEqual(out, ['t1', `EH ${code}`, 't2', 'EH step', 't3'], kind);
        if (holder !== null) {
            holder.success();
            AT.run();
        }
    }
}));

test('a branch\'s error crosses into the parallel as a new Error of its code: the siblings\' cancel handlers, the parallel\'s handler and the flow\'s end see it, as futoin-asyncsteps', T, async () => {
    // futoin-asyncsteps raises the branch's error on the parallel step with
    // error(code, info): inside the branch its own exception, outside a new Error
    class MyErr extends Error {}
    const seen = {};
    const r = $as();
    r.add((as) => {
        as.parallel((as, err) => {
            seen.par = as.state.last_exception;
            seen.parInfo = as.state.error_info;
        })
            .add((as) => as.setCancel((as) => {
                seen.sib = as.state.last_exception;
            }))
            .add((as) => {
                as.add((as) => {
                    as.waitExternal();
                    setImmediate(() => as.success());
                });
                as.add((as) => {
                    as.state.error_info = 'inf';
                    throw new MyErr('Boom');
                }, (as, err) => {
                    seen.branch = as.state.last_exception;
                });
            });
    });
    const end = await r.promise().then(() => null, (e) => e);
    assert.ok(end instanceof Error);
    assert.ok(seen.branch instanceof MyErr);
    for (const k of ['sib', 'par']) {
        assert.ok(seen[k] instanceof Error && !(seen[k] instanceof MyErr), k);
        assert.strictEqual(seen[k].message, 'Boom', k);
    }
    assert.strictEqual(seen.sib, seen.par);
    assert.strictEqual(r.state.last_exception, seen.par);
    assert.strictEqual(seen.parInfo, 'inf');
});

test('a branch\'s error crossing into the parallel keeps the error_info value the state has (an object stays that object)', T, async () => {
    const info = { why: 'object info' };
    const seen = {};
    const r = $as();
    r.add((as) => {
        as.parallel((as, err) => {
            seen.info = as.state.error_info;
            seen.le = as.state.last_exception;
            as.success();
        }).add((as) => {
            as.add((as) => {
                as.waitExternal();
                setImmediate(() => as.success());
            });
            as.add((as) => as.error('Code', info));
        });
    });
    await r.promise();
    assert.strictEqual(seen.info, info);
    assert.ok(seen.le instanceof Error);
    assert.strictEqual(seen.le.message, 'Code');
});

test('a branch\'s error that no handler takes ends the flow with a new Error of its code (promise())', T, async () => {
    class MyErr extends Error {}
    const r = $as();
    r.add((as) => {
        as.parallel().add((as) => {
            as.add((as) => {
                as.waitExternal();
                setImmediate(() => as.success());
            });
            as.add((as) => {
                throw new MyErr('Boom');
            });
        });
    });
    const end = await r.promise().then(() => null, (e) => e);
    assert.ok(end instanceof Error);
    const le = r.state.last_exception;
    assert.ok(le instanceof Error && !(le instanceof MyErr));
    assert.strictEqual(le.message, 'Boom');
});

test('a parallel\'s error handler gets a branch\'s error code as it is, also when it is not a string', T, async () => {
    const fromOutside = await runFlow((as) => {
        as.parallel().add((as) => {
            as.waitExternal();
            setTimeout(() => {
                try {
                    as.error(42);
                } catch (e) {
                    // error() from outside throws too
                }
            }, 1);
        });
    });
    assert.strictEqual(fromOutside.err, 42);
    const reason = { code: 1 };
    const rejected = await runFlow((as) => {
        as.parallel().add((as) => as.await(Promise.reject(reason)));
    });
    assert.strictEqual(rejected.err, reason);
});

test('an outer step\'s timeout cancels a parallel\'s branches: their cancel handlers see the Timeout in last_exception', T,
    async () => {
        const seen = [];
        const r = await runFlow((as) => {
            as.setTimeout(5);
            as.parallel()
                .add((as) => as.setCancel(() => seen.push(String(as.state.last_exception))))
                .add((as) => as.add((as) => as.setCancel(() => seen.push(String(as.state.last_exception)))));
        });
        assert.strictEqual(r.err, 'Timeout');
        assert.deepStrictEqual(seen, ['Error: Timeout', 'Error: Timeout']);
    });
