'use strict';

/**
 * @file The FTN12 standard error codes, as futoin-asyncsteps/Errors
 * (class with enumerable, read-only static string properties).
 */

const error_list = [
    'ConnectError',
    'CommError',
    'UnknownInterface',
    'NotSupportedVersion',
    'NotImplemented',
    'Unauthorized',
    'InternalError',
    'InvokerError',
    'InvalidRequest',
    'DefenseRejected',
    'PleaseReauth',
    'SecurityError',
    'Timeout',
    'LoopBreak',
    'LoopCont',
];

class Errors {}

for (const v of error_list) {
    Object.defineProperty(Errors, v, { enumerable: true, value: v });
}

module.exports = Errors;
