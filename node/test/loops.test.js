'use strict';

// loop, repeat, forEach (Array, Map, object), break/continue with labels.

const test = require('node:test');
const assert = require('node:assert');
const { $as, runFlow, T } = require('./helpers');

test('loop() runs its body until as.break()', T, async () => {
    let i = 0;
    const r = await runFlow((as) => {
        as.loop((as) => {
            if (++i === 5) {
                as.break();
            }
        });
    });
    assert.strictEqual(r.err, null);
    assert.strictEqual(i, 5);
    assert.deepStrictEqual(r.args, []);
});

test('a handled break leaves last_exception null', T, async () => {
    const r = await runFlow((as) => {
        as.loop((as) => as.break());
    });
    assert.strictEqual(r.err, null);
    assert.strictEqual(r.state.last_exception, null);
});

test('break() and continue() through error handlers: they see Error(LoopBreak), the loop leaves last_exception null, as futoin-asyncsteps', T, async () => {
    const seen = [];
    const show = (e) => (e === null ? 'null' : `Error(${e.message})`);
    const r = await runFlow((as) => {
        as.repeat(3, (as, i) => {
            as.add((as) => {
                as.add((as) => {
                    if (i === 1) {
                        as.break();
                    }
                }, (as, err) => seen.push(`inner ${err} ${show(as.state.last_exception)}`));
            }, (as, err) => seen.push(`outer ${err} ${show(as.state.last_exception)}`));
        });
        as.add((as) => seen.push(`after break ${show(as.state.last_exception)}`));
        as.repeat(2, (as, i) => {
            as.add((as) => {
                if (i === 0) {
                    as.continue();
                }
            }, (as, err) => seen.push(`h ${err} ${show(as.state.last_exception)}`));
        });
        as.add((as) => seen.push(`after continue ${show(as.state.last_exception)}`));
    });
    assert.strictEqual(r.err, null);
    assert.deepStrictEqual(seen, [
        'inner LoopBreak Error(LoopBreak)', 'outer LoopBreak Error(LoopBreak)', 'after break null',
        'h LoopCont Error(LoopCont)', 'after continue null',
    ]);
});

test('a loop body with sub-steps and external events', T, async () => {
    const trace = [];
    let i = 0;
    const r = await runFlow((as) => {
        as.loop((as) => {
            const n = i++;
            as.add((as) => {
                as.waitExternal();
                setTimeout(() => as.success(n * 10), 1);
            });
            as.add((as, v) => {
                trace.push(v);
                if (n === 2) {
                    as.break();
                }
            });
        });
    });
    assert.strictEqual(r.err, null);
    assert.deepStrictEqual(trace, [0, 10, 20]);
});

test('repeat() calls the body count times with the iteration index', T, async () => {
    const seen = [];
    const r = await runFlow((as) => {
        as.repeat(4, (as, i) => {
            seen.push(i);
            as.success('ignored');
        });
    });
    assert.strictEqual(r.err, null);
    assert.deepStrictEqual(seen, [0, 1, 2, 3]);
    assert.deepStrictEqual(r.args, []);

    let ran = false;
    await runFlow((as) => {
        as.repeat(0, (as, i) => {
            ran = true;
        });
    });
    assert.strictEqual(ran, false);
});

test('repeat() on a root', T, async () => {
    const seen = [];
    const root = $as();
    root.repeat(3, (as, i) => seen.push(i));
    root.add((as) => as.success('after'));
    assert.strictEqual(await root.promise(), 'after');
    assert.deepStrictEqual(seen, [0, 1, 2]);
});

test('forEach() over an Array gives (index, value)', T, async () => {
    const seen = [];
    const obj = { o: 1 };
    await runFlow((as) => {
        as.forEach(['a', obj, null], (as, i, v) => seen.push([i, v]));
    });
    assert.deepStrictEqual(seen, [[0, 'a'], [1, obj], [2, null]]);
    assert.strictEqual(seen[1][1], obj);
});

test('forEach() over a Map gives (key, value) in insertion order', T, async () => {
    const seen = [];
    const k = { key: true };
    const m = new Map([['x', 1], [k, 'object key'], [3, [3]]]);
    const r = await runFlow((as) => {
        as.forEach(m, (as, key, v) => seen.push([key, v]));
    });
    assert.strictEqual(r.err, null);
    assert.deepStrictEqual(seen, [['x', 1], [k, 'object key'], [3, [3]]]);
    assert.strictEqual(seen[1][0], k);
});

