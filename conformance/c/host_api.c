/*
 * libftnconf: the C language host as a library for runners in other
 * languages (the Python and Node runners load it). It links no engine: it
 * acts only through the vtable of whatever flow it is given.
 *
 * The host runner owns the loop and the flows; this library keeps the shared
 * trace, the named sync objects and the per-flow outcome, and makes C
 * fragments for "c"/"c2" nodes. Nodes are identified by their index in a
 * pre-order walk of the scenario (objects only, keys and items in document
 * order), which every runner can compute on its own parse.
 */
#include "conf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef uint64_t (*ftnconf_now_fn)(void* data);
typedef int (*ftnconf_make_fn)(void* host, conf_flow* flow, size_t node_index, conf_fragment* out);

typedef struct host_run
{
    conf_run run; /* first: interp.c sees a conf_run */
    FutoInConformanceProvider prov;
    ftnconf_now_fn now;
    void* now_data;
    jval* doc;
    const jval** nodes;
    size_t nnodes;
} host_run;

static host_run* g_current; /* the runner drives one scenario at a time */

static uint64_t host_now(void* loop)
{
    host_run* h = loop;
    return h->now ? h->now(h->now_data) : 0;
}

static void index_nodes(host_run* h, const jval* v)
{
    if (v->type == JOBJ) {
        h->nodes = realloc(h->nodes, (h->nnodes + 1) * sizeof(*h->nodes));
        h->nodes[h->nnodes++] = v;
    }
    if (v->type == JOBJ || v->type == JARR) {
        for (size_t i = 0; i < v->len; ++i) {
            index_nodes(h, &v->items[i]);
        }
    }
}

static size_t node_index(host_run* h, const jval* node)
{
    for (size_t i = 0; i < h->nnodes; ++i) {
        if (h->nodes[i] == node) {
            return i;
        }
    }
    return SIZE_MAX;
}

EXPORT void* ftnconf_run_new(const char* scenario_json, ftnconf_now_fn now, void* now_data)
{
    char err[256];
    jval* doc = json_parse(scenario_json, err, sizeof(err));
    if (!doc) {
        fprintf(stderr, "ftnconf: %s\n", err);
        return NULL;
    }
    host_run* h = calloc(1, sizeof(*h));
    h->doc = doc;
    h->now = now;
    h->now_data = now_data;
    h->prov.name = "host";
    h->prov.now = host_now;
    h->run.prov = &h->prov;
    h->run.loop = h;
    h->run.scenario = doc;
    index_nodes(h, doc);
    g_current = h;
    static int registered;
    if (!registered) {
        conf_lang_register_c();
        registered = 1;
    }
    return h;
}

EXPORT void ftnconf_run_free(void* p)
{
    host_run* h = p;
    if (!h) {
        return;
    }
    for (size_t i = 0; i < h->run.ntrace; ++i) {
        free(h->run.trace[i]);
    }
    json_free(h->doc);
    free(h->nodes);
    if (g_current == h) {
        g_current = NULL;
    }
    free(h);
}

EXPORT size_t ftnconf_node_count(void* p)
{
    return ((host_run*)p)->nnodes;
}

EXPORT void ftnconf_trace(void* p, const char* text)
{
    conf_trace(&((host_run*)p)->run, text);
}

EXPORT size_t ftnconf_trace_count(void* p)
{
    return ((host_run*)p)->run.ntrace;
}

EXPORT const char* ftnconf_trace_at(void* p, size_t i)
{
    host_run* h = p;
    return i < h->run.ntrace ? h->run.trace[i] : NULL;
}

EXPORT const char* ftnconf_error(void* p)
{
    return ((host_run*)p)->run.error;
}

EXPORT void ftnconf_sync_add(void* p, const char* name, FutoInSync* sync)
{
    conf_run* run = &((host_run*)p)->run;
    if (run->nsyncs < CONF_MAX_SYNCS) {
        run->sync_names[run->nsyncs] = strdup(name);
        run->syncs[run->nsyncs++] = sync;
    }
}

EXPORT conf_flow* ftnconf_flow_new(void* p, const char* name, FutoInAsyncSteps* root)
{
    return conf_flow_new(&((host_run*)p)->run, name, root);
}

EXPORT size_t ftnconf_flow_count(void* p)
{
    return ((host_run*)p)->run.nflows;
}

EXPORT conf_flow* ftnconf_flow_at(void* p, size_t i)
{
    host_run* h = p;
    return i < h->run.nflows ? &h->run.flows[i] : NULL;
}

EXPORT const char* ftnconf_flow_name(conf_flow* f)
{
    return f->name;
}

