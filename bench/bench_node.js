#!/usr/bin/env node
'use strict';

/**
 * @file futoin-polyglot (Node-API addon) benchmark against futoin-asyncsteps
 * 2.5 (the npm library it replaces) and against plain async/await.
 *
 * For each workload it prints ops/s of futoin-polyglot ("poly"), of
 * futoin-asyncsteps ("ref") and, where one makes sense, of the native
 * async/await equivalent, each the median of --runs runs after --warmup
 * discarded runs, and the ratios poly/ref and poly/native (on the timer
 * rows also the "floor", the same user work with no library, and floor/ref,
 * the best ratio any library could reach there); then a summary
 * table with the targets of the issue (poly/ref >= 1.0x everywhere, >= 3x on
 * parallel, >= 1.5x on error handling, error recovery and the setTimeout
 * path).
 *
 *     node bench/bench_node.js [RUNS] [--runs 5] [--rounds 1] [--warmup 2] [--scale 1]
 *                              [--only REGEX] [--json FILE] [--no-isolate]
 *                              [--production] [--poly DIR] [--ref DIR]
 *
 * Every workload is timed on completion: sequential flows are chained, the
 * last step of a flow starting the next one (or ending the run); concurrent
 * ones count completions (every 16th chained flow starts from a microtask,
 * so nested execute() calls cannot grow the stack without bound). Both libraries run the very same workload code (the
 * library is a parameter), and every run checks a checksum of the work done,
 * so both do identical observable work.
 *
 * By default every (workload, implementation) pair runs in its own fresh
 * `node --expose-gc` process (this script re-executed with --child), so the
 * JIT feedback and the heap one leaves behind cannot slow another down;
 * --no-isolate runs everything in this process, run by run interleaved.
 *
 * futoin-asyncsteps is taken from --ref DIR (a node_modules directory) when
 * given, else from node/node_modules (a devDependency of node/package.json),
 * else from /tmp/ref/node_modules. futoin-polyglot is node/ of this
 * repository (built with `node scripts/build.js`), or --poly DIR.
 */

const fs = require('fs');
const path = require('path');
const os = require('os');
const { spawnSync } = require('child_process');
const { performance } = require('perf_hooks');

const now = () => performance.now();
const REPO = path.resolve(__dirname, '..');
const POLY_DIR = path.join(REPO, 'node');
const REF_DIRS = [path.join(POLY_DIR, 'node_modules'), '/tmp/ref/node_modules'];

// --------------------------------------------------------------------------
// command line
// --------------------------------------------------------------------------

const USAGE = `usage: node bench/bench_node.js [RUNS] [options]
  --runs N        measured runs per workload and implementation (median; default 5)
  --rounds N      isolated mode: N child processes per workload and implementation,
                  the implementations taking turns, their runs pooled (default 1)
  --warmup N      discarded warm-up runs before them (default 2)
  --scale X       multiply the work per run (default 1; 0.1 for a quick look)
  --only REGEX    only workloads whose id or name matches
  --json FILE     also write the results to FILE
  --ref DIR       a node_modules directory holding futoin-asyncsteps
  --poly DIR      the futoin-polyglot package to measure (default: node/ of this repository)
  --no-isolate    run everything in this process (default: a child per workload and implementation)
  --production    run with NODE_ENV=production (both libraries skip their sanity checks)
  --list          list the workloads`;

const parseArgs = (argv) => {
    const a = { runs: 5, rounds: 1, warmup: 2, scale: 1, only: null, json: null, ref: null, isolate: true,
        production: false, list: false, child: null, impl: null, poly: null };
    const num = (i, name) => {
        const v = Number(argv[i]);
        if (argv[i] === undefined || !Number.isFinite(v) || v < 0) {
            die(`${name} expects a number`);
        }
        return v;
    };
    for (let i = 0; i < argv.length; ++i) {
        const o = argv[i];
        switch (o) {
        case '--runs': a.runs = Math.max(1, Math.floor(num(++i, o))); break;
        case '--rounds': a.rounds = Math.max(1, Math.floor(num(++i, o))); break;
        case '--warmup': a.warmup = Math.floor(num(++i, o)); break;
        case '--scale': a.scale = num(++i, o); break;
        case '--only': a.only = argv[++i]; break;
        case '--json': a.json = argv[++i]; break;
        case '--ref': a.ref = argv[++i]; break;
        case '--poly': a.poly = argv[++i]; break;
        case '--no-isolate': a.isolate = false; break;
        case '--production': a.production = true; break;
        case '--list': a.list = true; break;
        case '--child': a.child = argv[++i]; break;
        case '--impl': a.impl = argv[++i]; break;
        case '-h': case '--help': console.log(USAGE); process.exit(0); break;
        default:
            if (/^\d+$/.test(o)) {
                a.runs = Math.max(1, Number(o));
            } else {
                die(`unknown argument ${o}\n${USAGE}`);
            }
        }
    }
    if (a.json === undefined || a.only === undefined || a.ref === undefined || a.poly === undefined) {
        die(`an option lacks its value\n${USAGE}`);
    }
    return a;
};

function die(msg) {
    console.error(`bench_node: ${msg}`);
    process.exit(2);
}