test('forEach() over an object gives (key, value) of its own keys', T, async () => {
    const seen = [];
    const proto = { inherited: 1 };
    const obj = Object.create(proto);
    obj.a = 1;
    obj.b = 'two';
    await runFlow((as) => {
        as.forEach(obj, (as, key, v) => seen.push([key, v]));
    });
    assert.deepStrictEqual(seen, [['a', 1], ['b', 'two']]);
});

test('forEach() over empty collections runs nothing', T, async () => {
    let ran = 0;
    const root = $as();
    root.forEach([], (as, k, v) => ++ran);
    root.forEach(new Map(), (as, k, v) => ++ran);
    root.forEach({}, (as, k, v) => ++ran);
    await root.promise();
    assert.strictEqual(ran, 0);
});

test('continue() skips the rest of the iteration, sub-steps included', T, async () => {
    const trace = [];
    const r = await runFlow((as) => {
        as.repeat(4, (as, i) => {
            as.add((as) => {
                if (i % 2) {
                    as.continue();
                }
            });
            as.add((as) => trace.push(i));
        });
    });
    assert.strictEqual(r.err, null);
    assert.deepStrictEqual(trace, [0, 2]);
});

test('break() from a sub-step of the body ends the loop', T, async () => {
    const trace = [];
    const r = await runFlow((as) => {
        as.forEach([1, 2, 3, 4], (as, i, v) => {
            as.add((as) => {
                as.add((as) => {
                    if (v === 3) {
                        as.break();
                    }
                    trace.push(v);
                });
            });
        });
        as.add((as) => trace.push('after'));
    });
    assert.strictEqual(r.err, null);
    assert.deepStrictEqual(trace, [1, 2, 'after']);
});

test('nested loops: break() and continue() act on the innermost loop', T, async () => {
    const trace = [];
    const r = await runFlow((as) => {
        as.repeat(3, (as, i) => {
            as.repeat(3, (as, j) => {
                if (j === 1) {
                    as.continue();
                }
                if (j === 2) {
                    as.break();
                }
                trace.push(`${i}${j}`);
            });
            as.add((as) => trace.push(`end${i}`));
        });
    });
    assert.strictEqual(r.err, null);
    assert.deepStrictEqual(trace, ['00', 'end0', '10', 'end1', '20', 'end2']);
});

test('labels: break(label) and continue(label) act on the named outer loop', T, async () => {
    const trace = [];
    const r = await runFlow((as) => {
        as.repeat(3, (as, i) => {
            as.repeat(3, (as, j) => {
                as.loop((as) => {
                    if (i === 0 && j === 1) {
                        as.continue('MIDDLE');
                    }
                    if (i === 1 && j === 1) {
                        as.continue('OUTER');
                    }
                    if (i === 2 && j === 1) {
                        as.break('OUTER');
                    }
                    trace.push(`${i}${j}`);
                    as.break();
                }, 'INNER');
                as.add((as) => trace.push(`m${i}${j}`));
            }, 'MIDDLE');
            as.add((as) => trace.push(`o${i}`));
        }, 'OUTER');
        as.add((as) => trace.push('after'));
    });
    assert.strictEqual(r.err, null, r.info);
    assert.deepStrictEqual(trace, [
        '00', 'm00', /* continue MIDDLE */ '02', 'm02', 'o0',
        '10', 'm10', /* continue OUTER */
        '20', 'm20', /* break OUTER */
        'after',
    ]);
});

test('break(label) of the loop itself ends it', T, async () => {
    let n = 0;
    const r = await runFlow((as) => {
        as.loop((as) => {
            if (++n === 3) {
                as.break('SELF');
            }
        }, 'SELF');
    });
    assert.strictEqual(r.err, null);
    assert.strictEqual(n, 3);
});

test('break() with an unknown label leaves every loop as LoopBreak', T, async () => {
    let n = 0;
    const r = await runFlow((as) => {
        as.loop((as) => {
            as.loop((as) => {
                ++n;
                as.break('NOSUCH');
            }, 'A');
        }, 'B');
    });
    assert.strictEqual(n, 1);
    assert.strictEqual(r.err, 'LoopBreak');
});

