/*
 * The C conformance runner. It drives any FTN12 provider through the binary
 * interface only: a provider gives roots, sync objects and a virtual-time
 * loop (FutoInConformanceProvider); everything else goes through the vtable.
 *
 * Languages plug in through conf_lang: for a step node of its language a
 * host builds a fragment (callbacks + data + destructor) that writes to the
 * one shared trace. The built-in "c" host interprets nodes as C fragments;
 * "c2" is a second in-process family proving the seam before Python and JS.
 */
#ifndef FTN_CONF_H
#define FTN_CONF_H

#include <futoin/binarysteps.h>

#include "json.h"

/* What a third-party implementation exports (see conformance/README.md). */
typedef struct FutoInConformanceProvider_
{
    const char* name;
    void* (*loop_new)(void);       /* a loop in virtual time */
    void (*loop_free)(void* loop);
    FutoInAsyncSteps* (*root_new)(void* loop); /* released with api->free */
    int (*run)(void* loop);        /* until nothing is scheduled */
    uint64_t (*now)(void* loop);   /* virtual milliseconds */
    /* optional (NULL: scenarios declaring such objects are not applicable) */
    FutoInSync* (*mutex_new)(void* loop, uint32_t max, uint32_t max_queue);
    FutoInSync* (*throttle_new)(void* loop, uint32_t max, uint32_t period_ms, uint32_t max_queue);
    FutoInSync* (*limiter_new)(void* loop, uint32_t concurrent, uint32_t max_queue, uint32_t rate,
                               uint32_t period_ms, uint32_t burst);
    void (*sync_free)(FutoInSync* sync);
} FutoInConformanceProvider;

typedef const FutoInConformanceProvider* (*futoin_conformance_provider_fn)(void);

struct conf_run;
struct conf_flow;

/* One step's worth of callbacks in some language. */
typedef struct conf_fragment
{
    FutoInAsyncSteps_execute_callback exec;
    FutoInAsyncSteps_error_callback on_error; /* NULL when the node has none */
    void (*loop)(FutoInAsyncSteps* bsi, void* data);
    void (*repeat)(FutoInAsyncSteps* bsi, void* data, size_t i);
    void* data;
    void (*destroy)(void* data);
} conf_fragment;

typedef struct conf_lang
{
    const char* tag;
    int (*make_fragment)(struct conf_lang* lang, struct conf_run* run, struct conf_flow* flow,
                         const jval* node, conf_fragment* out);
    void* host_data;
    long live_fragments; /* made minus destroyed: must be 0 after a scenario */
} conf_lang;

#define CONF_MAX_FLOWS 64
#define CONF_MAX_SYNCS 32

typedef struct conf_flow
{
    struct conf_run* run;
    char name[64];
    FutoInAsyncSteps* root;
    int finished;
    char outcome[512];
} conf_flow;

typedef struct conf_run
{
    const FutoInConformanceProvider* prov;
    void* loop;
    const jval* scenario;
    char* trace[1024];
    size_t ntrace;
    int overflow;
    conf_flow flows[CONF_MAX_FLOWS];
    size_t nflows;
    const char* sync_names[CONF_MAX_SYNCS];
    FutoInSync* syncs[CONF_MAX_SYNCS];
    size_t nsyncs;
    char error[256]; /* runner-level problem (bad scenario) */
} conf_run;

/* languages */
void conf_lang_register(conf_lang* lang);
conf_lang* conf_lang_find(const char* tag);
void conf_lang_register_c(void);

/* trace sink */
void conf_trace(conf_run* run, const char* text);
void conf_fail(conf_run* run, const char* fmt, ...);

/* values (values.c) */
int conf_value_from_json(const jval* j, FutoInBinaryValue* out, char* err, size_t errlen);
int conf_args_from_json(const jval* list, FutoInArgs* out, char* err, size_t errlen);
void conf_value_format(const FutoInBinaryValue* v, char* buf, size_t len);
void conf_args_format(const FutoInArgs* a, char* buf, size_t len);
/* bytes per element of an array value of scalar type `base` (C and Node runners) */
static inline size_t conf_scalar_size(uint8_t base)
{
    switch (base) {
    case FTN_TYPE_BOOL: return sizeof(bool);
    case FTN_TYPE_INT8:
    case FTN_TYPE_UINT8: return 1;
    case FTN_TYPE_INT16:
    case FTN_TYPE_UINT16: return 2;
    case FTN_TYPE_INT32:
    case FTN_TYPE_UINT32:
    case FTN_TYPE_FLOAT: return 4;
    default: return 8;
    }
}

/* scenario state variables hold a FutoInBinaryValue (interp.c) */
void* conf_state_alloc(void* data);
void conf_state_cleanup(void* data, void* value);

/* the structural part every C-family host shares (interp.c) */
void conf_add_node(conf_run* run, conf_flow* flow, FutoInAsyncSteps* bsi, const jval* node);
FutoInSync* conf_sync_find(conf_run* run, const char* name);
conf_flow* conf_flow_new(conf_run* run, const char* name, FutoInAsyncSteps* root);
void conf_flow_start(conf_flow* flow, const jval* steps);

#endif