// --------------------------------------------------------------------------
// the libraries
// --------------------------------------------------------------------------

const refDirs = (a) => (a.ref ? [path.resolve(a.ref)] : []).concat(REF_DIRS);

const findRef = (a) => {
    for (const dir of refDirs(a)) {
        const pkg = path.join(dir, 'futoin-asyncsteps', 'package.json');
        if (fs.existsSync(pkg)) {
            return { dir: path.dirname(pkg), version: JSON.parse(fs.readFileSync(pkg, 'utf8')).version };
        }
    }
    die(`futoin-asyncsteps not found; looked in:\n  ${refDirs(a).join('\n  ')}\n` +
        `install it with: (cd ${POLY_DIR} && npm install --no-save futoin-asyncsteps@~2.5.5)\n` +
        `or point --ref at a node_modules directory that holds it`);
    return null;
};

const checkPoly = (a) => {
    const dir = a.poly ? path.resolve(a.poly) : POLY_DIR;
    const addon = path.join(dir, 'build', 'futoin_polyglot.node');
    if (!fs.existsSync(addon)) {
        die(`the futoin-polyglot addon is not built (${addon} is missing);\n` +
            `build it with: cd ${dir} && node scripts/build.js`);
    }
    return { dir, version: require(path.join(dir, 'package.json')).version };
};

const loadLib = (a, impl) => {
    if (impl === 'poly') {
        return require(checkPoly(a).dir);
    }
    if (impl === 'ref') {
        return require(findRef(a).dir);
    }
    return null;
};

// --------------------------------------------------------------------------
// drivers: each resolves with the elapsed milliseconds, taken on completion
// --------------------------------------------------------------------------

/* `count` flows one after another: make(next) returns start(), which starts
 * one flow whose last callback must call next(). Every 16th flow is started
 * from a microtask, so libraries that run a nested execute() synchronously
 * cannot grow the stack without bound; the same for both libraries. */
const sequential = (count, make) => new Promise((resolve) => {
    let left = count;
    let hop = 0;
    let t0 = 0;
    let start = null;
    const next = () => {
        if (left-- === 0) {
            resolve(now() - t0);
        } else if (++hop === 16) {
            hop = 0;
            queueMicrotask(start);
        } else {
            start();
        }
    };
    start = make(next);
    t0 = now();
    next();
});

/* `count` flows at once: make(done) returns start(); each flow calls done()
 * when it completes */
const concurrent = (count, make) => new Promise((resolve) => {
    let left = count;
    let t0 = 0;
    const done = () => {
        if (--left === 0) {
            resolve(now() - t0);
        }
    };
    const start = make(done);
    t0 = now();
    for (let i = 0; i < count; ++i) {
        start();
    }
});

/* `count` flows started 1000 per loop turn (setImmediate), as a server
 * starts one per request: make(done) returns start(); each flow calls done()
 * when it completes */
const perTurn = (count, make) => new Promise((resolve) => {
    let left = count;
    let started = 0;
    let t0 = 0;
    const done = () => {
        if (--left === 0) {
            resolve(now() - t0);
        }
    };
    const start = make(done);
    const turn = () => {
        for (let i = 0; i < 1000 && started < count; ++i, ++started) {
            start();
        }
        if (started < count) {
            setImmediate(turn);
        }
    };
    t0 = now();
    turn();
});

/* a minimal promise mutex, the native counterpart of Mutex */
class NativeMutex {
    constructor() {
        this.locked = false;
        this.queue = [];
    }

    lock() {
        if (!this.locked) {
            this.locked = true;
            return Promise.resolve();
        }
        return new Promise((resolve) => this.queue.push(resolve));
    }

    unlock() {
        const next = this.queue.shift();
        if (next) {
            next();
        } else {
            this.locked = false;
        }
    }
}

const timer0 = () => new Promise((resolve) => setTimeout(resolve, 0));

/* a floor: the work the user's own code makes any library do, with no
 * library at all (plain callbacks, the next step called at once). No library
 * can beat it, so floor/ref is the highest poly/ref reachable there. Only
 * where that holds: the cost of an Error, say, depends on the stack depth a
 * library runs the step at. */

/* 2000 chains of `per` setTimeout(0) callbacks each */
const timerFloor = (ops) => async () => {
    let acc = 0;
    const per = Math.ceil(ops / 2000);
    const t0 = now();
    await new Promise((resolve) => {
        let left = 2000;
        const chain = () => {
            let i = 0;
            const step = () => {
                if (i++ === per) {
                    if (--left === 0) {
                        resolve();
                    }
                    return;
                }
                setTimeout(() => {
                    acc++;
                    step();
                }, 0);
            };
            step();
        };
        for (let f = 0; f < 2000; ++f) {
            chain();
        }
    });
    return [now() - t0, acc];
};

// --------------------------------------------------------------------------
// workloads
//
// lib(L, ops) -> async () => [ms, checksum]: L is the library module (L() a
// new root, L.Mutex...); native(ops) likewise, or null; expect(ops) the
// checksum every implementation must report.
// --------------------------------------------------------------------------

const K = 100; // steps per flow where a flow holds a batch of operations

