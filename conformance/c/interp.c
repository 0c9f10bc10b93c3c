/*
 * The "c" language host: scenario nodes become real C step fragments that
 * act only through the FTN12 vtable. "c2" wraps the same fragments in a
 * second family with its own callbacks, data and destructor: it proves the
 * per-language seam that Python and JS hosts plug into.
 */
#include "conf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- registry ---- */

static conf_lang* g_langs[8];
static size_t g_nlangs;

void conf_lang_register(conf_lang* lang)
{
    if (g_nlangs < sizeof(g_langs) / sizeof(g_langs[0])) {
        g_langs[g_nlangs++] = lang;
    }
}

conf_lang* conf_lang_find(const char* tag)
{
    for (size_t i = 0; i < g_nlangs; ++i) {
        if (strcmp(g_langs[i]->tag, tag) == 0) {
            return g_langs[i];
        }
    }
    return NULL;
}

/* ---- fragments of the c host ---- */

typedef struct frag
{
    conf_run* run;
    conf_flow* flow;
    const jval* node;
    conf_lang* lang;
} frag;

/* per executing step, in its own stack() memory */
typedef struct step_ctx
{
    frag* f;
    FutoInAsyncSteps* bsi;
    const char* cancel_text;
    const jval* completion;
    FutoInHandle timer;
} step_ctx;

typedef struct act_ctx
{
    frag* f;
    FutoInAsyncSteps* bsi;
    const FutoInArgs* args;
    const char* code;
    long index;
    const char* key;
    const jval* item;
    step_ctx* sctx;
} act_ctx;

static void run_actions(act_ctx* c, const jval* list);

static const char* node_lang(const jval* node)
{
    return json_str(json_get(node, "lang"), "c");
}

/* "text {args} {code} {info} {i} {k} {v} {now} {state.NAME}" */
static void interpolate(act_ctx* c, const char* text, char* out, size_t len)
{
    size_t n = 0;
    out[0] = 0;
    while (*text && n + 1 < len) {
        const char* close = text[0] == '{' ? strchr(text, '}') : NULL;
        if (!close) {
            out[n++] = *text++;
            out[n] = 0;
            continue;
        }
        char name[64];
        size_t nl = (size_t)(close - text - 1);
        if (nl >= sizeof(name)) {
            nl = sizeof(name) - 1;
        }
        memcpy(name, text + 1, nl);
        name[nl] = 0;
        char val[512];
        val[0] = 0;
        FutoInAsyncSteps* bsi = c->bsi;
        if (!strcmp(name, "args")) {
            if (c->args) {
                conf_args_format(c->args, val, sizeof(val));
            }
        } else if (!strcmp(name, "code")) {
            snprintf(val, sizeof(val), "%s", c->code ? c->code : "");
        } else if (!strcmp(name, "info")) {
            const char* info = bsi->api->stateVariable(bsi, NULL, "error_info", NULL, NULL);
            snprintf(val, sizeof(val), "%s", info ? info : "<NULL>");
        } else if (!strcmp(name, "i") || (!strcmp(name, "k") && !c->key)) {
            snprintf(val, sizeof(val), "%ld", c->index);
        } else if (!strcmp(name, "k")) {
            snprintf(val, sizeof(val), "%s", c->key);
        } else if (!strcmp(name, "v") && c->item) {
            FutoInBinaryValue v;
            char err[64];
            if (conf_value_from_json(c->item, &v, err, sizeof(err)) == 0) {
                conf_value_format(&v, val, sizeof(val));
                futoin_reset_binval(&v);
            }
        } else if (!strcmp(name, "now")) {
            snprintf(val, sizeof(val), "%llu",
                     (unsigned long long)c->f->run->prov->now(c->f->run->loop));
        } else if (!strncmp(name, "state.", 6)) {
            FutoInBinaryValue* v = bsi->api->stateVariable(bsi, NULL, name + 6, NULL, NULL);
            if (v) {
                conf_value_format(v, val, sizeof(val));
            } else {
                snprintf(val, sizeof(val), "<unset>");
            }
        } else {
            snprintf(val, sizeof(val), "{%s}", name);
        }
        n += (size_t)snprintf(out + n, len - n, "%s", val);
        if (n >= len) {
            n = len - 1;
        }
        text = close + 1;
    }
}

static step_ctx* ensure_sctx(act_ctx* c)
{
    if (!c->sctx) {
        c->sctx = c->bsi->api->stack(c->bsi, sizeof(step_ctx), NULL);
        if (c->sctx) {
            c->sctx->f = c->f;
            c->sctx->bsi = c->bsi;
        }
    }
    return c->sctx;
}