test('break() outside any loop is the error LoopBreak; continue() is LoopCont', T, async () => {
    const r = await runFlow((as) => as.break());
    assert.strictEqual(r.err, 'LoopBreak');
    const r2 = await runFlow((as) => as.continue());
    assert.strictEqual(r2.err, 'LoopCont');
});

test('an error in a loop body leaves the loop to the outer handler', T, async () => {
    let n = 0;
    const r = await runFlow((as) => {
        as.loop((as) => {
            if (++n === 2) {
                as.error('InLoop', 'second iteration');
            }
        });
    });
    assert.strictEqual(n, 2);
    assert.strictEqual(r.err, 'InLoop');
    assert.strictEqual(r.info, 'second iteration');
});

test('an error handler inside the body can recover and the loop goes on', T, async () => {
    const trace = [];
    const r = await runFlow((as) => {
        as.repeat(3, (as, i) => {
            as.add(
                (as) => {
                    if (i === 1) {
                        as.error('Odd');
                    }
                    trace.push(i);
                },
                (as, err) => {
                    trace.push(err);
                    as.success();
                },
            );
        });
    });
    assert.strictEqual(r.err, null);
    assert.deepStrictEqual(trace, [0, 'Odd', 2]);
});

test('a long loop completes (no stack growth per iteration)', T, async () => {
    let n = 0;
    const r = await runFlow((as) => {
        as.repeat(20000, (as, i) => {
            n += i;
        });
    });
    assert.strictEqual(r.err, null);
    assert.strictEqual(n, (20000 * 19999) / 2);
});

test('iterations that only complete run in bursts: later ones still break, continue and fail as their own', T, async () => {
    // far into a burst of iterations that did nothing but complete, each
    // iteration is a step of its own: its own interface (the last one's is
    // out of service), continue() goes to the next, break() and errors act
    // at once, with the iteration's index
    const trace = [];
    let prev = null;
    let stale = 0;
    const r = await runFlow((as) => {
        as.repeat(200, (as, i) => {
            if (prev !== null) {
                try {
                    prev.add((as) => {});
                } catch (e) {
                    stale += e.message === 'InternalError: Unexpected call, object is out of service' ? 1 : 0;
                }
            }
            prev = as;
            if (i === 40 || i === 41) {
                trace.push(`cont ${i}`);
                as.continue();
            }
            if (i === 42) {
                trace.push(`at ${i}`);
                as.success(i, 'dropped'); // a body's values go nowhere
                return;
            }
            if (i === 150) {
                as.add((as) => trace.push('sub of 150'));
                return;
            }
            if (i === 170) {
                as.break();
            }
            if (i > 170) {
                trace.push(`after break ${i}`);
            }
        });
        as.loop((as) => {
            trace.push('loop');
            as.error('InLoop', 'from the loop');
        });
    });
    assert.deepStrictEqual(trace, ['cont 40', 'cont 41', 'at 42', 'sub of 150', 'loop']);
    assert.strictEqual(stale, 170);
    assert.strictEqual(r.err, 'InLoop');
    assert.strictEqual(r.info, 'from the loop');
});

test('a continue() from a later iteration goes on with the one after it, to the count', T, async () => {
    const seen = [];
    const r = await runFlow((as) => {
        as.repeat(130, (as, i) => {
            seen.push(i);
            if (i % 20 === 19) {
                as.continue();
            }
        });
    });
    assert.strictEqual(r.err, null);
    assert.deepStrictEqual(seen, Array.from({ length: 130 }, (_, i) => i));
});

// what futoin-asyncsteps accepts, accepted the same way

test('repeat() counts as `i < count` does: 2.5 runs 3 times, \'3\' 3 times, Infinity until break', T,
    async () => {
        for (const [count, want] of [[2.5, 3], ['3', 3], [-1, 0], [0.1, 1]]) {
            const seen = [];
            const r = await runFlow((as) => {
                as.repeat(count, (as, i) => {
                    seen.push(i);
                });
            });
            assert.strictEqual(r.err, null, r.info);
            assert.strictEqual(seen.length, want, `repeat(${JSON.stringify(count)})`);
        }
        const seen = [];
        const r = await runFlow((as) => {
            as.repeat(Infinity, (as, i) => {
                seen.push(i);
                if (i === 4) {
                    as.break();
                }
            });
        });
        assert.strictEqual(r.err, null, r.info);
        assert.deepStrictEqual(seen, [0, 1, 2, 3, 4]);
        // a count that is no number at all would never end there: refused here
        for (const bad of [NaN, 'three', undefined]) {
            assert.throws(() => $as().repeat(bad, (as) => {}), TypeError);
        }
    });