const WORKLOADS = [
    {
        id: 'add', name: 'add step (1000 adds to a root)', unit: 'adds', ops: 1000000, target: 1.0,
        lib: (L, ops) => async () => {
            const per = 1000;
            const n = Math.ceil(ops / per);
            const roots = [];
            for (let r = 0; r < n; ++r) {
                roots.push(L());
            }
            const step = (as) => {};
            const t0 = now();
            for (let r = 0; r < n; ++r) {
                const root = roots[r];
                for (let i = 0; i < per; ++i) {
                    root.add(step);
                }
            }
            return [now() - t0, n * per];
        },
        native: null,
        expect: (ops) => Math.ceil(ops / 1000) * 1000,
    },
    {
        id: 'execute', name: 'simple execute (root, 2 steps, execute)', unit: 'flows', ops: 300000, target: 1.0,
        lib: (L, ops) => async () => {
            let acc = 0;
            const ms = await sequential(ops, (next) => {
                const s1 = (as) => {
                    as.success(1);
                };
                const s2 = (as, v) => {
                    acc += v;
                    next();
                };
                return () => {
                    L().add(s1).add(s2).execute();
                };
            });
            return [ms, acc];
        },
        native: (ops) => async () => {
            let acc = 0;
            const s1 = async () => 1;
            const s2 = async (v) => {
                acc += v;
            };
            const flow = async () => {
                await s2(await s1());
            };
            const t0 = now();
            for (let i = 0; i < ops; ++i) {
                await flow();
            }
            return [now() - t0, acc];
        },
        expect: (ops) => ops,
    },
    {
        id: 'inner-add', name: 'inner add (a step adds a sub-step) x100', unit: 'sub-steps', ops: 300000,
        target: 1.0,
        lib: (L, ops) => async () => {
            let acc = 0;
            const inner = (as) => {
                acc++;
            };
            const outer = (as) => {
                as.add(inner);
            };
            const ms = await sequential(Math.ceil(ops / K), (next) => {
                const fin = (as) => {
                    next();
                };
                return () => {
                    const r = L();
                    for (let i = 0; i < K; ++i) {
                        r.add(outer);
                    }
                    r.add(fin).execute();
                };
            });
            return [ms, acc];
        },
        native: (ops) => async () => {
            let acc = 0;
            const inner = async () => {
                acc++;
            };
            const outer = async () => {
                await inner();
            };
            const flow = async () => {
                for (let i = 0; i < K; ++i) {
                    await outer();
                }
            };
            const t0 = now();
            for (let f = Math.ceil(ops / K); f > 0; --f) {
                await flow();
            }
            return [now() - t0, acc];
        },
        expect: (ops) => Math.ceil(ops / K) * K,
    },
    {
        id: 'success-step', name: 'successStep(v+1) in a step x100', unit: 'steps', ops: 600000, target: 1.0,
        lib: (L, ops) => async () => {
            let acc = 0;
            const step = (as, v) => {
                as.successStep((v | 0) + 1);
            };
            const ms = await sequential(Math.ceil(ops / K), (next) => {
                const fin = (as, v) => {
                    acc += v;
                    next();
                };
                return () => {
                    const r = L();
                    for (let i = 0; i < K; ++i) {
                        r.add(step);
                    }
                    r.add(fin).execute();
                };
            });
            return [ms, acc];
        },
        native: (ops) => async () => {
            let acc = 0;
            const step = async (v) => (v | 0) + 1;
            const flow = async () => {
                let v;
                for (let i = 0; i < K; ++i) {
                    v = await step(v);
                }
                acc += v;
            };
            const t0 = now();
            for (let f = Math.ceil(ops / K); f > 0; --f) {
                await flow();
            }
            return [now() - t0, acc];
        },
        expect: (ops) => Math.ceil(ops / K) * K,
    },
    {
        id: 'parallel', name: 'parallel, 3 branches (flow per op)', unit: 'flows', ops: 30000, target: 3.0,
        lib: (L, ops) => async () => {
            let acc = 0;
            const branch = (as) => {
                acc++;
            };
            const ms = await sequential(ops, (next) => {
                const fin = (as) => {
                    next();
                };
                return () => {
                    const r = L();
                    r.parallel().add(branch).add(branch).add(branch);
                    r.add(fin).execute();
                };
            });
            return [ms, acc];
        },
        native: (ops) => async () => {
            let acc = 0;
            const branch = async () => {
                acc++;
            };
            const flow = async () => {
                await Promise.all([branch(), branch(), branch()]);
            };
            const t0 = now();
            for (let i = 0; i < ops; ++i) {
                await flow();
            }
            return [now() - t0, acc];
        },
        expect: (ops) => 3 * ops,
    },
    {
        id: 'error', name: 'error handling (as.error, onerror, flow ends)', unit: 'flows', ops: 40000,
        target: 1.5,
        lib: (L, ops) => async () => {
            let acc = 0;
            const fail = (as) => {
                as.error('MyError', 'info');
            };
            const ms = await sequential(ops, (next) => {
                const onerror = (as, err) => {
                    if (err === 'MyError' && as.state.error_info === 'info') {
                        acc++;
                    }
                    next();
                };
                return () => {
                    L().add(fail, onerror).execute();
                };
            });
            return [ms, acc];
        },
        native: (ops) => async () => {
            let acc = 0;
            const fail = async () => {
                throw new Error('MyError');
            };
            const t0 = now();
            for (let i = 0; i < ops; ++i) {
                try {
                    await fail();
                } catch (e) {
                    if (e.message === 'MyError') {
                        acc++;
                    }
                }
            }
            return [now() - t0, acc];
        },
        expect: (ops) => ops,
    },
    {
        id: 'recovery', name: 'error recovery (onerror success, go on) x100', unit: 'errors', ops: 60000,
        target: 1.5,
        lib: (L, ops) => async () => {
            let acc = 0;
            const fail = (as) => {
                as.error('MyError');
            };
            const recover = (as, err) => {
                as.success(err);
            };
            const after = (as, v) => {
                if (v === 'MyError') {
                    acc++;
                }
            };
            const ms = await sequential(Math.ceil(ops / K), (next) => {
                const fin = (as) => {
                    next();
                };
                return () => {
                    const r = L();
                    for (let i = 0; i < K; ++i) {
                        r.add(fail, recover).add(after);
                    }
                    r.add(fin).execute();
                };
            });
            return [ms, acc];
        },
        native: (ops) => async () => {
            let acc = 0;
            const fail = async () => {
                throw new Error('MyError');
            };
            const after = async (v) => {
                if (v === 'MyError') {
                    acc++;
                }
            };
            const flow = async () => {
                for (let i = 0; i < K; ++i) {
                    let v;
                    try {
                        await fail();
                    } catch (e) {
                        v = e.message;
                    }
                    await after(v);
                }
            };
            const t0 = now();
            for (let f = Math.ceil(ops / K); f > 0; --f) {
                await flow();
            }
            return [now() - t0, acc];
        },
        expect: (ops) => Math.ceil(ops / K) * K,
    },
    {
        id: 'repeat', name: 'repeat(1000)', unit: 'iterations', ops: 1000000, target: 1.0,
        lib: (L, ops) => async () => {
            let acc = 0;
            const body = (as, i) => {
                acc += i;
            };
            const ms = await sequential(Math.ceil(ops / 1000), (next) => {
                const fin = (as) => {
                    next();
                };
                return () => {
                    L().repeat(1000, body).add(fin).execute();
                };
            });
            return [ms, acc];
        },
        native: (ops) => async () => {
            let acc = 0;
            const body = async (i) => {
                acc += i;
            };
            const t0 = now();
            for (let f = Math.ceil(ops / 1000); f > 0; --f) {
                for (let i = 0; i < 1000; ++i) {
                    await body(i);
                }
            }
            return [now() - t0, acc];
        },
        expect: (ops) => Math.ceil(ops / 1000) * 499500,
    },
    {
        id: 'foreach', name: 'forEach over a 1000-element array', unit: 'iterations', ops: 1000000, target: 1.0,
        lib: (L, ops) => async () => {
            let acc = 0;
            const arr = Array.from({ length: 1000 }, (_, i) => i);
            const body = (as, k, v) => {
                acc += v;
            };
            const ms = await sequential(Math.ceil(ops / 1000), (next) => {
                const fin = (as) => {
                    next();
                };
                return () => {
                    L().forEach(arr, body).add(fin).execute();
                };
            });
            return [ms, acc];
        },
        native: (ops) => async () => {
            let acc = 0;
            const arr = Array.from({ length: 1000 }, (_, i) => i);
            const body = async (k, v) => {
                acc += v;
            };
            const t0 = now();
            for (let f = Math.ceil(ops / 1000); f > 0; --f) {
                for (let i = 0; i < arr.length; ++i) {
                    await body(i, arr[i]);
                }
            }
            return [now() - t0, acc];
        },
        expect: (ops) => Math.ceil(ops / 1000) * 499500,
    },
    {
        id: 'await', name: 'await(Promise.resolve(v+1)) in a step x100', unit: 'awaits', ops: 300000,
        target: 1.0,
        lib: (L, ops) => async () => {
            let acc = 0;
            const step = (as, v) => {
                as.await(Promise.resolve((v | 0) + 1));
            };
            const ms = await sequential(Math.ceil(ops / K), (next) => {
                const fin = (as, v) => {
                    acc += v;
                    next();
                };
                return () => {
                    const r = L();
                    for (let i = 0; i < K; ++i) {
                        r.add(step);
                    }
                    r.add(fin).execute();
                };
            });
            return [ms, acc];
        },
        native: (ops) => async () => {
            let acc = 0;
            const t0 = now();
            for (let f = Math.ceil(ops / K); f > 0; --f) {
                let v;
                for (let i = 0; i < K; ++i) {
                    v = await Promise.resolve((v | 0) + 1);
                }
                acc += v;
            }
            return [now() - t0, acc];
        },
        expect: (ops) => Math.ceil(ops / K) * K,
    },
    {
        id: 'mutex-free', name: 'Mutex, uncontended sync x1000', unit: 'syncs', ops: 300000, target: 1.0,
        lib: (L, ops) => async () => {
            let acc = 0;
            const mtx = new L.Mutex();
            const crit = (as) => {
                acc++;
            };
            const body = (as) => {
                as.sync(mtx, crit);
            };
            const ms = await sequential(Math.ceil(ops / 1000), (next) => {
                const fin = (as) => {
                    next();
                };
                return () => {
                    L().repeat(1000, body).add(fin).execute();
                };
            });
            return [ms, acc];
        },
        native: (ops) => async () => {
            let acc = 0;
            const mtx = new NativeMutex();
            const crit = async () => {
                acc++;
            };
            const t0 = now();
            for (let f = Math.ceil(ops / 1000); f > 0; --f) {
                for (let i = 0; i < 1000; ++i) {
                    await mtx.lock();
                    try {
                        await crit();
                    } finally {
                        mtx.unlock();
                    }
                }
            }
            return [now() - t0, acc];
        },
        expect: (ops) => Math.ceil(ops / 1000) * 1000,
    },
    {
        id: 'mutex-contended', name: 'Mutex, 4 flows contend, await in section', unit: 'syncs', ops: 60000,
        target: 1.0,
        lib: (L, ops) => async () => {
            let acc = 0;
            const per = Math.ceil(ops / 4);
            const mtx = new L.Mutex();
            let inside = 0;
            const crit = (as) => {
                if (inside++ !== 0) {
                    throw new Error('two flows inside the Mutex');
                }
                as.await(Promise.resolve());
                as.add((as) => {
                    inside--;
                    acc++;
                });
            };
            const body = (as) => {
                as.sync(mtx, crit);
            };
            const ms = await concurrent(4, (done) => {
                const fin = (as) => {
                    done();
                };
                return () => {
                    L().repeat(per, body).add(fin).execute();
                };
            });
            return [ms, acc];
        },
        native: (ops) => async () => {
            let acc = 0;
            const per = Math.ceil(ops / 4);
            const mtx = new NativeMutex();
            let inside = 0;
            const crit = async () => {
                if (inside++ !== 0) {
                    throw new Error('two flows inside the Mutex');
                }
                await Promise.resolve();
                inside--;
                acc++;
            };
            const flow = async () => {
                for (let i = 0; i < per; ++i) {
                    await mtx.lock();
                    try {
                        await crit();
                    } finally {
                        mtx.unlock();
                    }
                }
            };
            const t0 = now();
            await Promise.all([flow(), flow(), flow(), flow()]);
            return [now() - t0, acc];
        },
        expect: (ops) => Math.ceil(ops / 4) * 4,
    },
    {
        id: 'throttle', name: 'Throttle(1e9/s), never waits, sync x1000', unit: 'syncs', ops: 500000,
        target: 1.0,
        lib: (L, ops) => async () => {
            let acc = 0;
            const thr = new L.Throttle(1e9, 1000);
            const crit = (as) => {
                acc++;
            };
            const body = (as) => {
                as.sync(thr, crit);
            };
            const ms = await sequential(Math.ceil(ops / 1000), (next) => {
                const fin = (as) => {
                    next();
                };
                return () => {
                    L().repeat(1000, body).add(fin).execute();
                };
            });
            return [ms, acc];
        },
        native: null,
        expect: (ops) => Math.ceil(ops / 1000) * 1000,
    },
    {
        id: 'limiter', name: 'Limiter(high limits), never waits, x1000', unit: 'syncs', ops: 200000,
        target: 1.0,
        lib: (L, ops) => async () => {
            let acc = 0;
            const lim = new L.Limiter({ concurrent: 1e9, max_queue: 0, rate: 1e9, period_ms: 1000, burst: 0 });
            const crit = (as) => {
                acc++;
            };
            const body = (as) => {
                as.sync(lim, crit);
            };
            const ms = await sequential(Math.ceil(ops / 1000), (next) => {
                const fin = (as) => {
                    next();
                };
                return () => {
                    L().repeat(1000, body).add(fin).execute();
                };
            });
            return [ms, acc];
        },
        native: null,
        expect: (ops) => Math.ceil(ops / 1000) * 1000,
    },
    {
        id: 'timeout-ext', name: 'setTimeout(0) -> as.success(), 2000 flows x30', unit: 'steps', ops: 60000,
        target: 1.5,
        lib: (L, ops) => async () => {
            let acc = 0;
            const step = (as) => {
                as.waitExternal();
                setTimeout(() => {
                    acc++;
                    as.success();
                }, 0);
            };
            const ms = await concurrent(2000, (done) => {
                const per = Math.ceil(ops / 2000);
                const fin = (as) => {
                    done();
                };
                return () => {
                    const r = L();
                    for (let i = 0; i < per; ++i) {
                        r.add(step);
                    }
                    r.add(fin).execute();
                };
            });
            return [ms, acc];
        },
        native: (ops) => async () => {
            let acc = 0;
            const per = Math.ceil(ops / 2000);
            const flow = async () => {
                for (let i = 0; i < per; ++i) {
                    await timer0();
                    acc++;
                }
            };
            const t0 = now();
            const all = [];
            for (let i = 0; i < 2000; ++i) {
                all.push(flow());
            }
            await Promise.all(all);
            return [now() - t0, acc];
        },
        floor: timerFloor,
        expect: (ops) => Math.ceil(ops / 2000) * 2000,
    },
    {
        id: 'timeout-guard', name: 'as.setTimeout(1s) guard + setTimeout(0) success', unit: 'steps',
        ops: 60000, target: 1.5,
        lib: (L, ops) => async () => {
            let acc = 0;
            const step = (as) => {
                as.setTimeout(1000);
                setTimeout(() => {
                    acc++;
                    as.success();
                }, 0);
            };
            const ms = await concurrent(2000, (done) => {
                const per = Math.ceil(ops / 2000);
                const fin = (as) => {
                    done();
                };
                return () => {
                    const r = L();
                    for (let i = 0; i < per; ++i) {
                        r.add(step);
                    }
                    r.add(fin).execute();
                };
            });
            return [ms, acc];
        },
        native: null, // same as the row above: a guard timer has no async/await counterpart
        floor: timerFloor,
        expect: (ops) => Math.ceil(ops / 2000) * 2000,
    },
];

