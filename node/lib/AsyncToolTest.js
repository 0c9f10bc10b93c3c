'use strict';

/**
 * @file AsyncToolTest: events run only when the test asks for them. Flows
 * created while it is installed (installAsyncToolTest()) and the events of
 * callLater()/callImmediate() share one C scheduler in virtual time, so
 * nextEvent() and run() step through both in deadline order without waiting.
 */

const N = require('./binding');

const events = new Map();
let next_key = 1;

exports = module.exports = {};

/**
 * Schedule `func` after `timeout_ms` of virtual time.
 * @param {Function} func - callback
 * @param {number} [timeout_ms=0] - delay
 * @returns {object} handle for cancelCall()
 */
exports.callLater = function(func, timeout_ms = 0) {
    if (typeof func !== 'function') {
        throw new TypeError('callLater() expects a function');
    }
    const key = next_key++;
    // its keys are futoin-asyncsteps' (f, t): ours are not enumerable
    const e = Object.defineProperties({ f: func, t: N.testNow() + (timeout_ms || 0) }, {
        _key: { value: key },
        _h: { value: null, writable: true },
    });
    events.set(key, e);
    e._h = N.testLater(key, timeout_ms || 0);
    return e;
};

exports.cancelCall = function(handle) {
    if (handle && events.get(handle._key) === handle) {
        events.delete(handle._key);
        N.testCancel(handle._h);
    }
};

/** Run the next event (a flow's turn, a timeout or a callLater() callback). */
let thrown = null;

exports.nextEvent = function() {
    if (!N.testHas()) {
        // as futoin-asyncsteps, whose queue's shift() gives undefined there
        throw new TypeError('AsyncToolTest.nextEvent(): no event is queued');
    }
    // 1: an event ran, 2: steps for JS to run; throws inside a cancel handler the test tool runs
    const r = N.testNext();
    const reg = require('./registry');
    if (reg.drainHost(true) < 0 && r === 2) {
        // inside a step's callback that an event runs: its steps are that event's
        throw new Error('InternalError: AsyncToolTest.nextEvent() or run() inside a step an event runs: ' +
            'the steps after it run once it returns');
    }
    if (reg.afterEvent.length !== 0) {
        reg.runAfterEvent();
    }
    if (thrown) {
        const e = thrown.e;
        thrown = null;
        throw e; /* the event's own exception, as the JS library lets it out */
    }
};

exports.hasEvents = function() {
    return N.testHas();
};

/**
 * Pending callLater()/callImmediate() events in deadline order (equal
 * deadlines as scheduled), as futoin-asyncsteps keeps its queue, plus one
 * entry standing for pending flow work when there is no such event.
 * @returns {Array} events
 */
exports.getEvents = function() {
    // sort() is stable: the Map keeps scheduling order
    const list = Array.from(events.values()).sort((a, b) => a.t - b.t);
    if (N.testHas() && !list.length) {
        list.push({ f: null, t: N.testNow() });
    }
    return list;
};

/** Drop every pending event; running test flows are cancelled. */
exports.resetEvents = function() {
    for (const e of events.values()) {
        N.testCancel(e._h);
    }
    events.clear();
    N.testReset();
};

exports.run = function() {
    while (this.hasEvents()) {
        this.nextEvent();
    }
};

// aliases, last as in futoin-asyncsteps
exports.callImmediate = exports.callLater;
exports.cancelImmediate = exports.cancelCall;

/* called from C when a callLater() event is due (not enumerable: the keys
 * are futoin-asyncsteps' ones) */
const fire = (key) => {
    const e = events.get(key);
    if (e) {
        events.delete(key);
        try {
            e.f();
        } catch (err) {
            thrown = thrown || { e: err };
        }
    }
};
Object.defineProperty(exports, '_fire', { value: fire });