test('forEach() over any other value walks its own keys (a string by index, a number none)', T,
    async () => {
        const seen = [];
        const r = await runFlow((as) => {
            as.forEach('ab', (as, k, v) => {
                seen.push([k, v]);
            });
            as.forEach(5, (as, k, v) => {
                seen.push(['num', k]);
            });
        });
        assert.strictEqual(r.err, null, r.info);
        assert.deepStrictEqual(seen, [['0', 'a'], ['1', 'b']]);
        assert.throws(() => $as().forEach(null, (as) => {}), TypeError);
    });

test('loop labels of any type match by identity', T, async () => {
    const OBJ = {};
    const SYM = Symbol('s');
    for (const [label, target, wantOuter] of [[7, 7, 0], [OBJ, OBJ, 0], [7, '7', -1],
        // C keeps C strings: a NUL inside a label, or a string that looks
        // like the key of a label of another type, still tells them apart
        ['a\u0000outer', 'a\u0000inner', -1], ['a\u0000outer', 'a\u0000outer', 0], ['a', 'a\u0000', -1],
        [7, '\u001fn7', -1], [7, '\u001flabel#1', -1], [OBJ, '\u001flabel#1', -1], [OBJ, '\u001fo1', -1],
        ['\u001fs"x"', 'x', -1], ['\u001fs"x"', '\u001fs"x"', 0],
        [SYM, SYM, 0], [SYM, Symbol('s'), -1], [Symbol.for('f'), Symbol.for('f'), 0], [Symbol.iterator, Symbol.iterator, 0],
        [10n, 10n, 0], [10n, 10, -1], [true, true, 0], [true, 'true', -1], [1.5, 1.5, 0], [-7, -7, 0]]) {
        let outer = 0;
        const r = await runFlow((as) => {
            as.loop((as) => {
                if (outer++ === 1) {
                    as.break();
                }
                as.loop((as) => {
                    as.break(target);
                });
            }, label);
        });
        if (wantOuter === 0) {
            assert.strictEqual(r.err, null, r.info);
            assert.strictEqual(outer, 1); // the labelled outer loop ended at once
        } else {
            assert.strictEqual(r.err, 'LoopBreak'); // '7' is not 7: no loop takes it
        }
    }
});

test('a loop label of any type is not kept after its loop (unique labels do not pile up)', T, () => {
    const script = `
        const $as = require(${JSON.stringify(require('./helpers').IMPL)});
        const refs = [];
        for (const mk of [() => Symbol('label'), () => ({}), () => () => {}]) {
            const label = mk();
            refs.push(new WeakRef(label));
            $as().loop((as) => as.break(label), label).execute();
        }
        setImmediate(() => {
            for (let i = 0; i < 5; ++i) {
                $as().add((as) => {}).execute(); // the last ends are forgotten at a later call
            }
            global.gc();
            setImmediate(() => {
                global.gc();
                console.log(refs.map((r) => r.deref() === undefined).join(','));
            });
        });
    `;
    const res = require('child_process').spawnSync(process.execPath, ['--expose-gc', '-e', script], { encoding: 'utf8' });
    assert.strictEqual(res.status, 0, res.stderr);
    assert.strictEqual(res.stdout.trim(), 'true,true,true');
});

test('repeat() takes a BigInt, a boolean, null and the empty string as `i >= count` does', T, async () => {
    const counts = [];
    for (const count of [10n, true, null, '', ' 2 ']) {
        let n = 0;
        await new Promise((resolve) => {
            $as().repeat(count, (as) => {
                ++n;
            }).add((as) => resolve()).execute();
        });
        counts.push(n);
    }
    assert.deepStrictEqual(counts, [10, 1, 0, 0, 2]);
});

test('loop() in a step whose first value is a BigInt runs (it threw "Cannot mix BigInt", and the flow stalled)', T, async () => {
    const seen = [];
    await $as()
        .add((as) => as.success(10n))
        .add((as, v) => {
            let n = 0;
            as.loop((as) => {
                seen.push(n);
                if (n++ >= 2) {
                    as.break();
                }
            });
        })
        .add((as) => seen.push('done'))
        .promise();
    assert.deepStrictEqual(seen, [0, 1, 2, 'done']);
});