/* not among the issue's workloads: flows started from the event loop, as a
 * server starts one per request (the "simple execute" row chains each flow
 * from the last step of the one before), and many flows waiting at once (a
 * server holding a flow per open request), then all cancelled */
const EXTRA = [
    {
        id: 'execute-loop', name: 'simple execute, 1000 flows started per loop turn', unit: 'flows',
        ops: 300000, target: 1.0, extra: true,
        lib: (L, ops) => async () => {
            let acc = 0;
            const ms = await perTurn(ops, (done) => {
                const s1 = (as) => {
                    as.success(1);
                };
                const s2 = (as, v) => {
                    acc += v;
                    done();
                };
                return () => {
                    L().add(s1).add(s2).execute();
                };
            });
            return [ms, acc];
        },
        native: (ops) => async () => {
            let acc = 0;
            const ms = await perTurn(ops, (done) => {
                const s1 = async () => 1;
                const s2 = async (v) => {
                    acc += v;
                };
                return async () => {
                    await s2(await s1());
                    done();
                };
            });
            return [ms, acc];
        },
        expect: (ops) => ops,
    },
    {
        id: 'waiting', name: '100k flows wait at once, then cancel()', unit: 'flows', ops: 100000,
        target: 1.0, extra: true,
        lib: (L, ops) => async () => {
            let acc = 0;
            const roots = new Array(ops);
            const onCancel = (as) => {
                acc++;
            };
            const step = (as) => {
                as.setCancel(onCancel);
            };
            const t0 = now();
            for (let i = 0; i < ops; ++i) {
                const r = L();
                r.add(step);
                r.execute();
                roots[i] = r;
            }
            for (let i = 0; i < ops; ++i) {
                roots[i].cancel();
            }
            return [now() - t0, acc];
        },
        native: null,
        expect: (ops) => ops,
    },
];