static void c_cancel(FutoInAsyncSteps* bsi, void* data)
{
    step_ctx* s = data;
    if (s->completion) {
        bsi->api->sched_cancel(bsi, &s->timer);
        s->completion = NULL;
    }
    if (s->cancel_text && s->cancel_text[0]) {
        conf_trace(s->f->run, s->cancel_text);
    }
}

/* completion spec: {"after": ms, "success"|"resolve": [values]} or
 * {"after": ms, "error"|"reject": code, "info": text} */
static void complete_now(FutoInAsyncSteps* bsi, conf_run* run, const jval* spec)
{
    const jval* err = json_get(spec, "error");
    if (!err) {
        err = json_get(spec, "reject");
    }
    if (err) {
        const char* code = json_str(err, NULL);
        if (!code || !code[0]) {
            code = "PromiseReject";
        }
        bsi->api->handle_error(bsi, code, json_str(json_get(spec, "info"), NULL));
        return;
    }
    const jval* vals = json_get(spec, "success");
    if (!vals) {
        vals = json_get(spec, "resolve");
    }
    FutoInArgs args;
    char msg[128];
    if (conf_args_from_json(vals, &args, msg, sizeof(msg)) != 0) {
        conf_fail(run, "bad completion values: %s", msg);
        bsi->api->handle_error(bsi, "ScenarioError", msg);
        return;
    }
    bsi->api->success(bsi, &args);
}

static void completion_fired(void* data)
{
    step_ctx* s = data;
    const jval* spec = s->completion;
    s->completion = NULL;
    if (spec) {
        complete_now(s->bsi, s->f->run, spec);
    }
}

static void start_completion(act_ctx* c, const jval* spec)
{
    step_ctx* s = ensure_sctx(c);
    if (!s) {
        return;
    }
    s->completion = spec;
    uint32_t after = (uint32_t)json_num(json_get(spec, "after"), 0);
    s->timer = c->bsi->api->sched_deferred(c->bsi, after, s, completion_fired);
    c->bsi->api->setCancel(c->bsi, s, c_cancel);
}

typedef struct stack_hdr
{
    conf_run* run;
    const char* on_free;
} stack_hdr;

static void stack_freed(void* value)
{
    stack_hdr* h = value;
    if (h->on_free) {
        conf_trace(h->run, h->on_free);
    }
}

void* conf_state_alloc(void* data)
{
    (void)data;
    return calloc(1, sizeof(FutoInBinaryValue));
}

void conf_state_cleanup(void* data, void* value)
{
    (void)data;
    futoin_reset_binval(value);
    free(value);
}

static void on_execute_result(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    (void)bsi;
    conf_flow* flow = data;
    char buf[128];
    snprintf(buf, sizeof(buf), "execute:%s", code);
    conf_trace(flow->run, buf);
}

static void dummy_exec(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)bsi;
    (void)data;
    (void)args;
}

static void misuse(act_ctx* c, const char* kind)
{
    FutoInAsyncSteps* bsi = c->bsi;
    const FutoInAsyncStepsAPI* api = bsi->api;
    if (!strcmp(kind, "add_null_callback")) {
        api->add(bsi, NULL, NULL, NULL);
    } else if (!strcmp(kind, "loop_null_body")) {
        api->loop(bsi, NULL, NULL, NULL);
    } else if (!strcmp(kind, "repeat_null_body")) {
        api->repeat(bsi, NULL, 1, NULL, NULL);
    } else if (!strcmp(kind, "sync_null")) {
        api->addSync(bsi, NULL, NULL, dummy_exec, NULL);
    } else if (!strcmp(kind, "error_null_code")) {
        api->handle_error(bsi, NULL, NULL);
    } else if (!strcmp(kind, "setCancel_null")) {
        api->setCancel(bsi, NULL, NULL);
    } else if (!strcmp(kind, "execute_on_step")) {
        api->execute(bsi, NULL, NULL);
    } else if (!strcmp(kind, "cancel_on_step")) {
        api->cancel(bsi);
    } else if (!strcmp(kind, "free_on_step")) {
        api->free(bsi);
    } else if (!strcmp(kind, "state_null_name")) {
        api->stateVariable(bsi, NULL, NULL, NULL, NULL);
    } else {
        conf_fail(c->f->run, "unknown misuse '%s'", kind);
    }
}

