/*
 * conformance-c: runs every scenario with "c" (and "c2") nodes as real C
 * fragments against an FTN12 provider, prints a line per scenario and the
 * closing line "N passed, N failed".
 *
 *   conformance-c [--provider LIB.so[:SYMBOL]] [--verbose] [FILE|DIR]...
 */
#define _DEFAULT_SOURCE
#include "conf.h"

#include <dirent.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const FutoInConformanceProvider* conf_core_provider(void);

static int g_verbose;

/* ---- scenario checks ---- */

static const char* find_unhosted_lang(const jval* v)
{
    if (!v) {
        return NULL;
    }
    if (v->type == JOBJ) {
        const char* tag = json_str(json_get(v, "lang"), NULL);
        if (tag && !conf_lang_find(tag)) {
            return tag;
        }
    }
    if (v->type == JOBJ || v->type == JARR) {
        for (size_t i = 0; i < v->len; ++i) {
            const char* t = find_unhosted_lang(&v->items[i]);
            if (t) {
                return t;
            }
        }
    }
    return NULL;
}

static uint32_t u32_or(const jval* obj, const char* key, uint32_t dflt)
{
    const jval* v = json_get(obj, key);
    if (!v) {
        return dflt;
    }
    if (v->type == JNULL) {
        return UINT32_MAX; /* the spec's null: unlimited */
    }
    return (uint32_t)json_num(v, dflt);
}

static int make_syncs(conf_run* run, const jval* decl, char* why, size_t whylen)
{
    const FutoInConformanceProvider* p = run->prov;
    for (size_t i = 0; decl && decl->type == JOBJ && i < decl->len; ++i) {
        const jval* d = &decl->items[i];
        const char* type = json_str(json_get(d, "type"), "");
        FutoInSync* s = NULL;
        if (!strcmp(type, "mutex") && p->mutex_new) {
            s = p->mutex_new(run->loop, u32_or(d, "max", 1), u32_or(d, "max_queue", UINT32_MAX));
        } else if (!strcmp(type, "throttle") && p->throttle_new) {
            s = p->throttle_new(run->loop, u32_or(d, "max", 1), u32_or(d, "period_ms", 1000),
                                u32_or(d, "max_queue", UINT32_MAX));
        } else if (!strcmp(type, "limiter") && p->limiter_new) {
            s = p->limiter_new(run->loop, u32_or(d, "concurrent", 1), u32_or(d, "max_queue", 0),
                               u32_or(d, "rate", 1), u32_or(d, "period_ms", 1000), u32_or(d, "burst", 0));
        } else {
            snprintf(why, whylen, "provider has no %s", type);
            return -1;
        }
        run->sync_names[run->nsyncs] = decl->keys[i];
        run->syncs[run->nsyncs++] = s;
    }
    return 0;
}

typedef struct delayed
{
    conf_flow* flow;
    const jval* steps;
} delayed;

static delayed g_delayed[CONF_MAX_FLOWS];

static void start_later(void* data)
{
    delayed* d = data;
    conf_flow_start(d->flow, d->steps);
}

static void cancel_later(void* data)
{
    conf_flow* flow = data;
    flow->root->api->cancel(flow->root);
}

static void expected_outcome(const jval* o, char* buf, size_t len)
{
    const jval* v;
    if ((v = json_get(o, "success"))) {
        FutoInArgs args;
        char err[128];
        if (conf_args_from_json(v, &args, err, sizeof(err)) != 0) {
            snprintf(buf, len, "<bad expected values: %s>", err);
            return;
        }
        char vals[400];
        conf_args_format(&args, vals, sizeof(vals));
        for (int i = 0; i < 4; ++i) {
            futoin_reset_binval(&args.args[i]);
        }
        snprintf(buf, len, "success:%s", vals);
    } else if ((v = json_get(o, "error"))) {
        snprintf(buf, len, "error:%s:%s", json_str(v, ""), json_str(json_get(o, "info"), ""));
    } else {
        snprintf(buf, len, "none");
    }
}

