/* The shared trace sink and the runner-level failure note, used by the C
 * runner and by libftnconf. */
#include "conf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void conf_trace(conf_run* run, const char* text)
{
    if (run->ntrace < sizeof(run->trace) / sizeof(run->trace[0])) {
        run->trace[run->ntrace++] = strdup(text);
    } else {
        run->overflow = 1;
    }
}

void conf_fail(conf_run* run, const char* fmt, ...)
{
    if (run->error[0]) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(run->error, sizeof(run->error), fmt, ap);
    va_end(ap);
}