test('break() and continue() leave error_info unset, as error() without info does', T, async () => {
    for (const ctl of ['break', 'continue']) {
        let info = 'not seen';
        const r = $as();
        r.add((as) => as.error('E1', 'stale info'), (as, err) => as.success());
        r.repeat(2, (as, i) => {
            if (i === 0) {
                as[ctl]();
            }
        });
        r.add((as) => {
            info = as.state.error_info;
        });
        await r.promise();
        assert.strictEqual(info, undefined, ctl);
    }
});

test('repeat() of no iterations and forEach() of an empty list or object add no step, as in futoin-asyncsteps', T, async () => {
    // success() after them in the same step
    const r = await runFlow((as) => {
        as.repeat(0, (as) => {});
        as.repeat(-3, (as) => {});
        as.forEach([], (as) => {});
        as.forEach({}, (as) => {});
        as.success(5, 'x');
    });
    assert.strictEqual(r.err, null, r.info);
    assert.deepStrictEqual(r.args, [5, 'x']);
    // values pass them by to the next step, at root level and inside a step
    const seen = [];
    await new Promise((resolve) => {
        const root = $as();
        root.add((as) => as.success(1)).repeat(0, (as) => seen.push('body'));
        root.add((as, ...v) => {
            seen.push(v);
            as.success(2);
        }).forEach([], (as) => seen.push('body'));
        root.add((as, ...v) => {
            seen.push(v);
            as.add((as) => as.success(3));
            as.forEach({}, (as) => seen.push('body'));
            as.add((as, ...w) => seen.push(w));
        });
        root.add((as) => resolve()).execute();
    });
    assert.deepStrictEqual(seen, [[1], [2], [3]]);
    // a model copied by copyFrom() has nothing of them
    const model = $as().repeat(0, (as) => {}).forEach([], (as) => {});
    assert.strictEqual(model._queue.length, 0);
});

test('repeat() of a fractional count runs up to it, forEach() of a Map always adds its loop', T, async () => {
    const seen = [];
    const r = await runFlow((as) => {
        as.repeat(0.5, (as, i) => seen.push(`r${i}`));
        as.repeat('2', (as, i) => seen.push(`s${i}`));
        as.forEach(new Map(), (as, k, v) => seen.push('map'));
    });
    assert.strictEqual(r.err, null, r.info);
    assert.deepStrictEqual(seen, ['r0', 's0', 's1']);
});

test('break()/continue() from an error handler leaves no exception behind, also past a cancel handler of the body', T, async () => {
    // found by a differential fuzzer: the body's cancel handler brought
    // LoopBreak/LoopCont back into state.last_exception
    for (const ctl of ['break', 'continue']) {
        const seen = [];
        const le = (as) => {
            const e = as.state.last_exception;
            return e === null ? 'null' : e && e.message;
        };
        let i = 0;
        await runFlow((as) => {
            as.loop((as) => {
                if (i++ === 1) {
                    seen.push(`iteration 2: ${le(as)}`);
                    as.break();
                }
                as.setCancel(() => seen.push('cancel'));
                as.add((as) => {
                    as.error('Inside');
                }, (as, err) => {
                    seen.push(`eh ${err}`);
                    as[ctl]();
                });
            });
            as.add((as) => seen.push(`after: ${le(as)}`));
        });
        assert.deepStrictEqual(seen, ctl === 'break'
            ? ['eh Inside', 'cancel', 'after: null']
            : ['eh Inside', 'cancel', 'iteration 2: null', 'after: null'], ctl);
    }
});