static void run_action(act_ctx* c, const jval* a)
{
    conf_run* run = c->f->run;
    FutoInAsyncSteps* bsi = c->bsi;
    if (a->type != JOBJ || a->len < 1) {
        conf_fail(run, "an action must be an object");
        return;
    }
    const char* key = a->keys[0];
    const jval* v = &a->items[0];
    char buf[1024];
    char msg[128];
    if (!strcmp(key, "trace")) {
        interpolate(c, json_str(v, ""), buf, sizeof(buf));
        conf_trace(run, buf);
    } else if (!strcmp(key, "success")) {
        FutoInArgs args;
        if (conf_args_from_json(v, &args, msg, sizeof(msg)) != 0) {
            conf_fail(run, "bad success values: %s", msg);
            return;
        }
        bsi->api->success(bsi, &args);
    } else if (!strcmp(key, "error")) {
        bsi->api->handle_error(bsi, json_str(v, "Error"), json_str(json_get(a, "info"), NULL));
    } else if (!strcmp(key, "setTimeout")) {
        bsi->api->setTimeout(bsi, (uint32_t)json_num(v, 0));
    } else if (!strcmp(key, "setCancel")) {
        step_ctx* s = ensure_sctx(c);
        if (s) {
            s->cancel_text = json_str(v, "");
            bsi->api->setCancel(bsi, s, c_cancel);
        }
    } else if (!strcmp(key, "waitExternal")) {
        bsi->api->waitExternal(bsi);
    } else if (!strcmp(key, "complete")) {
        start_completion(c, v);
    } else if (!strcmp(key, "add")) {
        conf_add_node(run, c->f->flow, bsi, v);
    } else if (!strcmp(key, "break")) {
        bsi->api->breakLoop(bsi, json_str(v, NULL));
    } else if (!strcmp(key, "continue")) {
        bsi->api->continueLoop(bsi, json_str(v, NULL));
    } else if (!strcmp(key, "stack")) {
        size_t size = (size_t)json_num(json_get(v, "size"), 0);
        stack_hdr* h = bsi->api->stack(bsi, sizeof(stack_hdr) + size, stack_freed);
        if (h) {
            h->run = run;
            h->on_free = json_str(json_get(v, "on_free"), NULL);
        }
    } else if (!strcmp(key, "state")) {
        const char* set = json_str(json_get(v, "set"), NULL);
        const char* get = json_str(json_get(v, "get"), NULL);
        if (set) {
            FutoInBinaryValue* var = bsi->api->stateVariable(bsi, NULL, set, conf_state_alloc, conf_state_cleanup);
            FutoInBinaryValue nv;
            const jval* value = json_get(v, "value");
            if (!var || !value || conf_value_from_json(value, &nv, msg, sizeof(msg)) != 0) {
                conf_fail(run, "bad state set");
                return;
            }
            futoin_reset_binval(var);
            *var = nv;
        } else if (get) {
            FutoInBinaryValue* var = bsi->api->stateVariable(bsi, NULL, get, NULL, NULL);
            char val[512] = "<unset>";
            if (var) {
                conf_value_format(var, val, sizeof(val));
            }
            snprintf(buf, sizeof(buf), "%s=%s", get, val);
            conf_trace(run, buf);
        }
    } else if (!strcmp(key, "cancelRoot")) {
        FutoInAsyncSteps* root = c->f->flow->root;
        root->api->cancel(root);
    } else if (!strcmp(key, "executeRoot")) {
        FutoInAsyncSteps* root = c->f->flow->root;
        root->api->execute(root, c->f->flow, on_execute_result);
    } else if (!strcmp(key, "newInstance")) {
        FutoInAsyncSteps* root = bsi->api->newInstance(bsi);
        if (!root) {
            conf_fail(run, "newInstance() returned NULL");
            return;
        }
        conf_flow* flow = conf_flow_new(run, json_str(json_get(v, "name"), "instance"), root);
        if (flow) {
            conf_flow_start(flow, json_get(v, "steps"));
        }
    } else if (!strcmp(key, "misuse")) {
        misuse(c, json_str(v, ""));
    } else {
        conf_fail(run, "unknown action '%s'", key);
    }
}

static void run_actions(act_ctx* c, const jval* list)
{
    if (!list) {
        return;
    }
    if (list->type != JARR) {
        conf_fail(c->f->run, "actions must be a list");
        return;
    }
    for (size_t i = 0; i < list->len; ++i) {
        run_action(c, &list->items[i]);
    }
}

static act_ctx make_ctx(frag* f, FutoInAsyncSteps* bsi)
{
    act_ctx c;
    memset(&c, 0, sizeof(c));
    c.f = f;
    c.bsi = bsi;
    c.index = -1;
    return c;
}