for (const steps of [2, 11, 101]) {
    WORKLOADS.push({
        id: `flow-${steps}`, name: `whole flow of ${steps} steps`, unit: 'flows',
        ops: Math.round(2000000 / (steps + 5)), target: 1.0,
        lib: (L, ops) => async () => {
            let acc = 0;
            const step = (as) => {
                acc++;
            };
            const ms = await sequential(ops, (next) => {
                const fin = (as) => {
                    acc++;
                    next();
                };
                return () => {
                    const r = L();
                    for (let i = 1; i < steps; ++i) {
                        r.add(step);
                    }
                    r.add(fin).execute();
                };
            });
            return [ms, acc];
        },
        native: (ops) => async () => {
            let acc = 0;
            const step = async () => {
                acc++;
            };
            const flow = async () => {
                for (let i = 0; i < steps; ++i) {
                    await step();
                }
            };
            const t0 = now();
            for (let i = 0; i < ops; ++i) {
                await flow();
            }
            return [now() - t0, acc];
        },
        expect: (ops) => ops * steps,
    });
}
WORKLOADS.push(...EXTRA);

const IMPLS = ['poly', 'ref', 'native', 'floor'];
const OPTIONAL = ['native', 'floor']; // workloads may have none

const selected = (a) => {
    const re = a.only ? new RegExp(a.only, 'i') : null;
    return WORKLOADS.filter((w) => !re || re.test(w.id) || re.test(w.name));
};

