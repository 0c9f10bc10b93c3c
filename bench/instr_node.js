#!/usr/bin/env node
'use strict';

/**
 * @file Workloads for counting the addon's instructions per operation with
 * callgrind (bench/instr_node.sh), which counts the same on a noisy host
 * as on a quiet one: wall-clock ratios of the addon's own C code swing more
 * between runs than a change to it moves them.
 *
 *     node bench/instr_node.js WORKLOAD [OPS]
 *
 * WORKLOAD: `external` (1000 flows of 30 steps, each completed from outside
 * by a setImmediate() callback: OPS steps) or `execute` (a root with 2
 * steps, executed: OPS flows, one after another). Prints the number of
 * operations it ran.
 */

const path = require('path');
const L = require(path.resolve(__dirname, '..', 'node'));

const external = (ops) => new Promise((resolve) => {
    const flows = 1000;
    const per = 30;
    let rounds = Math.max(1, Math.round(ops / (flows * per)));
    const total = rounds * flows * per;
    const step = (as) => {
        as.waitExternal();
        setImmediate(() => as.success());
    };
    const round = () => {
        let left = flows;
        const fin = (as) => {
            if (--left === 0) {
                if (--rounds === 0) {
                    resolve(total);
                } else {
                    setImmediate(round);
                }
            }
        };
        for (let f = 0; f < flows; ++f) {
            const r = L();
            for (let i = 0; i < per; ++i) {
                r.add(step);
            }
            r.add(fin).execute();
        }
    };
    round();
});

const execute = (ops) => new Promise((resolve) => {
    let left = ops;
    let hop = 0;
    let next = null;
    const s1 = (as) => {
        as.success(1);
    };
    const s2 = (as, v) => {
        left -= v;
        next();
    };
    const start = () => {
        L().add(s1).add(s2).execute();
    };
    next = () => {
        if (left === 0) {
            resolve(ops);
        } else if (++hop === 16) {
            hop = 0; // nested execute() calls: the stack stays bounded
            queueMicrotask(start);
        } else {
            start();
        }
    };
    next();
});

const WORKLOADS = { external, execute };
const name = process.argv[2];
const ops = Number(process.argv[3] || 150000);
if (!WORKLOADS[name] || !(ops > 0)) {
    console.error(`usage: node bench/instr_node.js ${Object.keys(WORKLOADS).join('|')} [OPS]`);
    process.exit(2);
}
WORKLOADS[name](Math.floor(ops)).then((n) => console.log(n));