static void c_exec(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    frag* f = data;
    act_ctx c = make_ctx(f, bsi);
    c.args = args;
    const jval* node = f->node;
    const jval* v;
    if ((v = json_get(node, "successStep"))) {
        FutoInArgs out;
        char msg[128];
        if (conf_args_from_json(v, &out, msg, sizeof(msg)) != 0) {
            conf_fail(f->run, "bad successStep values: %s", msg);
            return;
        }
        bsi->api->success(bsi, &out);
    } else if ((v = json_get(node, "await"))) {
        start_completion(&c, v);
    } else {
        run_actions(&c, json_get(node, "do"));
    }
}

static void c_error(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    frag* f = data;
    act_ctx c = make_ctx(f, bsi);
    c.code = code;
    run_actions(&c, json_get(f->node, "onerror"));
}

static void c_loop(FutoInAsyncSteps* bsi, void* data)
{
    frag* f = data;
    act_ctx c = make_ctx(f, bsi);
    run_actions(&c, json_get(f->node, "loop"));
}

static void c_repeat(FutoInAsyncSteps* bsi, void* data, size_t i)
{
    frag* f = data;
    act_ctx c = make_ctx(f, bsi);
    c.index = (long)i;
    const jval* items = json_get(f->node, "forEach");
    if (items && i < items->len) {
        c.item = &items->items[i];
        c.key = items->type == JOBJ ? items->keys[i] : NULL;
    }
    run_actions(&c, json_get(f->node, "do"));
}

static void c_destroy(void* data)
{
    frag* f = data;
    --f->lang->live_fragments;
    free(f);
}

static int c_make_fragment(conf_lang* lang, conf_run* run, conf_flow* flow, const jval* node,
                           conf_fragment* out)
{
    frag* f = calloc(1, sizeof(*f));
    if (!f) {
        return -1;
    }
    f->run = run;
    f->flow = flow;
    f->node = node;
    f->lang = lang;
    ++lang->live_fragments;
    out->exec = c_exec;
    out->on_error = json_get(node, "onerror") ? c_error : NULL;
    out->loop = c_loop;
    out->repeat = c_repeat;
    out->data = f;
    out->destroy = c_destroy;
    return 0;
}

static conf_lang g_lang_c = {"c", c_make_fragment, NULL, 0};

/* ---- c2: a second family over the same interpreter ---- */

typedef struct c2frag
{
    conf_fragment inner;
    conf_lang* lang;
} c2frag;

static void c2_exec(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    c2frag* f = data;
    f->inner.exec(bsi, f->inner.data, args);
}

static void c2_error(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    c2frag* f = data;
    f->inner.on_error(bsi, f->inner.data, code);
}

static void c2_loop(FutoInAsyncSteps* bsi, void* data)
{
    c2frag* f = data;
    f->inner.loop(bsi, f->inner.data);
}

static void c2_repeat(FutoInAsyncSteps* bsi, void* data, size_t i)
{
    c2frag* f = data;
    f->inner.repeat(bsi, f->inner.data, i);
}

static void c2_destroy(void* data)
{
    c2frag* f = data;
    f->inner.destroy(f->inner.data);
    --f->lang->live_fragments;
    free(f);
}

static int c2_make_fragment(conf_lang* lang, conf_run* run, conf_flow* flow, const jval* node,
                            conf_fragment* out)
{
    c2frag* f = calloc(1, sizeof(*f));
    if (!f || c_make_fragment(&g_lang_c, run, flow, node, &f->inner) != 0) {
        free(f);
        return -1;
    }
    f->lang = lang;
    ++lang->live_fragments;
    out->exec = c2_exec;
    out->on_error = f->inner.on_error ? c2_error : NULL;
    out->loop = c2_loop;
    out->repeat = c2_repeat;
    out->data = f;
    out->destroy = c2_destroy;
    return 0;
}

static conf_lang g_lang_c2 = {"c2", c2_make_fragment, NULL, 0};

void conf_lang_register_c(void)
{
    conf_lang_register(&g_lang_c);
    conf_lang_register(&g_lang_c2);
}

/* ---- structure: what a parent does with a node, in any C-family host ---- */

typedef struct frag_holder
{
    conf_fragment frag;
} frag_holder;

static void holder_release(void* value)
{
    frag_holder* h = value;
    if (h->frag.destroy) {
        h->frag.destroy(h->frag.data);
    }
}