// --------------------------------------------------------------------------
// measuring
// --------------------------------------------------------------------------

const median = (xs) => {
    const s = [...xs].sort((x, y) => x - y);
    const m = s.length >> 1;
    return s.length & 1 ? s[m] : (s[m - 1] + s[m]) / 2;
};

const gc = () => {
    if (typeof global.gc === 'function') {
        global.gc();
    }
};

/* a runner for one (workload, implementation), or null without a native one or a floor */
const runnerOf = (a, w, impl, L) => {
    const ops = Math.max(1, Math.round(w.ops * a.scale));
    if (OPTIONAL.includes(impl)) {
        return w[impl] ? { ops, fn: w[impl](ops) } : null;
    }
    return { ops, fn: w.lib(L, ops) };
};

/* one run: ops/s, after checking the work done */
const runOnce = async (w, impl, r) => {
    gc();
    const [ms, check] = await r.fn();
    const want = w.expect(r.ops);
    if (check !== want) {
        throw new Error(`${w.id}/${impl}: checksum ${check}, expected ${want}: not the same work`);
    }
    return r.ops / (ms / 1000);
};

const summarize = (samples) => samples.length ? {
    median: median(samples), min: Math.min(...samples), max: Math.max(...samples), samples,
} : null;

/* --child: one workload with one implementation, JSON on the last line */
const runChild = async (a) => {
    const w = WORKLOADS.find((x) => x.id === a.child);
    if (!w || !IMPLS.includes(a.impl)) {
        die(`--child ${a.child} --impl ${a.impl}: no such workload or implementation`);
    }
    const L = loadLib(a, a.impl);
    const r = runnerOf(a, w, a.impl, L);
    process.on('exit', (code) => {
        if (code === 0) {
            // reached only when the loop emptied with a run still waiting
            console.error(`${w.id}/${a.impl}: a flow never completed (the event loop emptied)`);
            process.exitCode = 3;
        }
    });
    const samples = [];
    for (let i = 0; i < a.warmup; ++i) {
        await runOnce(w, a.impl, r);
    }
    for (let i = 0; i < a.runs; ++i) {
        samples.push(await runOnce(w, a.impl, r));
    }
    process.stdout.write(`${JSON.stringify({ ops: r.ops, samples })}\n`);
    // a Throttle or Limiter of futoin-asyncsteps may leave an interval timer
    process.removeAllListeners('exit');
    process.exit(0);
};