test('break()/continue() on their way to the loop: the cancel handlers on the way see LoopBreak/LoopCont as last_exception, the loop leaves none behind, as futoin-asyncsteps', T, async () => {
    // found by a differential fuzzer: the cancel handlers saw null (no
    // label), or LoopBreak/LoopCont and the label were kept after the loop.
    // The label is error_info on the way (the binary interface's convention,
    // the reference leaves it unset)
    const le = (as) => {
        const e = as.state.last_exception;
        return e === null ? 'null' : e && e.message;
    };
    for (const ctl of ['break', 'continue']) {
        for (const label of [undefined, 'LBL']) {
            const seen = [];
            const r = $as();
            r.add((as) => as.error('Old', 'old info'), (as, err) => as.success());
            r.repeat(2, (as, i) => {
                as.setCancel((as) => seen.push(`outer ${i} ${le(as)} ${as.state.error_info}`));
                as.add((as) => {
                    as.setCancel((as) => seen.push(`inner ${i} ${le(as)} ${as.state.error_info}`));
                    as[ctl](label);
                });
            }, label);
            r.add((as) => seen.push(`after ${le(as)} ${as.state.error_info}`));
            await r.promise();
            const code = ctl === 'break' ? 'LoopBreak' : 'LoopCont';
            const iter = (i) => [`inner ${i} ${code} ${label}`, `outer ${i} ${code} ${label}`];
            assert.deepStrictEqual(seen, [
                ...iter(0), ...(ctl === 'break' ? [] : iter(1)), 'after null undefined',
            ], `${ctl} ${label}`);
        }
    }
});

test('break(label) that no loop takes: its cancel and error handlers see LoopBreak, and the label as error_info', T, async () => {
    const seen = [];
    const r = $as();
    r.add((as) => {
        as.repeat(1, (as) => {
            as.setCancel((as) => seen.push(`cancel ${as.state.last_exception.message} ${as.state.error_info}`));
            as.break('NOSUCH');
        }, 'A');
    }, (as, err) => {
        seen.push(`handler ${err} ${as.state.last_exception.message} ${as.state.error_info}`);
        as.success();
    });
    await r.promise();
    assert.deepStrictEqual(seen, ['cancel LoopBreak NOSUCH', 'handler LoopBreak LoopBreak NOSUCH']);
});

test('break(label)/continue(label) that no loop takes ends the flow with the Error it threw as last_exception, also past a cancel handler, as futoin-asyncsteps', T, async () => {
    // found by a differential fuzzer: a cancel handler on the way left null
    for (const [ctl, code] of [['break', 'LoopBreak'], ['continue', 'LoopCont']]) {
        for (const withCancel of [false, true]) {
            const r = $as();
            let thrown = null;
            r.add((as) => {
                as.loop((as) => {
                    if (withCancel) {
                        as.setCancel((as) => {});
                    }
                    try {
                        as[ctl]('NOSUCH');
                    } catch (e) {
                        thrown = e;
                        throw e;
                    }
                }, 'A');
            });
            const end = await r.promise().then(() => null, (e) => e);
            assert.ok(end instanceof Error, `${ctl} ${withCancel}`);
            assert.strictEqual(end.message, code);
            assert.ok(thrown instanceof Error);
            assert.strictEqual(r.state.last_exception, thrown, `${ctl} ${withCancel}`);
        }
    }
});

test('a loop ended by break() or continue() leaves state.async_stack set, as every error does in futoin-asyncsteps', T,
    async () => {
        for (const body of [
            (as) => as.break(),
            (as, i) => (i < 2 ? as.continue() : as.break()),
        ]) {
            const root = $as();
            const outer = (as) => as.repeat(3, body);
            root.add(outer);
            await root.promise();
            const stack = root.state.async_stack;
            if (process.env.NODE_ENV === 'production') {
                assert.strictEqual(stack.length, 0); // the empty stand-in
            } else {
                assert.ok(Array.isArray(stack));
                assert.ok(stack.includes(outer));
            }
        }
    });

test('repeat() with an object that converts to a number runs that many times, as futoin-asyncsteps', T, async () => {
    for (const count of [new Number(2), { valueOf: () => 2 }, [2]]) {
        let runs = 0;
        const r = await runFlow((as) => as.repeat(count, (as) => {
            runs++;
        }));
        assert.strictEqual(r.err, null);
        assert.strictEqual(runs, 2);
    }
});

test('a labelled break() or continue() that passed an error handler leaves no error_info after its loop', T, async () => {
    const infos = [];
    let n = 0;
    const r = await runFlow((as) => {
        as.loop((as) => {
            infos.push(as.state.error_info); // each iteration
            if (++n === 3) {
                as.add((as) => as.break('X'), (as, err) => {});
            } else {
                as.add((as) => as.continue('X'), (as, err) => {});
            }
        }, 'X');
        as.add((as) => infos.push(as.state.error_info)); // after the loop
    });
    assert.strictEqual(r.err, null);
    assert.deepStrictEqual(infos, [undefined, undefined, undefined, undefined]);
});