/* The fragment for `node` lives in `owner`'s stack() memory. */
static conf_fragment* fragment_for(conf_run* run, conf_flow* flow, FutoInAsyncSteps* owner,
                                   const jval* node)
{
    conf_lang* lang = conf_lang_find(node_lang(node));
    if (!lang) {
        conf_fail(run, "language '%s' is not hosted", node_lang(node));
        return NULL;
    }
    frag_holder* h = owner->api->stack(owner, sizeof(frag_holder), holder_release);
    if (!h) {
        conf_fail(run, "stack() returned NULL");
        return NULL;
    }
    if (lang->make_fragment(lang, run, flow, node, &h->frag) != 0) {
        memset(&h->frag, 0, sizeof(h->frag));
        conf_fail(run, "cannot make a '%s' fragment", lang->tag);
        return NULL;
    }
    return &h->frag;
}

void conf_add_node(conf_run* run, conf_flow* flow, FutoInAsyncSteps* bsi, const jval* node)
{
    if (!node || node->type != JOBJ) {
        conf_fail(run, "a step node must be an object");
        return;
    }
    const jval* v;
    if ((v = json_get(node, "copyFrom"))) {
        const jval* model = json_get(json_get(run->scenario, "models"), json_str(v, ""));
        if (!model || model->type != JARR) {
            conf_fail(run, "unknown model '%s'", json_str(v, ""));
            return;
        }
        for (size_t i = 0; i < model->len; ++i) {
            conf_add_node(run, flow, bsi, &model->items[i]);
        }
        return;
    }
    if ((v = json_get(node, "parallel"))) {
        conf_fragment* f = fragment_for(run, flow, bsi, node);
        FutoInAsyncSteps* p = bsi->api->parallel(bsi, f ? f->data : NULL, f ? f->on_error : NULL);
        for (size_t i = 0; v->type == JARR && i < v->len; ++i) {
            conf_add_node(run, flow, p, &v->items[i]);
        }
        return;
    }
    conf_fragment* f = fragment_for(run, flow, bsi, node);
    if (!f) {
        return;
    }
    const char* label = json_str(json_get(node, "label"), NULL);
    if (json_get(node, "loop")) {
        bsi->api->loop(bsi, f->data, f->loop, label);
    } else if ((v = json_get(node, "repeat"))) {
        bsi->api->repeat(bsi, f->data, (size_t)json_num(v, 0), f->repeat, label);
    } else if ((v = json_get(node, "forEach"))) {
        bsi->api->repeat(bsi, f->data, v->len, f->repeat, label);
    } else if ((v = json_get(node, "sync"))) {
        FutoInSync* sync = conf_sync_find(run, json_str(v, ""));
        if (!sync) {
            conf_fail(run, "unknown sync object '%s'", json_str(v, ""));
            return;
        }
        bsi->api->addSync(bsi, sync, f->data, f->exec, f->on_error);
    } else {
        bsi->api->add(bsi, f->data, f->exec, f->on_error);
    }
}

/* ---- flows ---- */

static void capture_result(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)bsi;
    conf_flow* flow = data;
    char buf[480];
    conf_args_format(args, buf, sizeof(buf));
    snprintf(flow->outcome, sizeof(flow->outcome), "success:%s", buf);
    flow->finished = 1;
}

static void flow_unhandled(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    conf_flow* flow = data;
    const char* info = bsi->api->stateVariable(bsi, NULL, "error_info", NULL, NULL);
    snprintf(flow->outcome, sizeof(flow->outcome), "error:%s:%s", code, info ? info : "<NULL>");
    flow->finished = 1;
}

conf_flow* conf_flow_new(conf_run* run, const char* name, FutoInAsyncSteps* root)
{
    if (run->nflows >= CONF_MAX_FLOWS) {
        conf_fail(run, "too many flows");
        root->api->free(root);
        return NULL;
    }
    conf_flow* flow = &run->flows[run->nflows++];
    memset(flow, 0, sizeof(*flow));
    flow->run = run;
    snprintf(flow->name, sizeof(flow->name), "%s", name);
    flow->root = root;
    snprintf(flow->outcome, sizeof(flow->outcome), "none");
    return flow;
}

void conf_flow_start(conf_flow* flow, const jval* steps)
{
    FutoInAsyncSteps* root = flow->root;
    for (size_t i = 0; steps && steps->type == JARR && i < steps->len; ++i) {
        conf_add_node(flow->run, flow, root, &steps->items[i]);
    }
    root->api->add(root, flow, capture_result, NULL);
    root->api->execute(root, flow, flow_unhandled);
}

FutoInSync* conf_sync_find(conf_run* run, const char* name)
{
    for (size_t i = 0; i < run->nsyncs; ++i) {
        if (strcmp(run->sync_names[i], name) == 0) {
            return run->syncs[i];
        }
    }
    return NULL;
}