const childArgs = (a, w, impl) => {
    const args = ['--expose-gc', __filename, '--child', w.id, '--impl', impl, '--runs', String(a.runs),
        '--warmup', String(a.warmup), '--scale', String(a.scale)];
    if (a.ref) {
        args.push('--ref', a.ref);
    }
    if (a.poly) {
        args.push('--poly', a.poly);
    }
    return args;
};

/* --rounds: the implementations take turns, so a machine that slows down
 * for a while slows them alike */
const measureIsolated = (a, w) => {
    const res = { ops: 0 };
    const pooled = {};
    for (let round = 0; round < a.rounds; ++round) {
        for (const impl of IMPLS) {
            if (OPTIONAL.includes(impl) && !w[impl]) {
                continue;
            }
            const out = spawnSync(process.execPath, childArgs(a, w, impl), {
                encoding: 'utf8', env: process.env, maxBuffer: 1 << 24,
            });
            if (out.status !== 0) {
                throw new Error(`${w.id}/${impl} failed (status ${out.status}):\n${out.stderr}${out.stdout}`);
            }
            const lines = out.stdout.trim().split('\n');
            const got = JSON.parse(lines[lines.length - 1]);
            res.ops = got.ops;
            pooled[impl] = (pooled[impl] || []).concat(got.samples);
        }
    }
    for (const impl of IMPLS) {
        res[impl] = pooled[impl] ? summarize(pooled[impl]) : null;
    }
    return res;
};

/* --no-isolate: all in this process, implementations interleaved run by run */
const measureInProcess = async (a, w, libs) => {
    const runners = {};
    for (const impl of IMPLS) {
        runners[impl] = runnerOf(a, w, impl, libs[impl]);
    }
    const samples = { poly: [], ref: [], native: [], floor: [] };
    for (let i = 0; i < a.warmup + a.runs; ++i) {
        for (const impl of IMPLS) {
            if (runners[impl]) {
                const v = await runOnce(w, impl, runners[impl]);
                if (i >= a.warmup) {
                    samples[impl].push(v);
                }
            }
        }
    }
    return { ops: runners.poly.ops, poly: summarize(samples.poly), ref: summarize(samples.ref),
        native: summarize(samples.native), floor: summarize(samples.floor) };
};

// --------------------------------------------------------------------------
// output
// --------------------------------------------------------------------------

const fmtOps = (x) => {
    if (x === null || x === undefined) {
        return '-';
    }
    if (x >= 1e6) {
        return `${(x / 1e6).toFixed(2)}M`;
    }
    if (x >= 1e3) {
        return `${(x / 1e3).toFixed(1)}k`;
    }
    return x.toFixed(0);
};

const fmtRatio = (x) => (x === null ? '-' : `${x.toFixed(2)}x`);
const spread = (s) => (s ? (s.max - s.min) / s.median : 0);
const pad = (s, n) => String(s).padEnd(n);
const lpad = (s, n) => String(s).padStart(n);

const resultRow = (w, m) => {
    const ratioRef = m.poly.median / m.ref.median;
    const ratioNative = m.native ? m.poly.median / m.native.median : null;
    const floor = m.floor || null;
    return {
        id: w.id, name: w.name, unit: w.unit, ops_per_run: m.ops,
        poly: m.poly, ref: m.ref, native: m.native, floor,
        ratio_ref: ratioRef, ratio_native: ratioNative,
        floor_ref: floor ? floor.median / m.ref.median : null,
        target: w.target, met: ratioRef >= w.target, extra: !!w.extra,
    };
};