/* Returns 1 pass, 0 fail, -1 not applicable. */
static int run_scenario(const FutoInConformanceProvider* prov, const char* path, char* report,
                        size_t replen)
{
    char err[256];
    jval* sc = json_load_file(path, err, sizeof(err));
    if (!sc) {
        snprintf(report, replen, "cannot read: %s", err);
        return 0;
    }
    const char* lang = find_unhosted_lang(sc);
    if (lang) {
        snprintf(report, replen, "needs language '%s'", lang);
        json_free(sc);
        return -1;
    }
    conf_run* run = calloc(1, sizeof(*run));
    run->prov = prov;
    run->scenario = sc;
    run->loop = prov->loop_new();
    char why[128];
    if (make_syncs(run, json_get(sc, "sync"), why, sizeof(why)) != 0) {
        snprintf(report, replen, "%s", why);
        for (size_t i = 0; i < run->nsyncs; ++i) {
            prov->sync_free(run->syncs[i]);
        }
        prov->loop_free(run->loop);
        free(run);
        json_free(sc);
        return -1;
    }

    /* flows: "flows": [{name, steps, start_at, cancel_at}] or top-level "steps" */
    const jval* flows = json_get(sc, "flows");
    size_t nflows = flows && flows->type == JARR ? flows->len : 1;
    for (size_t i = 0; i < nflows; ++i) {
        const jval* fd = flows ? &flows->items[i] : sc;
        FutoInAsyncSteps* root = prov->root_new(run->loop);
        conf_flow* flow = conf_flow_new(run, json_str(json_get(fd, "name"), "main"), root);
        if (!flow) {
            break;
        }
        uint32_t start_at = (uint32_t)json_num(json_get(fd, "start_at"), 0);
        const jval* cancel_at = json_get(fd, "cancel_at");
        if (cancel_at) {
            root->api->sched_deferred(root, (uint32_t)json_num(cancel_at, 0), flow, cancel_later);
        }
        if (start_at) {
            g_delayed[i].flow = flow;
            g_delayed[i].steps = json_get(fd, "steps");
            root->api->sched_deferred(root, start_at, &g_delayed[i], start_later);
        } else {
            conf_flow_start(flow, json_get(fd, "steps"));
        }
    }
    prov->run(run->loop);
    uint64_t end_time = prov->now(run->loop);

    /* compare */
    int ok = !run->error[0] && !run->overflow;
    size_t n = 0;
    report[0] = 0;
    if (run->error[0]) {
        n += (size_t)snprintf(report + n, replen - n, "runner: %s\n", run->error);
    }
    const jval* expect = json_get(sc, "expect");
    const jval* trace = json_get(expect, "trace");
    size_t nexp = trace && trace->type == JARR ? trace->len : 0;
    size_t first_diff = SIZE_MAX;
    for (size_t i = 0; i < nexp || i < run->ntrace; ++i) {
        const char* e = i < nexp ? json_str(&trace->items[i], "") : NULL;
        const char* a = i < run->ntrace ? run->trace[i] : NULL;
        if (!e || !a || strcmp(e, a) != 0) {
            first_diff = i;
            break;
        }
    }
    if (first_diff != SIZE_MAX) {
        ok = 0;
        n += (size_t)snprintf(report + n, n < replen ? replen - n : 0, "trace differs at entry %zu:\n",
                              first_diff);
        for (size_t i = first_diff; (i < nexp || i < run->ntrace) && i < first_diff + 8; ++i) {
            const char* e = i < nexp ? json_str(&trace->items[i], "") : "(end)";
            const char* a = i < run->ntrace ? run->trace[i] : "(end)";
            n += (size_t)snprintf(report + n, n < replen ? replen - n : 0, "  %c [%zu] expected %-32s got %s\n",
                                  strcmp(e, a) ? '!' : ' ', i, e, a);
        }
    }
    const jval* outcomes = json_get(expect, "outcomes");
    for (size_t i = 0; i < run->nflows; ++i) {
        conf_flow* flow = &run->flows[i];
        const jval* o = outcomes ? json_get(outcomes, flow->name) : (i == 0 ? json_get(expect, "outcome") : NULL);
        if (!o) {
            continue;
        }
        char want[512];
        expected_outcome(o, want, sizeof(want));
        if (strcmp(want, flow->outcome) != 0) {
            ok = 0;
            n += (size_t)snprintf(report + n, n < replen ? replen - n : 0,
                                  "outcome of flow '%s': expected %s got %s\n", flow->name, want,
                                  flow->outcome);
        }
    }
    const jval* t = json_get(expect, "time");
    if (t && (uint64_t)json_num(t, 0) != end_time) {
        ok = 0;
        n += (size_t)snprintf(report + n, n < replen ? replen - n : 0, "end time: expected %llu got %llu\n",
                              (unsigned long long)json_num(t, 0), (unsigned long long)end_time);
    }

    for (size_t i = 0; i < run->nflows; ++i) {
        run->flows[i].root->api->free(run->flows[i].root);
    }
    for (size_t i = 0; i < run->nsyncs; ++i) {
        prov->sync_free(run->syncs[i]);
    }
    prov->loop_free(run->loop);
    const char* tags[] = {"c", "c2"};
    for (size_t i = 0; i < 2; ++i) {
        conf_lang* l = conf_lang_find(tags[i]);
        if (l && l->live_fragments != 0) {
            ok = 0;
            n += (size_t)snprintf(report + n, n < replen ? replen - n : 0,
                                  "%ld '%s' fragments were never destroyed\n", l->live_fragments, l->tag);
            l->live_fragments = 0;
        }
    }
    for (size_t i = 0; i < run->ntrace; ++i) {
        free(run->trace[i]);
    }
    free(run);
    json_free(sc);
    return ok;
}