EXPORT FutoInAsyncSteps* ftnconf_flow_root(conf_flow* f)
{
    return f->root;
}

EXPORT const char* ftnconf_flow_outcome(conf_flow* f)
{
    return f->outcome;
}

EXPORT void ftnconf_flow_set_outcome(conf_flow* f, const char* outcome)
{
    snprintf(f->outcome, sizeof(f->outcome), "%s", outcome);
    f->finished = 1;
}

/* the structural call of a C parent for node `index` on `bsi` */
EXPORT void ftnconf_add_node(void* p, conf_flow* flow, FutoInAsyncSteps* bsi, size_t index)
{
    host_run* h = p;
    if (index >= h->nnodes) {
        conf_fail(&h->run, "no node %zu", index);
        return;
    }
    conf_add_node(&h->run, flow, bsi, h->nodes[index]);
}

/* a C fragment for node `index`, for a parent of another language */
EXPORT int ftnconf_make_fragment(void* p, conf_flow* flow, size_t index, const char* tag, conf_fragment* out)
{
    host_run* h = p;
    conf_lang* lang = conf_lang_find(tag);
    if (index >= h->nnodes || !lang) {
        return -1;
    }
    return lang->make_fragment(lang, &h->run, flow, h->nodes[index], out);
}

EXPORT long ftnconf_live_fragments(const char* tag)
{
    conf_lang* l = conf_lang_find(tag);
    return l ? l->live_fragments : 0;
}

/* ---- foreign languages registered by the host runner ---- */

typedef struct foreign_lang
{
    conf_lang lang;
    ftnconf_make_fn make;
    void* host;
    char tag[16];
} foreign_lang;

static int foreign_make(conf_lang* lang, conf_run* run, conf_flow* flow, const jval* node, conf_fragment* out)
{
    foreign_lang* f = (foreign_lang*)lang;
    size_t idx = node_index((host_run*)run, node);
    if (idx == SIZE_MAX) {
        return -1;
    }
    return f->make(f->host, flow, idx, out);
}

EXPORT void ftnconf_register_lang(const char* tag, ftnconf_make_fn make, void* host)
{
    conf_lang* existing = conf_lang_find(tag);
    if (existing) {
        foreign_lang* f = (foreign_lang*)existing;
        f->make = make;
        f->host = host;
        return;
    }
    foreign_lang* f = calloc(1, sizeof(*f));
    snprintf(f->tag, sizeof(f->tag), "%s", tag);
    f->lang.tag = f->tag;
    f->lang.make_fragment = foreign_make;
    f->make = make;
    f->host = host;
    conf_lang_register(&f->lang);
}

/* values for other languages: exact binary values from JSON, canonical text */
EXPORT int ftnconf_success_json(FutoInAsyncSteps* bsi, const char* values_json)
{
    char err[128];
    jval* v = json_parse(values_json, err, sizeof(err));
    FutoInArgs args;
    if (!v || conf_args_from_json(v, &args, err, sizeof(err)) != 0) {
        json_free(v);
        return -1;
    }
    json_free(v);
    bsi->api->success(bsi, &args);
    return 0;
}

EXPORT void ftnconf_format_json_value(const char* value_json, char* out, size_t len)
{
    char err[128];
    jval* v = json_parse(value_json, err, sizeof(err));
    FutoInBinaryValue bv;
    out[0] = 0;
    if (v && conf_value_from_json(v, &bv, err, sizeof(err)) == 0) {
        conf_value_format(&bv, out, len);
        futoin_reset_binval(&bv);
    }
    json_free(v);
}

/* state shared by every language of a flow: binary values in state variables */
EXPORT int ftnconf_state_set_json(FutoInAsyncSteps* bsi, const char* name, const char* value_json)
{
    char err[128];
    jval* v = json_parse(value_json, err, sizeof(err));
    FutoInBinaryValue nv;
    if (!v || conf_value_from_json(v, &nv, err, sizeof(err)) != 0) {
        json_free(v);
        return -1;
    }
    json_free(v);
    FutoInBinaryValue* var = bsi->api->stateVariable(bsi, NULL, name, conf_state_alloc, conf_state_cleanup);
    if (!var) {
        futoin_reset_binval(&nv);
        return -1;
    }
    futoin_reset_binval(var);
    *var = nv;
    return 0;
}

/* canonical text of a state variable, "<unset>" when absent */
EXPORT void ftnconf_state_format(FutoInAsyncSteps* bsi, const char* name, char* out, size_t len)
{
    FutoInBinaryValue* var = bsi->api->stateVariable(bsi, NULL, name, NULL, NULL);
    if (var) {
        conf_value_format(var, out, len);
    } else {
        snprintf(out, len, "<unset>");
    }
}