const printRow = (r) => {
    const sp = Math.max(spread(r.poly), spread(r.ref), spread(r.native));
    console.log(`  ${pad(r.id, 16)} poly ${lpad(fmtOps(r.poly.median), 8)}  ref ${lpad(fmtOps(r.ref.median), 8)}` +
        `  native ${lpad(fmtOps(r.native && r.native.median), 8)}  poly/ref ${lpad(fmtRatio(r.ratio_ref), 7)}` +
        `  poly/native ${lpad(fmtRatio(r.ratio_native), 7)}  spread ${lpad((sp * 100).toFixed(0), 3)}%` +
        (r.floor ? `  floor ${fmtOps(r.floor.median)} = ${fmtRatio(r.floor_ref)} ref` : ''));
};

const printSummary = (rows, a, meta) => {
    console.log();
    const rounds = a.isolate && a.rounds > 1;
    console.log(`summary: ops/s, median of ${rounds ? `${a.rounds} x ` : ''}${a.runs} runs (after ${a.warmup} warm-up), ` +
        `${a.isolate ? `one process per workload and implementation${rounds ? ' and round' : ''}` : 'one process'}, ` +
        `NODE_ENV=${meta.node_env || '(unset)'}`);
    const hdr = `${pad('workload', 46)} ${lpad('unit', 10)} ${lpad('polyglot', 9)} ${lpad('asyncsteps', 10)}` +
        ` ${lpad('poly/ref', 8)} ${lpad('native', 9)} ${lpad('poly/nat', 8)} ${lpad('floor/ref', 9)}` +
        ` ${lpad('target', 7)}  met`;
    console.log(hdr);
    console.log('-'.repeat(hdr.length));
    let met = 0;
    let extra = 0;
    for (const r of rows) {
        if (r.extra) {
            ++extra;
        } else {
            met += r.met ? 1 : 0;
        }
        console.log(`${pad(r.name, 46)} ${lpad(r.unit, 10)} ${lpad(fmtOps(r.poly.median), 9)}` +
            ` ${lpad(fmtOps(r.ref.median), 10)} ${lpad(fmtRatio(r.ratio_ref), 8)}` +
            ` ${lpad(fmtOps(r.native && r.native.median), 9)} ${lpad(fmtRatio(r.ratio_native), 8)}` +
            ` ${lpad(fmtRatio(r.floor_ref), 9)} ${lpad(`>=${r.target}x`, 7)}  ${r.met ? 'yes' : 'NO'}`);
    }
    console.log('-'.repeat(hdr.length));
    console.log(`targets met: ${met}/${rows.length - extra} (target is on poly/ref; native is informative)` +
        (extra ? `; ${extra} more row(s) not among the issue's workloads, not counted` : ''));
    if (rows.some((r) => r.floor)) {
        console.log('floor/ref: the same user work with no library at all (plain callbacks, each step called');
        console.log('at once) over futoin-asyncsteps: the highest poly/ref any library could reach there');
    }
};

// --------------------------------------------------------------------------
// main
// --------------------------------------------------------------------------

const main = async () => {
    const a = parseArgs(process.argv.slice(2));
    if (a.production) {
        process.env.NODE_ENV = 'production';
    }
    if (a.list) {
        for (const w of WORKLOADS) {
            console.log(`${pad(w.id, 16)} ${w.name}`);
        }
        return;
    }
    if (a.child) {
        await runChild(a);
        return;
    }
    const poly = checkPoly(a);
    const ref = findRef(a);
    const meta = {
        date: new Date().toISOString(), node: process.version, platform: `${os.platform()} ${os.arch()}`,
        cpu: (os.cpus()[0] || {}).model, cpus: os.cpus().length, node_env: process.env.NODE_ENV || null,
        polyglot: { dir: poly.dir, version: poly.version }, asyncsteps: { dir: ref.dir, version: ref.version },
        runs: a.runs, rounds: a.isolate ? a.rounds : 1, warmup: a.warmup, scale: a.scale, isolate: a.isolate,
    };
    console.log(`futoin-polyglot ${poly.version} (${poly.dir}) vs futoin-asyncsteps ${ref.version} (${ref.dir})`);
    console.log(`node ${process.version}, ${meta.cpu} x${meta.cpus}, runs ${a.runs}${a.isolate && a.rounds > 1 ? ` x ${a.rounds} rounds` : ''}, warm-up ${a.warmup}, ` +
        `scale ${a.scale}, NODE_ENV=${meta.node_env || '(unset)'}`);
    console.log();

    const libs = a.isolate ? null : { poly: loadLib(a, 'poly'), ref: loadLib(a, 'ref'), native: null, floor: null };
    if (!a.isolate && typeof global.gc !== 'function') {
        console.log('(run node with --expose-gc for a collection before every run)');
    }
    const rows = [];
    for (const w of selected(a)) {
        const m = a.isolate ? measureIsolated(a, w) : await measureInProcess(a, w, libs);
        const r = resultRow(w, m);
        rows.push(r);
        printRow(r);
    }
    if (!rows.length) {
        die(`no workload matches --only ${a.only}`);
    }
    printSummary(rows, a, meta);
    if (a.json) {
        fs.writeFileSync(a.json, `${JSON.stringify({ meta, results: rows }, null, 2)}\n`);
        console.log(`results written to ${a.json}`);
    }
    if (!a.isolate) {
        process.exit(0); // interval timers of futoin-asyncsteps' Throttle
    }
};

main().catch((e) => {
    console.error(e && e.stack || e);
    process.exit(1);
});