/* ---- files ---- */

static int cmp_str(const void* a, const void* b)
{
    return strcmp(*(char* const*)a, *(char* const*)b);
}

static void collect(const char* path, char*** list, size_t* n, size_t* cap)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "conformance-c: no such file or directory: %s\n", path);
        return;
    }
    if (S_ISDIR(st.st_mode)) {
        DIR* d = opendir(path);
        struct dirent* e;
        while (d && (e = readdir(d))) {
            if (e->d_name[0] == '.') {
                continue;
            }
            char sub[4096];
            snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
            struct stat s2;
            if (stat(sub, &s2) == 0 && (S_ISDIR(s2.st_mode) || strstr(e->d_name, ".json"))) {
                collect(sub, list, n, cap);
            }
        }
        if (d) {
            closedir(d);
        }
        return;
    }
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        *list = realloc(*list, *cap * sizeof(char*));
    }
    (*list)[(*n)++] = strdup(path);
}

static const FutoInConformanceProvider* load_provider(const char* spec)
{
    char lib[4096];
    snprintf(lib, sizeof(lib), "%s", spec);
    const char* sym = "futoin_conformance_provider";
    char* colon = strrchr(lib, ':');
    if (colon) {
        *colon = 0;
        sym = colon + 1;
    }
    void* h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "conformance-c: %s\n", dlerror());
        return NULL;
    }
    futoin_conformance_provider_fn fn;
    *(void**)&fn = dlsym(h, colon ? colon + 1 : sym);
    if (!fn) {
        fprintf(stderr, "conformance-c: no symbol %s in %s\n", sym, lib);
        return NULL;
    }
    return fn();
}

int main(int argc, char** argv)
{
    const FutoInConformanceProvider* prov = conf_core_provider();
    char** files = NULL;
    size_t nfiles = 0, cap = 0;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--provider") && i + 1 < argc) {
            prov = load_provider(argv[++i]);
            if (!prov) {
                return 2;
            }
        } else if (!strcmp(argv[i], "--verbose")) {
            g_verbose = 1;
        } else if (!strcmp(argv[i], "--help")) {
            printf("usage: %s [--provider LIB.so[:SYMBOL]] [--verbose] [FILE|DIR]...\n", argv[0]);
            return 0;
        } else {
            collect(argv[i], &files, &nfiles, &cap);
        }
    }
    if (!nfiles) {
        fprintf(stderr, "conformance-c: no scenarios given\n");
        return 2;
    }
    qsort(files, nfiles, sizeof(char*), cmp_str);
    conf_lang_register_c();
    printf("provider: %s\n", prov->name);
    int passed = 0, failed = 0, na = 0;
    char* report = malloc(16384);
    for (size_t i = 0; i < nfiles; ++i) {
        const char* name = strrchr(files[i], '/') ? strrchr(files[i], '/') + 1 : files[i];
        int r = run_scenario(prov, files[i], report, 16384);
        if (r > 0) {
            ++passed;
            printf("pass  %s\n", name);
        } else if (r < 0) {
            ++na;
            printf("n/a   %s (%s)\n", name, report);
        } else {
            ++failed;
            printf("FAIL  %s\n%s", name, report);
        }
        free(files[i]);
    }
    free(report);
    free(files);
    printf("%d passed, %d failed, %d skipped\n", passed, failed, na);
    return failed ? 1 : 0;
}
