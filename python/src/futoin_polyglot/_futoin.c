/*
 * futoin_polyglot._futoin: Python views over FTN12 FutoInAsyncSteps* pointers.
 *
 * Everything a step does goes through the binary vtable, so the same code
 * serves flows of our core and of any other provider (wrap()). Only tools,
 * roots and sync objects come from our core's entry points.
 *
 * Rules kept here: every trampoline holds the GIL while touching Python,
 * catches every exception and turns it into handle_error() (keeping the
 * exception as last_exception), and never leaves a pending PyErr behind.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <futoin/core.h>

#include <errno.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <unistd.h>

/* ---- module state (one interpreter) ---- */

static PyObject* g_FutoInError; /* futoin_polyglot.errors.FutoInError */
static PyObject* g_State;       /* futoin_polyglot.State (dict subclass) */
static PyTypeObject* g_ViewType; /* futoin_polyglot.AsyncSteps (a subclass) */
static PyObject* g_on_cancelled; /* futoin_polyglot._flow_cancelled(root) */
static PyObject* g_AwaitStep;    /* futoin_polyglot._AwaitStep */
static PyTypeObject StepsType;

/* an async def function: as a step it would only make a coroutine */
#define ASYNC_HINT "steps are plain functions and the engine never awaits; call as_.await_(coro) in the step instead"

static int is_async_def(PyObject* o)
{
    if (PyMethod_Check(o)) {
        o = PyMethod_GET_FUNCTION(o);
    }
    return PyFunction_Check(o) && (((PyCodeObject*)PyFunction_GET_CODE(o))->co_flags & CO_COROUTINE);
}

static PyTypeObject ToolType;

/* ---- values: Python objects <-> FutoInBinaryValue ---- */

static void py_value_cleanup(FutoInBinaryValue* v)
{
    PyGILState_STATE g = PyGILState_Ensure();
    Py_XDECREF((PyObject*)v->custom_data);
    PyGILState_Release(g);
}

/* Our own type descriptors: receivers recognise them and get the object
 * back without a copy; other languages read the plain C fields. */
static const FutoInType k_py_object = {FTN_TYPE_CUSTOM_OBJECT, py_value_cleanup};
static const FutoInType k_py_str = {FTN_TYPE_STRING, py_value_cleanup};
static const FutoInType k_py_bytes = {FTN_TYPE_UINT8 | FTN_TYPE_ARRAY, py_value_cleanup};
/* a str with lone surrogates: (str, its UTF-8 with U+FFFD for them) */
static const FutoInType k_py_str_replaced = {FTN_TYPE_STRING, py_value_cleanup};
static const FutoInType k_py_pack = {FTN_TYPE_CUSTOM_OBJECT, py_value_cleanup}; /* >4 args */
static const FutoInType k_bool = {FTN_TYPE_BOOL, NULL};
static const FutoInType k_i64 = {FTN_TYPE_INT64, NULL};
static const FutoInType k_f64 = {FTN_TYPE_DOUBLE, NULL};

static void set_custom(FutoInBinaryValue* v, const FutoInType* t, PyObject* o)
{
    Py_INCREF(o);
    v->type = t;
    v->p = o;
    v->custom_data = o;
    v->length = 0;
}

/* UTF-8 of a str with lone surrogates, each one U+FFFD (as V8 gives) */
static PyObject* utf8_replacing_surrogates(PyObject* o)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(o);
    Py_UCS4* buf = PyUnicode_AsUCS4Copy(o);
    if (!buf) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; ++i) {
        if (buf[i] >= 0xD800 && buf[i] <= 0xDFFF) {
            buf[i] = 0xFFFD;
        }
    }
    PyObject* clean = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, buf, n);
    PyMem_Free(buf);
    PyObject* enc = clean ? PyUnicode_AsUTF8String(clean) : NULL;
    Py_XDECREF(clean);
    return enc;
}

/* a str as C text (an error code, info, a label), or NULL with a
 * ValueError: C strings hold no NUL and no lone surrogate */
static const char* c_text(PyObject* o, const char* what)
{
    Py_ssize_t n;
    const char* s = PyUnicode_AsUTF8AndSize(o, &n);
    if (!s && !PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) {
        return NULL; /* out of memory */
    }
    if (!s || (size_t)n != strlen(s)) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "%s cannot be passed to C: it holds a %s", what,
                     s ? "NUL character" : "lone surrogate");
        return NULL;
    }
    return s;
}

static int py_to_value(PyObject* o, FutoInBinaryValue* v)
{
    memset(v, 0, sizeof(*v));
    if (PyBool_Check(o)) {
        v->type = &k_bool;
        v->b = o == Py_True;
        return 0;
    }
    if (PyLong_CheckExact(o)) {
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (!overflow && !(x == -1 && PyErr_Occurred())) {
            v->type = &k_i64;
            v->i64 = x;
            return 0;
        }
        PyErr_Clear();
        set_custom(v, &k_py_object, o);
        return 0;
    }
    if (PyFloat_CheckExact(o)) {
        v->type = &k_f64;
        v->d = PyFloat_AS_DOUBLE(o);
        return 0;
    }
    if (PyUnicode_CheckExact(o)) {
        Py_ssize_t n;
        const char* s = PyUnicode_AsUTF8AndSize(o, &n); /* cached in the object */
        if (!s) {
            /* lone surrogates: C gets U+FFFD for them, as from JS; Python
             * receivers get the str itself */
            PyErr_Clear();
            PyObject* enc = utf8_replacing_surrogates(o);
            PyObject* pair = enc ? PyTuple_Pack(2, o, enc) : NULL;
            Py_XDECREF(enc);
            if (pair && PyBytes_GET_SIZE(enc) <= UINT32_MAX) {
                set_custom(v, &k_py_str_replaced, pair);
                Py_DECREF(pair);
                v->cstr = PyBytes_AS_STRING(enc);
                v->length = (uint32_t)PyBytes_GET_SIZE(enc);
                return 0;
            }
            Py_XDECREF(pair);
            PyErr_Clear();
            set_custom(v, &k_py_object, o);
            return 0;
        }
        if (n > UINT32_MAX) {
            set_custom(v, &k_py_object, o);
            return 0;
        }
        set_custom(v, &k_py_str, o);
        v->cstr = s;
        v->length = (uint32_t)n;
        return 0;
    }
    if (PyBytes_CheckExact(o) && PyBytes_GET_SIZE(o) <= UINT32_MAX) {
        set_custom(v, &k_py_bytes, o);
        v->p = PyBytes_AS_STRING(o);
        v->length = (uint32_t)PyBytes_GET_SIZE(o);
        return 0;
    }
    set_custom(v, &k_py_object, o);
    return 0;
}

/* Returns a new reference; foreign custom objects become a capsule. */
/* C text as str: what is no UTF-8 (latin-1 from a C library) is replaced,
 * as JS does */
static PyObject* str_of(const char* s)
{
    if (!s) {
        s = "";
    }
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace");
}

/* UTF-32 as str: a code point past U+10FFFF is replaced (Python cannot
 * hold it), as the UTF-8 and UTF-16 decoders do */
static PyObject* str32_of(const char32_t* s, uint32_t n)
{
    uint32_t i = 0;
    while (i < n && s[i] <= 0x10FFFF) {
        ++i;
    }
    if (i == n) {
        return PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, s, n);
    }
    Py_UCS4* copy = PyMem_Malloc(n * sizeof(Py_UCS4));
    if (!copy) {
        return PyErr_NoMemory();
    }
    for (uint32_t k = 0; k < n; ++k) {
        copy[k] = s[k] <= 0x10FFFF ? s[k] : 0xFFFD;
    }
    PyObject* o = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, copy, n);
    PyMem_Free(copy);
    return o;
}

static PyObject* value_to_py(const FutoInBinaryValue* v)
{
    const FutoInType* t = v->type;
    if (!t) {
        Py_RETURN_NONE;
    }
    if (t == &k_py_object || t == &k_py_str || t == &k_py_bytes || t == &k_py_pack) {
        PyObject* o = v->custom_data;
        Py_INCREF(o);
        return o;
    }
    if (t == &k_py_str_replaced) {
        PyObject* o = PyTuple_GET_ITEM((PyObject*)v->custom_data, 0);
        Py_INCREF(o);
        return o;
    }
    uint8_t base = t->flags & FTN_BASE_TYPE_MASK;
    if (t->flags & FTN_TYPE_ARRAY) {
        if (base == FTN_TYPE_UINT8 || base == FTN_TYPE_INT8) {
            PyObject* b = PyBytes_FromStringAndSize(v->p, v->length);
            if (b && !v->p && v->length) {
                memset(PyBytes_AS_STRING(b), 0, v->length); /* no memory given: zeros */
            }
            return b;
        }
        PyObject* list = PyList_New(v->length);
        if (!list) {
            return NULL;
        }
        for (uint32_t i = 0; i < v->length; ++i) {
            FutoInBinaryValue item;
            memset(&item, 0, sizeof(item));
            static const FutoInType scalar[16] = {
                    {0, NULL}, {1, NULL}, {2, NULL}, {3, NULL}, {4, NULL}, {5, NULL},
                    {6, NULL}, {7, NULL}, {8, NULL}, {9, NULL}, {10, NULL}, {11, NULL},
                    {12, NULL}, {13, NULL}, {14, NULL}, {15, NULL}};
            item.type = &scalar[base];
            if (!v->p) {
                /* no memory given: zeros (strings and the rest: None) */
                item.type = base >= FTN_TYPE_BOOL ? item.type : NULL;
            } else {
                switch (base) {
                case FTN_TYPE_BOOL: item.b = ((const unsigned char*)v->p)[i] != 0; break; /* any byte from C */
                case FTN_TYPE_INT16: item.i16 = ((const int16_t*)v->p)[i]; break;
                case FTN_TYPE_UINT16: item.u16 = ((const uint16_t*)v->p)[i]; break;
                case FTN_TYPE_INT32: item.i32 = ((const int32_t*)v->p)[i]; break;
                case FTN_TYPE_UINT32: item.u32 = ((const uint32_t*)v->p)[i]; break;
                case FTN_TYPE_INT64: item.i64 = ((const int64_t*)v->p)[i]; break;
                case FTN_TYPE_UINT64: item.u64 = ((const uint64_t*)v->p)[i]; break;
                case FTN_TYPE_FLOAT: item.f = ((const float*)v->p)[i]; break;
                case FTN_TYPE_DOUBLE: item.d = ((const double*)v->p)[i]; break;
                default: item.type = NULL; break;
                }
            }
            PyObject* o = value_to_py(&item);
            if (!o) {
                Py_DECREF(list);
                return NULL;
            }
            PyList_SET_ITEM(list, i, o);
        }
        return list;
    }
    switch (base) {
    case FTN_TYPE_BOOL: return PyBool_FromLong(v->b);
    case FTN_TYPE_INT8: return PyLong_FromLong(v->i8);
    case FTN_TYPE_INT16: return PyLong_FromLong(v->i16);
    case FTN_TYPE_INT32: return PyLong_FromLong(v->i32);
    case FTN_TYPE_INT64: return PyLong_FromLongLong(v->i64);
    case FTN_TYPE_UINT8: return PyLong_FromUnsignedLong(v->u8);
    case FTN_TYPE_UINT16: return PyLong_FromUnsignedLong(v->u16);
    case FTN_TYPE_UINT32: return PyLong_FromUnsignedLong(v->u32);
    case FTN_TYPE_UINT64: return PyLong_FromUnsignedLongLong(v->u64);
    case FTN_TYPE_FLOAT: return PyFloat_FromDouble(v->f);
    case FTN_TYPE_DOUBLE: return PyFloat_FromDouble(v->d);
    /* a string without memory is empty, whatever its length says */
    case FTN_TYPE_STRING: return PyUnicode_DecodeUTF8(v->cstr ? v->cstr : "", v->cstr ? v->length : 0, "replace");
    case FTN_TYPE_STRING16: {
        int order = 0;
        return PyUnicode_DecodeUTF16(v->cstr16 ? (const char*)v->cstr16 : "", v->cstr16 ? (Py_ssize_t)v->length * 2 : 0,
                                     "replace", &order);
    }
    case FTN_TYPE_STRING32:
        return str32_of(v->cstr32 ? v->cstr32 : U"", v->cstr32 ? v->length : 0);
    default:
        /* another runtime's object: its address (valid while its owner keeps it) */
        if (!v->p) {
            Py_RETURN_NONE;
        }
        return PyCapsule_New((void*)v->p, "futoin.foreign_object", NULL);
    }
}

/* success(*args): up to 4 values travel as they are; more are packed into
 * one tuple that Python receivers unpack. */
static int args_from_tuple(PyObject* const* items, Py_ssize_t n, FutoInArgs* out)
{
    memset(out, 0, sizeof(*out));
    if (n > 4) {
        PyObject* pack = PyTuple_New(n);
        if (!pack) {
            return -1;
        }
        for (Py_ssize_t i = 0; i < n; ++i) {
            Py_INCREF(items[i]);
            PyTuple_SET_ITEM(pack, i, items[i]);
        }
        set_custom(&out->arg0, &k_py_pack, pack);
        Py_DECREF(pack);
        return 0;
    }
    for (Py_ssize_t i = 0; i < n; ++i) {
        py_to_value(items[i], &out->args[i]);
    }
    return 0;
}

/* ---- views ---- */

struct pyfrag;

typedef struct StepsObject
{
    PyObject_HEAD
    FutoInAsyncSteps* bsi;
    struct pyfrag* frags; /* roots: the callbacks their root-level steps hold (the GC sees them) */
    unsigned runs;    /* roots: execute() calls accepted so far */
    struct pyfrag* spare; /* roots: frags of runs long over, for new root-level steps */
    unsigned awaits;  /* roots: await_() steps added since the last flow ended */
    PyObject* tool;   /* ToolObject for our roots, or None */
    int owns;         /* a root created here: free it with the object */
    int picked_tool;  /* roots: AsyncSteps() picked its tool (none given): it may move (_rebind);
                       * 2: not since binary() handed its pointer out */
    int in_cb;        /* inside this step's execute/error callback */
    int in_cancel;    /* the view a cancel handler gets: its step completes no more */
    struct viewlink* link; /* a step view kept past its callback: told when its step ends */
    int went_on;      /* in its callback: success(), add() ... (an error handler recovered) */
    struct StepsObject* par_root; /* a root-level parallel's view: the root its branches' callbacks are listed on */
    PyObject* model;  /* roots: recorded root-level adds (copy_from), flat: kind, args... */
    PyObject* spent_model; /* roots: the model of the last run, freed with the next (or the root) */
    PyObject* weakrefs;
    PyObject* ctx;    /* roots: the contextvars context of its run */
    struct StepsObject* root_ref; /* views: the root whose flow they are of (a step held holds its flow) */
    int gc_aside;     /* roots: held by none of ours during a full collection (see Steps_gc_aside) */
    int exported;     /* roots: a binary() pointer of it or of a step of its flow went out */
    struct pyhost* host; /* roots: their executing flow's host data, NULL before the first execute() */
} StepsObject;

/* a flow's host data: its Python root; the magic tells it from what another
 * host (or C code) may have set on a flow Python did not execute */
typedef struct pyhost
{
    uint64_t magic;
    StepsObject* root; /* borrowed: the root clears the host data before it goes */
} pyhost;

#define PYHOST_MAGIC 0x70794675746f496eULL

/* the Python root of the flow bsi is of, borrowed; NULL for a flow Python
 * did not execute */
static StepsObject* root_of_flow(FutoInAsyncSteps* bsi)
{
    const pyhost* h = futoin_steps_host_data(bsi);
    return h && h->magic == PYHOST_MAGIC ? h->root : NULL;
}

struct deferred;

typedef struct ToolObject
{
    PyObject_HEAD
    FutoInAsyncTool* tool;
    PyObject* arm;    /* host-loop arm callable (asyncio driver) or NULL */
    int wake_fd;
    int virtual_time;
    int running; /* inside run(): a nested run() would never return */
    unsigned refs; /* ref() not yet matched by unref() */
    unsigned kept_views; /* step views Python holds past their callback, their steps going on */
    FutoInAsyncSteps* sched;  /* a root never executed: its sched_* slots serve immediate()/deferred() */
    struct deferred* pending; /* callbacks of immediate()/deferred() not run yet */
    struct ToolObject* tl_next; /* every live tool: wrap() of a pointer of ours finds its tool */
    struct ToolObject** tl_pprev;
} ToolObject;

static ToolObject* g_tools;

/* the Tool whose core tool runs bsi's flow (Py_None: another provider's
 * pointer, or none of ours), borrowed */
static PyObject* tool_object_of(FutoInAsyncSteps* bsi)
{
    if (futoin_steps_is_native(bsi)) {
        FutoInAsyncTool* t = futoin_steps_tool(bsi);
        for (ToolObject* o = g_tools; o; o = o->tl_next) {
            if (o->tool == t) {
                return (PyObject*)o;
            }
        }
    }
    return Py_None;
}

/* One spare view: a callback that did not keep its view gives it back, so
 * a run of steps reuses one object instead of allocating a view per step. */
static StepsObject* g_spare_view;

static StepsObject* view_new(FutoInAsyncSteps* bsi, PyObject* tool)
{
    StepsObject* v = g_spare_view;
    if (v && Py_TYPE(v) == (g_ViewType ? g_ViewType : &StepsType)) {
        g_spare_view = NULL;
        Py_CLEAR(v->tool);
        PyObject_GC_Track(v); /* untracked while spare: gc.get_objects() never saw it */
    } else {
        PyTypeObject* type = g_ViewType ? g_ViewType : &StepsType;
        v = (StepsObject*)type->tp_alloc(type, 0);
        if (!v) {
            return NULL;
        }
    }
    v->bsi = bsi;
    v->tool = tool ? tool : Py_None;
    Py_INCREF(v->tool);
    v->owns = 0;
    v->picked_tool = 0;
    v->in_cb = 0;
    v->went_on = 0;
    v->par_root = NULL;
    v->link = NULL;
    v->model = NULL;
    v->spent_model = NULL;
    v->weakrefs = NULL;
    v->frags = NULL;
    v->spare = NULL;
    v->runs = 0;
    v->awaits = 0;
    v->ctx = NULL;
    /* root_ref: NULL (a spare gave it up); gc_aside, exported, host: roots' only */
    return v;
}

/* a view that outlives its callback holds the root of its flow: somebody
 * may still complete its step (see Steps_gc_aside) */
static void view_hold_root(StepsObject* v)
{
    if (!v->root_ref && v->bsi && !v->owns) {
        v->root_ref = root_of_flow(v->bsi);
        Py_XINCREF(v->root_ref);
    }
}

/* The engine reuses an ended step's memory for the next step: a view kept
 * past its callback must learn when its step ends, or it would act on
 * whichever step comes next at that address. A link in the step's stack()
 * memory tells it (and the view unlinks itself if it goes first). */
typedef struct viewlink
{
    StepsObject* view;
} viewlink;

/* a kept view of a step that goes on: something may still complete it */
static void kept_views_add(StepsObject* v, int d)
{
    if (v->tool && PyObject_TypeCheck(v->tool, &ToolType)) {
        ((ToolObject*)v->tool)->kept_views += (unsigned)d;
    }
}

static void viewlink_cleanup(void* p)
{
    viewlink* l = p;
    PyGILState_STATE g = PyGILState_Ensure();
    if (l->view) {
        kept_views_add(l->view, -1);
        l->view->bsi = NULL;
        l->view->link = NULL;
    }
    PyGILState_Release(g);
}

/* `v` may outlive the call that made it: link it to its step's end (a step
 * ending already, as in its cancel handler, leaves it ended at once) */
static void view_link(StepsObject* v)
{
    if (v->bsi && !v->link && !v->owns) {
        viewlink* l = v->bsi->api->stack(v->bsi, sizeof(viewlink), viewlink_cleanup);
        if (l) {
            l->view = v;
            v->link = l;
            kept_views_add(v, 1);
        } else {
            v->bsi = NULL;
        }
    }
}

/* Drop our reference to a step view; keep it as the spare when nobody else
 * holds it (then it is never seen again by user code). */
static void view_release(StepsObject* v)
{
    if (Py_REFCNT(v) == 1) {
        if (!g_spare_view && !v->owns && !v->model && !v->weakrefs) {
            v->bsi = NULL;
            Py_INCREF(Py_None);
            Py_SETREF(v->tool, Py_None);
            /* out of the collector's sight, so no one finds it (and makes a
             * weak reference to it) before it is handed out again */
            PyObject_GC_UnTrack(v);
            StepsObject* root = v->root_ref;
            v->root_ref = NULL;
            g_spare_view = v;
            Py_XDECREF(root); /* last: a root going runs its cancel handlers, which take views */
            return;
        }
    } else {
        view_hold_root(v);
        view_link(v);
    }
    Py_DECREF(v);
}

/* A step's Python callables, kept in its owner's stack() memory and released
 * when that owner ends (with the GIL). */
typedef struct pyfrag
{
    PyObject* func;
    PyObject* onerror;
    PyObject* tool;
    int nargs;   /* how many received values func takes (-1: all) */
    int nreq;    /* how many it requires (missing ones are None) */
    int ehargs;  /* how many onerror takes after as_: the code, none, or Nones past it */
    unsigned run; /* a root-level step's: its root's runs when it was added */
    uint8_t root_mem; /* in its root's memory: reused once its run is long over */
    uint8_t flow_mem; /* in its flow's memory (pyfrag_new()), not a handle's or C code's (the GC may see it) */
    struct pyfrag* next;   /* on its root's frags list (root-level steps) */
    struct pyfrag** pprev; /* NULL when on none */
} pyfrag;

/* A root keeps its root-level steps' memory until it is freed, so their
 * callbacks (closures that may refer to the root, a promise()'s future
 * holding the error and its traceback) are on its list: Steps_traverse
 * shows them to the GC, and cycles through the root can be collected. */
static void pyfrag_link(pyfrag** head, pyfrag* f)
{
    f->next = *head;
    if (f->next) {
        f->next->pprev = &f->next;
    }
    f->pprev = head;
    *head = f;
}

static void pyfrag_hold(StepsObject* self, FutoInAsyncSteps* owner, pyfrag* f)
{
    /* a root's own steps (a re-run reuses their memory) and the branches of
     * its root-level parallels: the GC sees them all (a function's globals,
     * doc or annotations may hold the root too) */
    StepsObject* root = self->owns ? self : self->par_root;
    if (f && root && owner == self->bsi) {
        f->run = root->runs;
        pyfrag_link(&root->frags, f);
    }
}

/* with the GIL */
static void pyfrag_drop(pyfrag* f)
{
    if (f->pprev) {
        *f->pprev = f->next;
        if (f->next) {
            f->next->pprev = f->pprev;
        }
        f->pprev = NULL;
    }
    Py_CLEAR(f->func);
    Py_CLEAR(f->onerror);
    Py_CLEAR(f->tool);
}

static void pyfrag_release(void* p)
{
    PyGILState_STATE g = PyGILState_Ensure();
    pyfrag_drop(p);
    PyGILState_Release(g);
}

/* A root's memory lasts as long as the root, so a root re-used for add() +
 * run() cycles would keep every earlier run's callbacks. Once it is idle,
 * the runs before the last one are over: their callbacks go (the last
 * run's may still be on the stack, in its unhandled-error callback). */
static void pyfrag_drop_old_runs(StepsObject* root)
{
    if (root->runs < 2) {
        return; /* no run is long over yet (a root run once: no walk) */
    }
    pyfrag* f = root->frags;
    while (f) {
        pyfrag* next = f->next;
        if (root->runs - f->run >= 2) {
            pyfrag_drop(f);
            if (f->root_mem) {
                f->next = root->spare;
                root->spare = f;
            }
        }
        f = next;
    }
}

static int is_partial(PyObject* o)
{
    static PyObject* partial_type; /* functools.partial, looked up once */
    if (!partial_type) {
        PyObject* ft = PyImport_ImportModule("functools");
        partial_type = ft ? PyObject_GetAttrString(ft, "partial") : NULL;
        Py_XDECREF(ft);
        if (!partial_type) {
            PyErr_Clear();
            return 0;
        }
    }
    return PyObject_TypeCheck(o, (PyTypeObject*)partial_type);
}

/* the plain function a class defines as __call__ (borrowed: its class keeps
 * it), or NULL (none, a builtin, a staticmethod or other descriptor) */
static PyObject* own_call(PyObject* o)
{
    PyObject* mro = Py_TYPE(o)->tp_mro;
    if (!mro || !PyTuple_Check(mro) || !(Py_TYPE(o)->tp_flags & Py_TPFLAGS_HEAPTYPE)) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro); ++i) {
        PyObject* d = ((PyTypeObject*)PyTuple_GET_ITEM(mro, i))->tp_dict;
        PyObject* c = d ? PyDict_GetItemString(d, "__call__") : NULL;
        if (c) {
            return PyFunction_Check(c) ? c : NULL;
        }
    }
    return NULL;
}

/* Count positional parameters after the AsyncSteps one, JS-style leniency:
 * extra values are dropped, missing required ones are None. */
static void arity_of(PyObject* func, int skip, int* nargs, int* nreq)
{
    *nargs = -1;
    *nreq = 0;
    if (!func) {
        return;
    }
    PyObject* f = func;
    int bound = 0;
    /* through bound methods, functools.partial and an object's __call__;
     * what is looked up is held until the end (a partial subclass may make
     * its `func` anew on each read) */
    PyObject* held[8];
    int nheld = 0;
    for (int hop = 0; hop < 8 && !PyFunction_Check(f); ++hop) {
        if (PyMethod_Check(f)) {
            f = PyMethod_GET_FUNCTION(f);
            bound += 1;
        } else if (is_partial(f)) {
            PyObject* inner = PyObject_GetAttrString(f, "func");
            PyObject* pargs = PyObject_GetAttrString(f, "args");
            PyObject* kw = PyObject_GetAttrString(f, "keywords");
            int plain = inner && pargs && PyTuple_Check(pargs) && kw && PyDict_Check(kw) && !PyDict_GET_SIZE(kw);
            bound += plain ? (int)PyTuple_GET_SIZE(pargs) : 0;
            Py_XDECREF(pargs);
            Py_XDECREF(kw);
            PyErr_Clear();
            if (!plain) {
                Py_XDECREF(inner);
                goto done; /* keywords may bind positional parameters: take all values */
            }
            held[nheld++] = inner;
            f = inner;
        } else {
            PyObject* call = own_call(f);
            if (!call) {
                goto done;
            }
            Py_INCREF(call); /* its class may lose it meanwhile */
            held[nheld++] = call;
            f = call;
            bound += 1;
        }
    }
    if (PyFunction_Check(f)) {
        PyCodeObject* code = (PyCodeObject*)PyFunction_GET_CODE(f);
        if (!(code->co_flags & CO_VARARGS)) {
            PyObject* defaults = PyFunction_GET_DEFAULTS(f);
            int ndef = defaults ? (int)PyTuple_GET_SIZE(defaults) : 0;
            int total = code->co_argcount - bound - skip;
            *nargs = total < 0 ? 0 : total;
            int req = code->co_argcount - ndef - bound - skip;
            *nreq = req < 0 ? 0 : req;
        }
    }
done:
    while (nheld > 0) {
        Py_DECREF(held[--nheld]);
    }
}

#define EH_ARGS_MAX 4

/* func's and onerror's arity: onerror(as_, code) is as lenient as a step */
static void frag_arity(pyfrag* f)
{
    arity_of(f->func, 1, &f->nargs, &f->nreq);
    int n = 1, req = 0;
    arity_of(f->onerror, 1, &n, &req);
    n = n < 0 ? 1 : n > 1 ? 1 : n;
    f->ehargs = req > n ? (req < EH_ARGS_MAX ? req : EH_ARGS_MAX) : n;
}

static pyfrag* pyfrag_new(StepsObject* self, FutoInAsyncSteps* owner, PyObject* func, PyObject* onerror, PyObject* tool)
{
    pyfrag* f;
    if (self->spare && owner == self->bsi) {
        f = self->spare; /* a root's memory of a run long over (its cleanup stays registered) */
        self->spare = f->next;
    } else {
        f = owner->api->stack(owner, sizeof(pyfrag), pyfrag_release);
    }
    if (!f) {
        PyErr_SetString(PyExc_RuntimeError, "this AsyncSteps object is not active");
        return NULL;
    }
    Py_XINCREF(func);
    Py_XINCREF(onerror);
    Py_XINCREF(tool);
    f->root_mem = self->owns && owner == self->bsi;
    f->flow_mem = 1;
    f->func = func;
    f->onerror = onerror;
    f->tool = tool;
    f->next = NULL;
    f->pprev = NULL;
    frag_arity(f);
    return f;
}

/* ---- exceptions into the flow ---- */

static int on_loop_thread(FutoInAsyncSteps* bsi)
{
    return bsi->api->is_same_thread(bsi);
}

static void set_last_exception(FutoInAsyncSteps* bsi, PyObject* exc, const char* code, const char* info);

/* handle_error() from outside a callback; from another thread it posts (the
 * GIL is released meanwhile) and last_exception stays as it was, since state
 * belongs to the loop thread */
static void external_error(FutoInAsyncSteps* bsi, const char* code, const char* info, PyObject* exc)
{
    if (on_loop_thread(bsi)) {
        if (exc) {
            set_last_exception(bsi, exc, code, info);
        }
        bsi->api->handle_error(bsi, code, info);
        return;
    }
    Py_BEGIN_ALLOW_THREADS bsi->api->handle_error(bsi, code, info);
    Py_END_ALLOW_THREADS
}

/* per root: [code, info] of the error Python raised with last_exception */
static void* raised_alloc(void* data)
{
    (void)data;
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject* l = Py_BuildValue("[ss]", "", "");
    if (!l) {
        PyErr_Clear();
    }
    PyGILState_Release(g);
    return l;
}

static void raised_cleanup(void* data, void* value)
{
    (void)data;
    PyGILState_STATE g = PyGILState_Ensure();
    Py_XDECREF((PyObject*)value);
    PyGILState_Release(g);
}

static PyObject* raised_of(FutoInAsyncSteps* bsi)
{
    return bsi->api->stateVariable(bsi, NULL, "futoin.python.raised", raised_alloc, raised_cleanup);
}

/* whether last_exception is the one Python raised the error (code, info)
 * with ("" and no info are the same) */
static int raised_as(FutoInAsyncSteps* bsi, const char* code, const char* info)
{
    PyObject* l = raised_of(bsi);
    if (!l) {
        return 0;
    }
    const char* c = PyUnicode_AsUTF8(PyList_GET_ITEM(l, 0));
    const char* i = PyUnicode_AsUTF8(PyList_GET_ITEM(l, 1));
    PyErr_Clear();
    return c && i && strcmp(c, code) == 0 && strcmp(i, info ? info : "") == 0;
}

static void raised_forget(FutoInAsyncSteps* bsi)
{
    PyObject* l = raised_of(bsi);
    PyObject* e = l ? PyUnicode_FromString("") : NULL;
    if (e) {
        Py_INCREF(e);
        PyList_SetItem(l, 0, e);
        PyList_SetItem(l, 1, e);
    }
    PyErr_Clear();
}

/* exc is last_exception, of the error (code, info) Python raises now */
static void set_last_exception(FutoInAsyncSteps* bsi, PyObject* exc, const char* code, const char* info)
{
    FutoInBinaryValue* slot = bsi->api->stateVariable(bsi, NULL, "last_exception", NULL, NULL);
    if (slot) {
        futoin_reset_binval(slot);
        set_custom(slot, &k_py_object, exc);
        futoin_steps_last_exception_mark(bsi, 1); /* the error raised next keeps it */
    }
    PyObject* l = raised_of(bsi);
    PyObject* c = str_of(code);
    PyObject* i = str_of(info);
    if (l && c && i) {
        PyList_SetItem(l, 0, c);
        PyList_SetItem(l, 1, i);
    } else {
        Py_XDECREF(c);
        Py_XDECREF(i);
    }
    PyErr_Clear();
}

static void fatal_keep_pending(void);

/* text for the engine's C strings: a NUL would end it there */
static PyObject* info_text(PyObject* info)
{
    if (!info || info == Py_None) {
        return info;
    }
    PyObject* text = PyUnicode_Check(info) ? (Py_INCREF(info), info) : PyObject_Str(info);
    Py_DECREF(info);
    if (text && PyUnicode_FindChar(text, 0, 0, PyUnicode_GET_LENGTH(text), 1) >= 0) {
        PyObject* nul = PyUnicode_FromStringAndSize("\0", 1);
        PyObject* esc = nul ? PyUnicode_FromString("\\0") : NULL;
        PyObject* r = esc ? PyUnicode_Replace(text, nul, esc, -1) : NULL;
        Py_XDECREF(nul);
        Py_XDECREF(esc);
        Py_SETREF(text, r);
    }
    return text;
}

/* the code and info an exception raises as: a FutoInError's own, else the
 * class name and str() (new references, NULL where there is none) */
static void exc_code_info(PyObject* type, PyObject* value, PyObject** code_o, PyObject** info_o)
{
    *code_o = NULL;
    *info_o = NULL;
    if (value && PyObject_IsInstance(value, g_FutoInError) == 1) {
        *code_o = PyObject_GetAttrString(value, "code");
        *info_o = info_text(PyObject_GetAttrString(value, "info"));
    } else if (type) {
        *code_o = PyObject_GetAttrString(type, "__name__");
        *info_o = value ? info_text(PyObject_Str(value)) : NULL;
    }
    if (PyErr_Occurred() && (PyErr_ExceptionMatches(PyExc_KeyboardInterrupt)
                             || PyErr_ExceptionMatches(PyExc_SystemExit))) {
        fatal_keep_pending(); /* from its __str__: not swallowed, it leaves run() as raised */
    }
    PyErr_Clear();
}

/* A KeyboardInterrupt or SystemExit a step raised: it fails the flow like
 * any error and leaves the call that ran the step (run(), iterate(), the
 * first burst) once the engine is back, as in plain Python. */
/* per thread: each thread's run() re-raises its own */
static _Thread_local PyObject* g_fatal;

/* inside a call of ours that runs flows and then raises the kept one
 * (run(), iterate(), cancel() ...): else a flow driven by C runs */
static _Thread_local int g_entered;

static void fatal_keep(PyObject* value)
{
    if (!g_fatal && value
            && (PyObject_IsInstance(value, PyExc_KeyboardInterrupt) == 1
                || PyObject_IsInstance(value, PyExc_SystemExit) == 1)) {
        if (g_entered) {
            Py_INCREF(value);
            g_fatal = value;
        } else {
            /* no call of ours to leave: reported as from any callback of
             * C, not raised by a later, unrelated run() */
            PyErr_SetObject((PyObject*)Py_TYPE(value), value);
            PyErr_WriteUnraisable(NULL);
        }
    }
    PyErr_Clear();
}

/* the pending KeyboardInterrupt or SystemExit, kept */
static void fatal_keep_pending(void)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    fatal_keep(value);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
}

/* raise the kept one: -1 */
static int fatal_raise(void)
{
    if (!g_fatal) {
        return 0;
    }
    PyObject* e = g_fatal;
    g_fatal = NULL;
    PyErr_SetObject((PyObject*)Py_TYPE(e), e);
    Py_DECREF(e);
    return -1;
}

/* An exception nobody can take (a cancel handler, a tool callback, a
 * cleanup): reported as unraisable, except KeyboardInterrupt and SystemExit,
 * which leave the run()/iterate() of this thread as in plain Python. */
static void unraisable(PyObject* where)
{
    if (PyErr_ExceptionMatches(PyExc_KeyboardInterrupt) || PyErr_ExceptionMatches(PyExc_SystemExit)) {
        fatal_keep_pending();
        return;
    }
    PyErr_WriteUnraisable(where);
}

/* Turn the pending Python exception into handle_error() on `bsi`. */
static void raise_into_flow(FutoInAsyncSteps* bsi)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (tb && value) {
        PyException_SetTraceback(value, tb);
    }
    fatal_keep(value);
    PyObject *code_o, *info_o;
    exc_code_info(type, value, &code_o, &info_o);
    const char* code = code_o && PyUnicode_Check(code_o) ? c_text(code_o, "the error code") : NULL;
    const char* info = NULL;
    if (!code) {
        /* the info says why the error is an InternalError */
        PyErr_Clear();
        Py_XSETREF(info_o, code_o && !PyUnicode_Check(code_o)
                ? PyUnicode_FromFormat("the error code must be a str, not %.100s", Py_TYPE(code_o)->tp_name)
                : PyUnicode_FromString(code_o ? "the error code holds a NUL or a lone surrogate" : ""));
    }
    if (info_o && PyUnicode_Check(info_o)) {
        info = PyUnicode_AsUTF8(info_o);
        if (!info) {
            /* lone surrogates in the text: U+FFFD for C, as in values */
            PyErr_Clear();
            PyObject* enc = utf8_replacing_surrogates(info_o);
            Py_XSETREF(info_o, enc);
            info = enc ? PyBytes_AS_STRING(enc) : NULL;
        }
    }
    PyErr_Clear();
    if (value) {
        set_last_exception(bsi, value, code ? code : "InternalError", info);
    }
    bsi->api->handle_error(bsi, code ? code : "InternalError", info);
    Py_XDECREF(code_o);
    Py_XDECREF(info_o);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
}

/* Before a handler sees the error `code`: last_exception is the Python
 * exception that raised it, else (a Timeout, a C or JS step, a misuse) a
 * FutoInError of its own, as spec 1.7 asks ("populated with FutoIn errors
 * as well"), never an earlier error's exception. A value another language
 * stored there stays. */
static void last_exception_for(FutoInAsyncSteps* bsi, const char* code)
{
    FutoInBinaryValue* slot = bsi->api->stateVariable(bsi, NULL, "last_exception", NULL, NULL);
    if (!slot || !code || (slot->type && slot->type != &k_py_object && slot->type != &futoin_error_code_type)) {
        return; /* a value of C code's own */
    }
    const char* info = bsi->api->stateVariable(bsi, NULL, "error_info", NULL, NULL);
    if (slot->type == &k_py_object && raised_as(bsi, code, info)) {
        return;
    }
    PyObject* c = str_of(code);
    PyObject* i = c ? str_of(info) : NULL;
    PyObject* e = i ? PyObject_CallFunctionObjArgs(g_FutoInError, c, i, NULL) : NULL;
    Py_XDECREF(c);
    Py_XDECREF(i);
    if (e) {
        set_last_exception(bsi, e, code, info);
        futoin_steps_last_exception_mark(bsi, 0); /* it stands for this error */
        Py_DECREF(e);
    }
    PyErr_Clear();
}

/* ---- trampolines ---- */

static void* state_dict_alloc(void* data);
static void state_dict_cleanup(void* data, void* value);

/* per root: the engine's error_info and last_exception as a state read
 * last mirrored them (its error generation and last_exception value), and
 * the error whose failing step async_stack holds */
typedef struct
{
    uint32_t gen;
    int mirrored; /* 0: never read yet */
    const FutoInType* le_type;
    const void* le_p;
    int noted;         /* async_stack holds the step that failed in error generation noted_gen */
    uint32_t noted_gen;
} state_seen;

static void* state_seen_alloc(void* data)
{
    (void)data;
    return calloc(1, sizeof(state_seen));
}

static void state_seen_free(void* data, void* value)
{
    (void)data;
    free(value);
}

/* the engine's own flows only: others have no error generation */
static state_seen* seen_of(FutoInAsyncSteps* bsi)
{
    return futoin_steps_is_native(bsi)
            ? bsi->api->stateVariable(bsi, NULL, "futoin.python.seen", state_seen_alloc, state_seen_free)
            : NULL;
}

/* async_stack holds the failing step of the error the engine has now */
static void failing_step_noted(FutoInAsyncSteps* bsi)
{
    state_seen* seen = seen_of(bsi);
    if (seen) {
        seen->noted = 1;
        seen->noted_gen = futoin_steps_error_gen(bsi);
    }
}

/* state.async_stack (spec 1.7, implementation-defined): the Python step
 * functions that failed and the error handlers called, in this run (kept
 * short: a loop recovering from errors for ever must not grow it for ever) */
static void note_async_stack(FutoInAsyncSteps* bsi, PyObject* func)
{
    PyObject *et, *ev, *etb; /* the step's exception, raised into the flow next */
    PyErr_Fetch(&et, &ev, &etb);
    PyObject* d = bsi->api->stateVariable(bsi, NULL, "futoin.python.state", state_dict_alloc, state_dict_cleanup);
    PyObject* l = d ? PyDict_GetItemString(d, "async_stack") : NULL;
    if (d && (!l || !PyList_CheckExact(l))) {
        l = PyList_New(0);
        if (l && PyDict_SetItemString(d, "async_stack", l) != 0) {
            Py_CLEAR(l);
        }
        Py_XDECREF(l); /* the dict holds it */
    }
    if (l) {
        if (PyList_GET_SIZE(l) >= 256) {
            PyList_SetSlice(l, 0, 128, NULL);
        }
        PyList_Append(l, func);
    }
    PyErr_Clear();
    PyErr_Restore(et, ev, etb);
}

/* a new run starts a new async_stack (its old list may be kept by code) */
static void reset_async_stack(FutoInAsyncSteps* bsi)
{
    PyObject* d = bsi->api->stateVariable(bsi, NULL, "futoin.python.state", NULL, NULL);
    if (d && PyDict_GetItemString(d, "async_stack")) {
        PyObject* l = PyList_New(0);
        if (!l || PyDict_SetItemString(d, "async_stack", l) != 0) {
            PyErr_Clear();
        }
        Py_XDECREF(l);
    }
}

/* contextvars: a root's flow runs its Python callbacks in a copy of the
 * context its execute() ran in, new each run, as asyncio runs a task's code
 * in the copy made when the task was created. The root holds it; its flow's
 * host data points to the root. Flows that Python did not execute (made by C)
 * have none: their callbacks run in the current one. */
static int flowctx_capture(StepsObject* root)
{
    PyObject* ctx = PyContext_CopyCurrent();
    if (!ctx) {
        return -1;
    }
    if (!root->host) {
        root->host = PyMem_Malloc(sizeof(pyhost));
        if (!root->host) {
            Py_DECREF(ctx);
            PyErr_NoMemory();
            return -1;
        }
        root->host->magic = PYHOST_MAGIC;
        root->host->root = root;
    }
    futoin_steps_set_host_data(root->bsi, root->host);
    Py_XSETREF(root->ctx, ctx);
    return 0;
}

/* around a callback: ctx entered (a new reference for flowctx_exit()),
 * NULL with none or entered already (cancel() in its own step: the
 * callback runs in it anyway) */
static PyObject* ctx_enter(PyObject* ctx)
{
    if (!ctx) {
        return NULL;
    }
    if (PyContext_Enter(ctx) != 0) {
        PyErr_Clear();
        return NULL;
    }
    Py_INCREF(ctx);
    return ctx;
}

/* around one callback of the flow: its context entered, unless it has none */
static PyObject* flowctx_enter(FutoInAsyncSteps* bsi)
{
    const StepsObject* root = root_of_flow(bsi);
    return ctx_enter(root ? root->ctx : NULL);
}

static void flowctx_exit(PyObject* ctx)
{
    /* current again once its callback returned (Context.run() restores it):
     * the exit cannot fail and leaves the callback's exception alone */
    if (ctx) {
        if (PyThreadState_GET()->context == ctx) {
            PyContext_Exit(ctx);
        }
        Py_DECREF(ctx);
    }
}

static void call_step(FutoInAsyncSteps* bsi, pyfrag* f, PyObject* func, const FutoInArgs* args,
                      PyObject* extra)
{
    StepsObject* v = view_new(bsi, f->tool);
    if (!v) {
        raise_into_flow(bsi);
        return;
    }
    PyObject* pack = args && args->arg0.type == &k_py_pack ? args->arg0.custom_data : NULL;
    Py_ssize_t nvals = pack ? PyTuple_GET_SIZE(pack) : 4;
    Py_ssize_t first = extra ? 2 : 1;
    Py_ssize_t cap = first + nvals;
    if (f->nargs >= 0 && func == f->func && 1 + f->nreq > cap) {
        cap = 1 + f->nreq;
    }
    PyObject* stack[16];
    PyObject** argv = cap <= (Py_ssize_t)(sizeof(stack) / sizeof(stack[0])) ? stack : PyMem_Malloc((size_t)cap * sizeof(PyObject*));
    if (!argv) {
        PyErr_NoMemory();
        raise_into_flow(bsi);
        view_release(v);
        return;
    }
    Py_ssize_t n = 0;
    argv[n++] = (PyObject*)v;
    if (extra) {
        argv[n++] = extra;
    }
    if (pack) {
        for (Py_ssize_t i = 0; i < nvals; ++i) {
            argv[n] = PyTuple_GET_ITEM(pack, i);
            Py_INCREF(argv[n]);
            ++n;
        }
    } else if (args) {
        /* by position: an empty slot before a value is None */
        int last = 3;
        while (last >= 0 && !args->args[last].type) {
            --last;
        }
        for (int i = 0; i <= last; ++i) {
            PyObject* o = args->args[i].type ? value_to_py(&args->args[i]) : NULL;
            if (!o) {
                PyErr_Clear();
                o = Py_None;
                Py_INCREF(o);
            }
            argv[n++] = o;
        }
    }
    Py_ssize_t got = n;
    if (f->nargs >= 0 && func == f->func) {
        /* JS-style: extra values dropped, missing required ones are None;
         * nargs/nreq count every parameter after as_, the loop index too */
        Py_ssize_t want = 1 + f->nargs;
        Py_ssize_t req = 1 + f->nreq;
        if (n > want) {
            n = want;
        }
        while (n < req) {
            argv[n++] = Py_None;
            Py_INCREF(Py_None);
            ++got;
        }
    }
    PyObject* ctx = flowctx_enter(bsi);
    v->in_cb = 1;
    PyObject* r = PyObject_Vectorcall(func, argv, (size_t)n, NULL);
    v->in_cb = 0;
    flowctx_exit(ctx);
    if (r && PyCoro_CheckExact(r)) {
        /* nothing would ever run it: close it (no "never awaited"
         * warning) and fail the step */
        PyObject* c = PyObject_CallMethod(r, "close", NULL);
        Py_XDECREF(c);
        Py_DECREF(r);
        r = NULL;
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError, "a step returned a coroutine: " ASYNC_HINT);
        }
    }
    for (Py_ssize_t i = first; i < got; ++i) {
        Py_DECREF(argv[i]);
    }
    if (argv != stack) {
        PyMem_Free(argv);
    }
    if (!r) {
        note_async_stack(bsi, func);
        raise_into_flow(bsi);
        failing_step_noted(bsi);
    } else {
        Py_DECREF(r);
    }
    view_release(v);
}

static void tr_exec(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    PyGILState_STATE g = PyGILState_Ensure();
    pyfrag* f = data;
    call_step(bsi, f, f->func, args, NULL);
    PyGILState_Release(g);
}

static void tr_error(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    PyGILState_STATE g = PyGILState_Ensure();
    pyfrag* f = data;
    state_seen* seen = seen_of(bsi);
    if (seen && (!seen->noted || seen->noted_gen != futoin_steps_error_gen(bsi))) {
        /* it failed from outside (a Timeout, an error() on it from
         * outside), or in C code: its own step is where it failed */
        if (f->func && f->func != Py_None) {
            note_async_stack(bsi, f->func);
        }
        failing_step_noted(bsi);
    }
    last_exception_for(bsi, code);
    note_async_stack(bsi, f->onerror);
    PyObject* c = str_of(code);
    if (c) {
        StepsObject* v = view_new(bsi, f->tool);
        if (v) {
            PyObject* argv[1 + EH_ARGS_MAX] = {(PyObject*)v, c, Py_None, Py_None, Py_None};
            PyObject* ctx = flowctx_enter(bsi);
            v->in_cb = 1;
            PyObject* r = PyObject_Vectorcall(f->onerror, argv, 1 + (size_t)f->ehargs, NULL);
            v->in_cb = 0;
            flowctx_exit(ctx);
            if (!r) {
                raise_into_flow(bsi);
                failing_step_noted(bsi); /* the handler, listed already */
            } else if (v->went_on) {
                /* handled: a later error of the same code and info is
                 * another one, with a last_exception of its own */
                raised_forget(bsi);
            }
            Py_XDECREF(r);
            view_release(v);
        }
        Py_DECREF(c);
    }
    if (PyErr_Occurred()) {
        raise_into_flow(bsi);
    }
    PyGILState_Release(g);
}

static void tr_loop(FutoInAsyncSteps* bsi, void* data)
{
    PyGILState_STATE g = PyGILState_Ensure();
    pyfrag* f = data;
    call_step(bsi, f, f->func, NULL, NULL);
    PyGILState_Release(g);
}

static void tr_repeat(FutoInAsyncSteps* bsi, void* data, size_t i)
{
    PyGILState_STATE g = PyGILState_Ensure();
    pyfrag* f = data;
    PyObject* idx = PyLong_FromSize_t(i);
    if (idx) {
        call_step(bsi, f, f->func, NULL, idx);
        Py_DECREF(idx);
    } else {
        raise_into_flow(bsi);
    }
    PyGILState_Release(g);
}

static void tr_cancel(FutoInAsyncSteps* bsi, void* data)
{
    PyGILState_STATE g = PyGILState_Ensure();
    pyfrag* f = data;
    StepsObject* v = view_new(bsi, f->tool);
    if (v) {
        PyObject* argv[1] = {(PyObject*)v};
        PyObject* ctx = flowctx_enter(bsi);
        v->in_cancel = 1;
        PyObject* r = PyObject_Vectorcall(f->func, argv, 1, NULL);
        v->in_cancel = 0;
        flowctx_exit(ctx);
        if (!r) {
            /* a cancel handler cannot fail the flow: report and go on */
            unraisable(f->func);
        }
        Py_XDECREF(r);
        view_release(v);
    }
    PyErr_Clear();
    PyGILState_Release(g);
}

/* ---- C steps ---- */

typedef struct CStepObject
{
    PyObject_HEAD
    void* fn;
    void* data;
    PyObject* keep; /* keeps the library or ctypes object alive */
} CStepObject;

static PyTypeObject CStepType;

/* a C step with a Python error handler: the C function gets its own data */
static void tr_cexec(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    const CStepObject* c = (const CStepObject*)((pyfrag*)data)->func; /* fixed once made: no GIL */
    FutoInAsyncSteps_execute_callback fn;
    memcpy(&fn, &c->fn, sizeof(fn));
    fn(bsi, c->data, args);
}

/* ---- AsyncSteps methods ---- */

static int check_usable(StepsObject* self)
{
    if (!self->bsi) {
        PyErr_SetString(PyExc_RuntimeError, self->owns || self->model
                ? "AsyncSteps object was freed"
                : "this step has ended: its AsyncSteps object is out of service");
        return -1;
    }
    return 0;
}

static PyObject* make_error(PyObject* code, PyObject* info);

/* building on a step is for its flow's loop thread: from another one it
 * would race the engine over the step (a sub-step added while the callback
 * runs replaced its wait_external()); only the completions go from there,
 * as posts */
static int check_step_thread(StepsObject* self, const char* what)
{
    if (!self->owns && !on_loop_thread(self->bsi)) {
        PyErr_Format(PyExc_RuntimeError,
                     "%s on a step's interface from another thread than its flow's "
                     "(only success(), error() and cancel() may come from there)",
                     what);
        return -1;
    }
    return 0;
}

static int check_not_cancelled(StepsObject* self, const char* what);

/* usable, and not a root whose flow runs: a root-level add() then is
 * InternalError, as in the JS reference; from outside the flow's callbacks
 * it fails the flow where it waits, as the reference's root error() */
static int check_addable(StepsObject* self, const char* what)
{
    if (check_usable(self) || check_step_thread(self, what) || check_not_cancelled(self, what)) {
        return -1;
    }
    if (!self->owns || self->bsi->api->isValid(self->bsi)) {
        return 0;
    }
    static const char code[] = "InternalError", info[] = "Top level add in execution";
    PyObject* c = PyUnicode_FromString(code);
    PyObject* i = c ? PyUnicode_FromString(info) : NULL;
    PyObject* exc = i ? make_error(c, i) : NULL;
    Py_XDECREF(c);
    Py_XDECREF(i);
    if (!exc) {
        return -1;
    }
    if (futoin_steps_is_native(self->bsi) && on_loop_thread(self->bsi)) {
        set_last_exception(self->bsi, exc, code, info);
        futoin_steps_fail_waiting(self->bsi, code, info);
    }
    PyErr_SetObject((PyObject*)Py_TYPE(exc), exc);
    Py_DECREF(exc);
    return -1;
}

/* usable, and the interface of a step: success(), setTimeout() & co. on a
 * root of ours only printed a misuse line */
/* in its cancel handler, a step is cancelled: nothing completes it, as the
 * JS reference's InternalError there (state stays readable); so is a step
 * whose callback cancelled its root, as the reference's "out of service"
 * (else what it added was dropped without a word) */
static int check_not_cancelled(StepsObject* self, const char* what)
{
    if (self->in_cancel) {
        PyErr_Format(PyExc_RuntimeError, "%s in a cancel handler: its step is cancelled", what);
        return -1;
    }
    /* (only the step's own callback can see it so: in_cb keeps the check
     * off completions from outside) */
    if (self->in_cb && on_loop_thread(self->bsi) && futoin_steps_is_cancelled(self->bsi)) {
        PyErr_Format(PyExc_RuntimeError, "%s on a step whose flow was cancelled: it is out of service", what);
        return -1;
    }
    return 0;
}

static int check_step(StepsObject* self, const char* what)
{
    if (check_usable(self)) {
        return -1;
    }
    if (self->owns) {
        PyErr_Format(PyExc_RuntimeError, "%s is for the interface of a step (as_ in its callback), not a root", what);
        return -1;
    }
    return check_not_cancelled(self, what);
}

/* what makes a step wait (set_timeout() & co.): on a step, on its loop thread */
static int check_waitable(StepsObject* self, const char* what)
{
    return check_step(self, what) || check_step_thread(self, what) ? -1 : 0;
}

/* a callback: callable, but no AsyncSteps (calling one is its success()) */
static int step_callable(PyObject* o)
{
    return PyCallable_Check(o) && !PyObject_TypeCheck(o, &StepsType);
}

/* a step function or loop body: callable and not an async def */
static int body_check(PyObject* o, const char* what)
{
    if (!step_callable(o)) {
        PyErr_Format(PyExc_TypeError, "%s must be callable, not %.100s", what, Py_TYPE(o)->tp_name);
        return -1;
    }
    if (is_async_def(o)) {
        PyErr_Format(PyExc_TypeError, "%s is an async def: " ASYNC_HINT, what);
        return -1;
    }
    return 0;
}

static int callable_or_none(PyObject* o, const char* what)
{
    if (!o || o == Py_None) {
        return 0;
    }
    if (PyFunction_Check(o) || PyMethod_Check(o)) { /* the usual case, at once */
        if (!is_async_def(o)) {
            return 0;
        }
        PyErr_Format(PyExc_TypeError, "%s is an async def: " ASYNC_HINT, what);
        return -1;
    }
    if (!step_callable(o) && !PyObject_TypeCheck(o, &CStepType)) {
        PyErr_Format(PyExc_TypeError, "%s must be callable, not %.100s", what, Py_TYPE(o)->tp_name);
        return -1;
    }
    return 0;
}

/* the name of a recorded call, interned once */
static PyObject* model_kind(const char* kind)
{
    static const char* const names[] = {"add", "parallel", "loop", "repeat", "sync"};
    static PyObject* strs[sizeof(names) / sizeof(names[0])];
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); ++i) {
        if (!strcmp(kind, names[i])) {
            if (!strs[i]) {
                strs[i] = PyUnicode_InternFromString(names[i]);
            }
            return strs[i];
        }
    }
    return NULL;
}

/* a record is its kind, then its n arguments, flat in the model list: no
 * object per record for the GC to count and walk (a root of 10^5 adds) */
static void record_model(StepsObject* self, const char* kind, PyObject* const* args, Py_ssize_t n)
{
    if (!self->model) {
        return;
    }
    if (self->model == Py_None) {
        /* a root records from its first add: make the list then */
        PyObject* l = PyList_New(0);
        if (!l) {
            PyErr_Clear();
            return;
        }
        Py_SETREF(self->model, l);
    }
    PyObject* model = self->model;
    Py_ssize_t len = PyList_GET_SIZE(model);
    PyObject* k = model_kind(kind);
    int failed = !k || PyList_Append(model, k) != 0;
    for (Py_ssize_t i = 0; i < n && !failed; ++i) {
        failed = PyList_Append(model, args[i] ? args[i] : Py_None) != 0;
    }
    if (failed) {
        PyErr_Clear();
        PyList_SetSlice(model, len, PY_SSIZE_T_MAX, NULL); /* whole records only */
        PyErr_Clear();
    }
}

/* add a step with (func, onerror), Python callables or CStep objects */
static int add_step(StepsObject* self, FutoInAsyncSteps* target, PyObject* func, PyObject* onerror)
{
    self->went_on = 1;
    if (PyObject_TypeCheck(func, &CStepType)) {
        CStepObject* c = (CStepObject*)func;
        if (!c->fn) {
            PyErr_SetString(PyExc_TypeError, "this CStep has no C function: CStep.__init__() was not called");
            return -1;
        }
        PyObject* eh = PyObject_GetAttrString(func, "onerror");
        void* ehfn = NULL;
        if (eh && PyObject_TypeCheck(eh, &CStepType)) {
            ehfn = ((CStepObject*)eh)->fn;
        }
        PyErr_Clear();
        Py_XDECREF(eh);
        if (onerror && onerror != Py_None) {
            if (ehfn || PyObject_TypeCheck(onerror, &CStepType)) {
                PyErr_SetString(PyExc_TypeError,
                                "a C step takes one error handler: a Python one here, or a C one as "
                                "CStep(..., onerror=...)");
                return -1;
            }
            /* a Python handler: the C function is called with its own data */
            pyfrag* f = pyfrag_new(self, target, func, onerror, self->tool);
            if (!f) {
                return -1;
            }
            pyfrag_hold(self, target, f);
            target->api->add(target, f, tr_cexec, tr_error);
            return 0;
        }
        FutoInAsyncSteps_execute_callback f;
        FutoInAsyncSteps_error_callback e;
        memcpy(&f, &c->fn, sizeof(f));
        memcpy(&e, &ehfn, sizeof(e));
        target->api->add(target, c->data, f, e);
        return 0;
    }
    pyfrag* f = pyfrag_new(self, target, func, onerror == Py_None ? NULL : onerror, self->tool);
    if (!f) {
        return -1;
    }
    pyfrag_hold(self, target, f);
    target->api->add(target, f, tr_exec, f->onerror ? tr_error : NULL);
    return 0;
}

static PyObject* Steps_add(StepsObject* self, PyObject* const* args, Py_ssize_t nargsf, PyObject* kwnames)
{
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    PyObject* func = n > 0 ? args[0] : NULL;
    PyObject* onerror = n > 1 ? args[1] : Py_None;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    if (n > 2 || n + nkw > 2) {
        PyErr_SetString(PyExc_TypeError, "add() takes func and an optional onerror");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < nkw; ++i) {
        const char* name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, i));
        if (name && !strcmp(name, "func") && !func) {
            func = args[n + i];
        } else if (name && !strcmp(name, "onerror") && n < 2) {
            onerror = args[n + i];
        } else {
            PyErr_Format(PyExc_TypeError, "add() got an unexpected keyword argument '%s'", name ? name : "?");
            return NULL;
        }
    }
    if (!func) {
        PyErr_SetString(PyExc_TypeError, "add() missing the step function");
        return NULL;
    }
    if (check_addable(self, "add()") || callable_or_none(func, "step function") || callable_or_none(onerror, "onerror")) {
        return NULL;
    }
    if (func == Py_None) {
        PyErr_SetString(PyExc_TypeError, "step function must be callable, not None");
        return NULL;
    }
    if (add_step(self, self->bsi, func, onerror) != 0) {
        return NULL;
    }
    PyObject* rec[2] = {func, onerror};
    record_model(self, "add", rec, 2);
    Py_INCREF(self);
    return (PyObject*)self;
}

/* add without recording it in the model (internal steps of the wrapper) */
static PyObject* Steps_add_hidden(StepsObject* self, PyObject* func)
{
    if (check_usable(self) || callable_or_none(func, "step function")) {
        return NULL;
    }
    if (add_step(self, self->bsi, func, Py_None) != 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject* Steps_parallel(StepsObject* self, PyObject* args, PyObject* kw)
{
    static char* kwlist[] = {"onerror", NULL};
    PyObject* onerror = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:parallel", kwlist, &onerror)
        || check_addable(self, "parallel()") || callable_or_none(onerror, "onerror")) {
        return NULL;
    }
    pyfrag* f = NULL;
    if (onerror != Py_None) {
        f = pyfrag_new(self, self->bsi, NULL, onerror, self->tool);
        if (!f) {
            return NULL;
        }
        pyfrag_hold(self, self->bsi, f);
    }
    self->went_on = 1;
    FutoInAsyncSteps* p = self->bsi->api->parallel(self->bsi, f, f ? tr_error : NULL);
    StepsObject* pv = view_new(p, self->tool);
    if (pv) {
        view_hold_root(pv);
        view_link(pv); /* the caller keeps it */
        if (self->owns) {
            pv->par_root = self;
            Py_INCREF(self);
        }
    }
    if (pv && self->model) {
        /* branches added to it are recorded in the root's model too */
        pv->model = PyList_New(0);
        PyObject* rec[2] = {onerror, pv->model};
        record_model(self, "parallel", rec, 2);
    }
    return (PyObject*)pv;
}

static PyObject* Steps_success(StepsObject* self, PyObject* const* args, Py_ssize_t n)
{
    if (check_step(self, "success()")) {
        return NULL;
    }
    FutoInArgs a;
    if (args_from_tuple(args, n, &a) != 0) {
        return NULL;
    }
    FutoInAsyncSteps* bsi = self->bsi;
    self->went_on = 1;
    if (!PyGILState_Check() || !bsi->api->is_same_thread(bsi)) {
        /* from another thread: posts without blocking; no GIL needed */
        Py_BEGIN_ALLOW_THREADS bsi->api->success(bsi, &a);
        Py_END_ALLOW_THREADS
    } else {
        bsi->api->success(bsi, &a);
    }
    Py_RETURN_NONE;
}

/* error(code, info=None): inside the callback it raises and the trampoline
 * reports it; from outside it reports now and raises to the caller. */
static PyObject* make_error(PyObject* code, PyObject* info)
{
    return PyObject_CallFunctionObjArgs(g_FutoInError, code, info ? info : Py_None, NULL);
}

static PyObject* Steps_error(StepsObject* self, PyObject* args, PyObject* kw)
{
    static char* kwlist[] = {"code", "info", NULL};
    PyObject* code;
    PyObject* info = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "U|O:error", kwlist, &code, &info) || check_usable(self)
        || check_not_cancelled(self, "error()")) {
        return NULL;
    }
    if (info != Py_None && !PyUnicode_Check(info)) {
        PyErr_SetString(PyExc_TypeError, "error info must be a str or None");
        return NULL;
    }
    const char* code_c = c_text(code, "the error code");
    const char* info_c = !code_c || info == Py_None ? NULL : c_text(info, "the error info");
    if (!code_c || (info != Py_None && !info_c)) {
        return NULL;
    }
    PyObject* exc = make_error(code, info == Py_None ? NULL : info);
    if (!exc) {
        return NULL;
    }
    if (futoin_steps_is_root(self->bsi) == 1 && on_loop_thread(self->bsi)) {
        /* a root: its running flow fails at the step it waits at, as
         * futoin-asyncsteps' root error(); an idle root only raises */
        set_last_exception(self->bsi, exc, code_c, info_c);
        futoin_steps_fail_waiting(self->bsi, code_c, info_c);
    } else if (!self->in_cb || !on_loop_thread(self->bsi)) {
        /* from outside the step's callback (or another thread): report now;
         * inside it, the trampoline reports the raised exception */
        external_error(self->bsi, code_c, info_c, exc);
    }
    PyErr_SetObject((PyObject*)Py_TYPE(exc), exc);
    Py_DECREF(exc);
    return NULL;
}

static PyObject* Steps_fail(StepsObject* self, PyObject* args)
{
    const char* code;
    PyObject* info = Py_None;
    PyObject* exc = Py_None;
    if (!PyArg_ParseTuple(args, "s|OO:_fail", &code, &info, &exc) || check_usable(self)) {
        return NULL;
    }
    const char* info_c = info == Py_None ? NULL : PyUnicode_Check(info) ? c_text(info, "the error info") : NULL;
    if (info != Py_None && !info_c) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError, "error info must be a str or None");
        }
        return NULL;
    }
    external_error(self->bsi, code, info_c, exc == Py_None ? NULL : exc);
    if (PyErr_Occurred()) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject* loop_control(StepsObject* self, PyObject* args, PyObject* kw, const char* code)
{
    static char* kwlist[] = {"label", NULL};
    PyObject* label = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O", kwlist, &label) || check_usable(self)) {
        return NULL;
    }
    if (label != Py_None && !PyUnicode_Check(label)) {
        PyErr_SetString(PyExc_TypeError, "loop label must be a str or None");
        return NULL;
    }
    const char* label_c = label == Py_None ? "" : c_text(label, "the loop label");
    if (!label_c || check_step(self, code[4] == 'B' ? "break_loop()" : "continue_loop()")) {
        return NULL;
    }
    PyObject* c = PyUnicode_FromString(code);
    PyObject* info = label == Py_None ? PyUnicode_FromString("") : (Py_INCREF(label), label);
    PyObject* exc = c && info ? make_error(c, info) : NULL;
    Py_XDECREF(c);
    Py_XDECREF(info);
    if (!exc) {
        return NULL;
    }
    if (!self->in_cb || !on_loop_thread(self->bsi)) {
        external_error(self->bsi, code, label_c, NULL);
    }
    PyErr_SetObject((PyObject*)Py_TYPE(exc), exc);
    Py_DECREF(exc);
    return NULL;
}

static PyObject* Steps_break_loop(StepsObject* self, PyObject* args, PyObject* kw)
{
    return loop_control(self, args, kw, "LoopBreak");
}

static PyObject* Steps_continue_loop(StepsObject* self, PyObject* args, PyObject* kw)
{
    return loop_control(self, args, kw, "LoopCont");
}

static PyObject* Steps_set_timeout(StepsObject* self, PyObject* arg)
{
    if (!PyLong_Check(arg)) {
        return PyErr_Format(PyExc_TypeError, "set_timeout() takes an int of milliseconds, not %.100s",
                            Py_TYPE(arg)->tp_name);
    }
    unsigned long ms = PyLong_AsUnsignedLong(arg);
    if ((ms == (unsigned long)-1 && PyErr_Occurred()) || check_usable(self)) {
        if (PyErr_ExceptionMatches(PyExc_TypeError) || PyErr_ExceptionMatches(PyExc_OverflowError)) {
            PyErr_SetString(PyExc_ValueError, "timeout must be a non-negative int of milliseconds");
        }
        return NULL;
    }
    if (ms > UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "timeout too large");
        return NULL;
    }
    if (check_waitable(self, "set_timeout()")) {
        return NULL;
    }
    self->bsi->api->setTimeout(self->bsi, (uint32_t)ms);
    Py_RETURN_NONE;
}

static PyObject* Steps_set_cancel(StepsObject* self, PyObject* func)
{
    if (check_usable(self)) {
        return NULL;
    }
    if (!step_callable(func)) {
        PyErr_SetString(PyExc_TypeError, "cancel handler must be callable");
        return NULL;
    }
    if (is_async_def(func)) {
        PyErr_SetString(PyExc_TypeError, "cancel handler is an async def: the engine never awaits it");
        return NULL;
    }
    if (check_waitable(self, "set_cancel()")) {
        return NULL;
    }
    pyfrag* f = pyfrag_new(self, self->bsi, func, NULL, self->tool);
    if (!f) {
        return NULL;
    }
    pyfrag_hold(self, self->bsi, f);
    self->bsi->api->setCancel(self->bsi, f, tr_cancel);
    Py_RETURN_NONE;
}

static PyObject* Steps_wait_external(StepsObject* self, PyObject* unused)
{
    (void)unused;
    if (check_waitable(self, "wait_external()")) {
        return NULL;
    }
    self->went_on = 1;
    self->bsi->api->waitExternal(self->bsi);
    Py_RETURN_NONE;
}

static int parse_label(PyObject* label, const char** out)
{
    *out = NULL;
    if (label && label != Py_None) {
        if (!PyUnicode_Check(label)) {
            PyErr_SetString(PyExc_TypeError, "loop label must be a str or None");
            return -1;
        }
        *out = c_text(label, "the loop label");
        if (!*out) {
            return -1;
        }
    }
    return 0;
}

static PyObject* Steps_loop(StepsObject* self, PyObject* args, PyObject* kw)
{
    static char* kwlist[] = {"func", "label", NULL};
    PyObject* func;
    PyObject* label = Py_None;
    const char* l;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O:loop", kwlist, &func, &label) || check_addable(self, "loop()")
        || parse_label(label, &l)) {
        return NULL;
    }
    if (body_check(func, "loop body")) {
        return NULL;
    }
    pyfrag* f = pyfrag_new(self, self->bsi, func, NULL, self->tool);
    if (!f) {
        return NULL;
    }
    pyfrag_hold(self, self->bsi, f);
    f->nargs = -1;
    self->went_on = 1;
    self->bsi->api->loop(self->bsi, f, tr_loop, l);
    PyObject* rec[2] = {func, label};
    record_model(self, "loop", rec, 2);
    Py_INCREF(self);
    return (PyObject*)self;
}

/* a count or size past Py_ssize_t is a bad value (ValueError), as a
 * negative one is, not an arithmetic error */
static void overflow_is_value_error(void)
{
    if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
        PyErr_Clear();
        PyErr_SetString(PyExc_ValueError, "the number is too large");
    }
}

static PyObject* Steps_repeat(StepsObject* self, PyObject* args, PyObject* kw)
{
    static char* kwlist[] = {"count", "func", "label", NULL};
    Py_ssize_t count;
    PyObject* func;
    PyObject* label = Py_None;
    const char* l;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "nO|O:repeat", kwlist, &count, &func, &label)
        || check_addable(self, "repeat()") || parse_label(label, &l)) {
        overflow_is_value_error();
        return NULL;
    }
    if (count < 0) {
        PyErr_SetString(PyExc_ValueError, "repeat count must be >= 0");
        return NULL;
    }
    if (body_check(func, "repeat body")) {
        return NULL;
    }
    pyfrag* f = pyfrag_new(self, self->bsi, func, NULL, self->tool);
    if (!f) {
        return NULL;
    }
    pyfrag_hold(self, self->bsi, f);
    f->nargs = -1;
    self->went_on = 1;
    self->bsi->api->repeat(self->bsi, f, (size_t)count, tr_repeat, l);
    PyObject* c = PyLong_FromSsize_t(count);
    PyObject* rec[3] = {c, func, label};
    record_model(self, "repeat", rec, 3);
    Py_XDECREF(c);
    Py_INCREF(self);
    return (PyObject*)self;
}

/* sync(obj, func, onerror=None): our Mutex/Throttle/Limiter or any ISync */
typedef struct pysync
{
    FutoInSync base;
    PyObject* obj;
} pysync;

static void pysync_call(FutoInAsyncSteps* bsi, FutoInSync* sync, const char* method)
{
    PyGILState_STATE g = PyGILState_Ensure();
    pysync* s = (pysync*)sync;
    /* the flow's tool: a view kept by another thread keeps its run() waiting */
    StepsObject* v = view_new(bsi, tool_object_of(bsi));
    if (v) {
        PyObject* ctx = flowctx_enter(bsi);
        v->in_cb = 1;
        PyObject* r = PyObject_CallMethod(s->obj, method, "O", v);
        v->in_cb = 0;
        flowctx_exit(ctx);
        if (!r) {
            if (method[0] == 'l') {
                raise_into_flow(bsi);
            } else {
                unraisable(s->obj);
            }
        }
        Py_XDECREF(r);
        view_release(v);
    }
    PyErr_Clear();
    PyGILState_Release(g);
}

static void pysync_lock(FutoInAsyncSteps* bsi, FutoInSync* sync)
{
    pysync_call(bsi, sync, "lock");
}

static void pysync_unlock(FutoInAsyncSteps* bsi, FutoInSync* sync)
{
    pysync_call(bsi, sync, "unlock");
}

static const FutoInSyncAPI k_pysync_api = {{{pysync_lock, pysync_unlock}}};

/* the adapter an ISync keeps (in its __dict__): a deep copy or pickle of
 * the object gets the int 0 in its place (a capsule refused both), a shallow
 * copy shares it and isync_adapter_kept() refuses it there; either copy
 * gets an adapter of its own when a flow uses it */
typedef struct
{
    PyObject_HEAD
    pysync s;
} SyncAdapterObject;

static PyObject* SyncAdapter_reduce(PyObject* self, PyObject* unused)
{
    (void)self;
    (void)unused;
    return Py_BuildValue("(O())", (PyObject*)&PyLong_Type);
}

static PyMethodDef SyncAdapter_methods[] = {
        {"__reduce__", SyncAdapter_reduce, METH_NOARGS, NULL},
        {NULL, NULL, 0, NULL},
};

static PyTypeObject SyncAdapterType = {
        PyVarObject_HEAD_INIT(NULL, 0).tp_name = "futoin_polyglot._futoin.SyncAdapter",
        .tp_basicsize = sizeof(SyncAdapterObject),
        .tp_flags = Py_TPFLAGS_DEFAULT,
        .tp_methods = SyncAdapter_methods,
        .tp_doc = "the FutoInSync adapter of an ISync object",
};

/* where an ISync keeps its adapter: a name of ours (the object's own
 * attributes are its business), written past any __setattr__ of its class */
static const char k_isync_attr[] = "_futoin_isync_adapter";

/* obj's adapter, if what obj holds under k_isync_attr is one made for obj
 * itself: a copy of the object (copy.copy() copies __dict__) holds its
 * original's, which must not serve it (the original may be gone) */
static FutoInSync* isync_adapter_kept(PyObject* obj, PyObject** hold)
{
    PyObject* cap = PyObject_GetAttrString(obj, k_isync_attr);
    FutoInSync* s = NULL;
    if (cap && Py_IS_TYPE(cap, &SyncAdapterType)) {
        pysync* p = &((SyncAdapterObject*)cap)->s;
        s = p->obj == obj ? &p->base : NULL;
    }
    if (s && hold) {
        *hold = cap; /* the step holds it too: the attribute may go meanwhile */
    } else {
        Py_XDECREF(cap);
    }
    PyErr_Clear();
    return s;
}

/* The FutoInSync* of a sync object: our primitives carry `_sync` (a capsule
 * of the core); an ISync gets an adapter once, kept by the object. *hold
 * (when given) gets the adapter, for the caller to keep as long
 * as C may use it. An object that cannot keep one (no __dict__) gets one
 * per call (with NULL hold an error, for sync_address(), which hands out a
 * lasting pointer). */
static FutoInSync* sync_of(PyObject* obj, PyObject** hold)
{
    PyObject* core = PyObject_GetAttrString(obj, "_sync");
    if (core && PyCapsule_IsValid(core, "futoin.core_sync")) {
        FutoInSync* s = PyCapsule_GetPointer(core, "futoin.core_sync");
        if (hold) {
            *hold = core; /* the capsule owns the core object: kept while C uses it */
            return s;
        }
        if (Py_REFCNT(core) == 1) {
            /* made anew on this read: nothing would keep what C is handed */
            Py_DECREF(core);
            PyErr_Format(PyExc_TypeError, "the _sync of a %.100s is made anew on each read: nothing keeps it for C code",
                         Py_TYPE(obj)->tp_name);
            return NULL;
        }
        Py_DECREF(core);
        return s;
    }
    if (!core && !PyErr_ExceptionMatches(PyExc_AttributeError)) {
        return NULL; /* our primitive could not bind to a tool */
    }
    Py_XDECREF(core); /* any other `_sync` is the object's own */
    PyErr_Clear();
    FutoInSync* kept = isync_adapter_kept(obj, hold);
    if (kept) {
        return kept;
    }
    if (!PyObject_HasAttrString(obj, "lock") || !PyObject_HasAttrString(obj, "unlock")) {
        PyErr_Format(PyExc_TypeError, "sync object must be an ISync (lock/unlock), not %.100s",
                     Py_TYPE(obj)->tp_name);
        return NULL;
    }
    PyObject* cap = (PyObject*)PyObject_New(SyncAdapterObject, &SyncAdapterType);
    if (!cap) {
        return NULL;
    }
    pysync* s = &((SyncAdapterObject*)cap)->s;
    *(const FutoInSyncAPI**)&s->base.api = &k_pysync_api;
    s->obj = obj; /* borrowed: whoever holds the adapter holds obj too */
    PyObject* name = PyUnicode_InternFromString(k_isync_attr);
    int stored = name ? PyObject_GenericSetAttr(obj, name, cap) : -1;
    Py_XDECREF(name);
    if (stored == 0) {
        if (hold) {
            *hold = cap;
        } else {
            Py_DECREF(cap);
        }
        return &s->base;
    }
    if (!hold || !name || !PyErr_ExceptionMatches(PyExc_AttributeError)) {
        if (name && PyErr_ExceptionMatches(PyExc_AttributeError)) {
            PyErr_Format(PyExc_TypeError,
                         "a %.100s has no attribute dict to keep its sync adapter in, which C code may use "
                         "for as long as the object lives: give its class a __dict__",
                         Py_TYPE(obj)->tp_name);
        }
        Py_DECREF(cap);
        return NULL;
    }
    PyErr_Clear();
    *hold = cap;
    return &s->base;
}

static PyObject* Steps_sync(StepsObject* self, PyObject* args, PyObject* kw)
{
    static char* kwlist[] = {"obj", "func", "onerror", NULL};
    PyObject *obj, *func, *onerror = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O:sync", kwlist, &obj, &func, &onerror) || check_addable(self, "sync()")
        || callable_or_none(onerror, "onerror")) {
        return NULL;
    }
    if (body_check(func, "step function")) {
        return NULL;
    }
    PyObject* adapter = NULL;
    FutoInSync* s = sync_of(obj, &adapter);
    if (!s) {
        return NULL;
    }
    pyfrag* f = pyfrag_new(self, self->bsi, func, onerror == Py_None ? NULL : onerror, self->tool);
    if (!f) {
        Py_XDECREF(adapter);
        return NULL;
    }
    pyfrag_hold(self, self->bsi, f);
    /* the step also keeps the sync object alive, and an ISync's adapter
     * (its attribute may go meanwhile) */
    PyObject* held = adapter;
    if (adapter) {
        held = PyTuple_Pack(2, obj, adapter);
        Py_DECREF(adapter);
    } else {
        held = obj;
        Py_INCREF(held);
    }
    pyfrag* keep = held ? pyfrag_new(self, self->bsi, held, NULL, NULL) : NULL;
    Py_XDECREF(held);
    if (!keep) {
        return NULL;
    }
    pyfrag_hold(self, self->bsi, keep);
    self->went_on = 1;
    self->bsi->api->addSync(self->bsi, s, f, tr_exec, f->onerror ? tr_error : NULL);
    PyObject* rec[3] = {obj, func, onerror};
    record_model(self, "sync", rec, 3);
    Py_INCREF(self);
    return (PyObject*)self;
}

/* stack(size, cleanup=None): a bytearray living as long as the step;
 * cleanup(buffer) runs when the step ends (spec 1.14, for Python) */
static void stack_release(void* p)
{
    pyfrag* f = p;
    PyGILState_STATE g = PyGILState_Ensure();
    if (f->onerror) {
        PyObject* r = PyObject_CallOneArg(f->onerror, f->func);
        if (!r) {
            unraisable(f->onerror);
        }
        Py_XDECREF(r);
    }
    Py_XDECREF(f->func);
    Py_XDECREF(f->onerror);
    PyErr_Clear();
    PyGILState_Release(g);
}

static PyObject* Steps_stack(StepsObject* self, PyObject* args, PyObject* kw)
{
    static char* kwlist[] = {"size", "cleanup", NULL};
    Py_ssize_t size;
    PyObject* cleanup = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "n|O:stack", kwlist, &size, &cleanup) || check_usable(self)
        || callable_or_none(cleanup, "cleanup")) {
        overflow_is_value_error();
        return NULL;
    }
    if (size < 0) {
        PyErr_SetString(PyExc_ValueError, "stack size must be >= 0");
        return NULL;
    }
    PyObject* buf = PyByteArray_FromStringAndSize(NULL, size);
    if (!buf) {
        return NULL;
    }
    memset(PyByteArray_AS_STRING(buf), 0, (size_t)size);
    pyfrag* f = self->bsi->api->stack(self->bsi, sizeof(pyfrag), stack_release);
    if (!f) {
        Py_DECREF(buf);
        PyErr_SetString(PyExc_RuntimeError, "this AsyncSteps object is not active");
        return NULL;
    }
    memset(f, 0, sizeof(*f));
    Py_INCREF(buf);
    f->func = buf;
    f->onerror = cleanup == Py_None ? NULL : (Py_INCREF(cleanup), cleanup);
    return buf;
}

/* _defer(ms, func) -> handle: func() after ms on the flow's tool; also the
 * callbacks of Tool.immediate()/deferred() (owner: that tool) */
typedef struct deferred
{
    PyObject* func; /* NULL once fired or cancelled */
    PyObject* ctx;  /* Tool's: func runs in it, as loop.call_soon() callbacks (NULL with func) */
    FutoInHandle h;
    FutoInAsyncSteps* bsi;
    int orphan; /* its capsule or Handle is gone: the timer frees it */
    int firing; /* func runs: whoever lets go of it meanwhile leaves it to fire() */
    int remote;  /* scheduled from another thread: its handle cancels from any thread */
    int in_core; /* cancelled off the loop thread: fire() may still come (the loop took it first) */
    int posted;  /* deferred_after_cancel() is to come: it lets go of d */
    ToolObject* owner; /* a Tool's: on its pending list while func is set (or in_core) */
    struct deferred* next;
    struct deferred* prev;
} deferred;

static void deferred_unlink(deferred* d)
{
    if (!d->owner) {
        return;
    }
    if (d->prev) {
        d->prev->next = d->next;
    } else {
        d->owner->pending = d->next;
    }
    if (d->next) {
        d->next->prev = d->prev;
    }
    d->owner = NULL;
    d->next = d->prev = NULL;
}

static void deferred_fire(void* data)
{
    deferred* d = data;
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject* func = d->func;
    PyObject* ctx = d->ctx;
    d->func = d->ctx = NULL;
    deferred_unlink(d);
    d->firing = 1;
    if (func) {
        PyObject* entered = ctx_enter(ctx);
        PyObject* r = PyObject_CallNoArgs(func);
        if (!r) {
            unraisable(func);
        }
        flowctx_exit(entered);
        Py_XDECREF(r);
        Py_DECREF(func);
    }
    Py_XDECREF(ctx);
    d->firing = 0;
    d->in_core = 0;
    if (d->orphan && !d->posted) {
        PyMem_Free(d);
    }
    PyErr_Clear();
    PyGILState_Release(g);
}

/* its capsule or Handle lets go of d: freed now, or by deferred_fire()
 * (or with its tool) while pending or firing */
static void deferred_let_go(deferred* d)
{
    if (d->func || d->firing || d->in_core || d->posted) {
        d->orphan = 1;
    } else {
        PyMem_Free(d);
    }
}

/* posted by a cancel from another thread, so it runs on the loop thread
 * after the core dropped the timer or immediate: fire() came before (the
 * loop took it first) or never will */
static void deferred_after_cancel(void* data)
{
    deferred* d = data;
    PyGILState_STATE g = PyGILState_Ensure();
    d->posted = 0;
    if (d->in_core) {
        d->in_core = 0;
        deferred_unlink(d);
    }
    if (d->orphan && !d->firing) {
        PyMem_Free(d);
    }
    PyGILState_Release(g);
}

/* drop the callback if it has not run (harmless after); `via`: a live
 * AsyncSteps of its tool */
static void deferred_cancel(deferred* d, FutoInAsyncSteps* via)
{
    if (!d->func) {
        return;
    }
    /* settled before the references go (their finalizers may let the loop
     * thread run) */
    PyObject* func = d->func;
    PyObject* ctx = d->ctx;
    d->func = d->ctx = NULL;
    if (d->remote || via->api->is_same_thread(via)) {
        via->api->sched_cancel(via, &d->h);
        deferred_unlink(d);
    } else {
        /* made on the loop thread: until the post (or with its tool if that
         * goes first) it stays on its tool's list, and a fire() runs nothing */
        d->in_core = 1;
        if (d->owner && futoin_tool_post(d->owner->tool, deferred_after_cancel, d) == 0) {
            /* the core takes it off its queue or heap (its callback may be
             * on its way already); the post, behind this under the GIL,
             * settles which */
            d->posted = 1;
            via->api->sched_cancel(via, &d->h);
        }
    }
    Py_DECREF(func);
    Py_XDECREF(ctx);
}

static void deferred_capsule_free(PyObject* cap)
{
    deferred_let_go(PyCapsule_GetPointer(cap, "futoin.deferred"));
}

static PyObject* Steps_defer(StepsObject* self, PyObject* args)
{
    unsigned int ms;
    PyObject* func;
    if (!PyArg_ParseTuple(args, "IO:_defer", &ms, &func) || check_usable(self)) {
        return NULL;
    }
    deferred* d = PyMem_Calloc(1, sizeof(deferred));
    if (!d) {
        return PyErr_NoMemory();
    }
    Py_INCREF(func);
    d->func = func;
    d->bsi = self->bsi;
    d->h = self->bsi->api->sched_deferred(self->bsi, ms, d, deferred_fire);
    return PyCapsule_New(d, "futoin.deferred", deferred_capsule_free);
}

static PyObject* Steps_undefer(StepsObject* self, PyObject* cap)
{
    deferred* d = PyCapsule_GetPointer(cap, "futoin.deferred");
    if (!d || check_usable(self)) {
        return NULL;
    }
    deferred_cancel(d, self->bsi);
    Py_RETURN_NONE;
}

static PyObject* Steps_note_await(StepsObject* self, PyObject* unused)
{
    (void)unused;
    self->awaits += self->owns;
    Py_RETURN_NONE;
}

/* its flow ended: the await_() steps among its own that never ran close
 * their coroutines (a garbage cycle would warn "never awaited" first) */
static PyObject* Steps_flow_ended(StepsObject* self, PyObject* unused)
{
    (void)unused;
    if (!self->awaits || !g_AwaitStep) {
        Py_RETURN_NONE;
    }
    self->awaits = 0;
    PyObject* steps = PyList_New(0); /* first: closing runs Python code */
    for (pyfrag* f = self->frags; steps && f; f = f->next) {
        if (f->func && Py_TYPE(f->func) == (PyTypeObject*)g_AwaitStep && PyList_Append(steps, f->func) != 0) {
            Py_CLEAR(steps);
        }
    }
    for (Py_ssize_t i = 0; steps && i < PyList_GET_SIZE(steps); ++i) {
        PyObject* r = PyObject_CallMethod(PyList_GET_ITEM(steps, i), "_flow_ended", NULL);
        if (!r) {
            Py_DECREF(steps);
            return NULL;
        }
        Py_DECREF(r);
    }
    Py_XDECREF(steps);
    if (PyErr_Occurred()) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject* Steps_execute(StepsObject* self, PyObject* args, PyObject* kw);
static PyObject* Steps_cancel(StepsObject* self, PyObject* unused)
{
    (void)unused;
    if (check_usable(self)) {
        return NULL;
    }
    PyObject* before = g_fatal;
    ++g_entered;
    self->bsi->api->cancel(self->bsi);
    --g_entered;
    if (g_fatal != before && fatal_raise()) {
        return NULL; /* a cancel handler's KeyboardInterrupt: from this call, not a later run() */
    }
    Py_RETURN_NONE;
}

/* cancel() from another thread, run on the loop thread: the Python side of
 * a cancel (its promise's future, the registry of running roots) belongs
 * there, and so does the last reference to the root */
static void cancel_posted(void* data)
{
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject* root = data;
    PyObject* r = PyObject_CallMethod(root, "cancel", NULL);
    if (!r) {
        unraisable(root);
    }
    Py_XDECREF(r);
    Py_DECREF(root);
    PyGILState_Release(g);
}

static PyObject* Steps_cancel_on_loop(StepsObject* self, PyObject* unused)
{
    (void)unused;
    if (check_usable(self)) {
        return NULL;
    }
    FutoInAsyncSteps* bsi = self->bsi;
    if (!futoin_steps_is_native(bsi)) {
        bsi->api->cancel(bsi); /* another provider's: its own cross-thread rules */
        Py_RETURN_NONE;
    }
    Py_INCREF(self);
    if (futoin_tool_post(futoin_steps_tool(bsi), cancel_posted, self) != 0) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    Py_RETURN_NONE;
}

/* the root's unhandled-error callback: a Python callable in a pyfrag */
static void tr_unhandled(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    PyGILState_STATE g = PyGILState_Ensure();
    pyfrag* f = data;
    last_exception_for(bsi, code);
    if (f && f->onerror) {
        StepsObject* v = view_new(bsi, f->tool);
        PyObject* c = str_of(code);
        if (v && c) {
            PyObject* argv[2] = {(PyObject*)v, c};
            PyObject* ctx = flowctx_enter(bsi);
            PyObject* r = PyObject_Vectorcall(f->onerror, argv, 2, NULL);
            flowctx_exit(ctx);
            if (!r) {
                unraisable(f->onerror);
            }
            Py_XDECREF(r);
        }
        if (v) {
            v->bsi = NULL; /* its flow is over: kept, it acts on nothing (the root's memory is reused) */
            Py_DECREF(v);
        }
        Py_XDECREF(c);
    } else {
        const char* info = bsi->api->stateVariable(bsi, NULL, "error_info", NULL, NULL);
        PySys_WriteStderr("futoin_polyglot: unhandled error %s: %s\n", code, info ? info : "");
    }
    PyErr_Clear();
    PyGILState_Release(g);
}

/* the engine cancelled a running flow of our root, whoever asked (C, a
 * wrap()ped view, our cancel()): Python settles its promise and run() */
static void root_cancelled(FutoInAsyncSteps* root, void* data)
{
    (void)root;
    PyGILState_STATE g = PyGILState_Ensure();
    if (g_on_cancelled) {
        PyObject* r = PyObject_CallOneArg(g_on_cancelled, (PyObject*)data);
        if (!r) {
            unraisable(g_on_cancelled);
        }
        Py_XDECREF(r);
    }
    PyGILState_Release(g);
}

static PyObject* Steps_execute(StepsObject* self, PyObject* args, PyObject* kw)
{
    static char* kwlist[] = {"unhandled_error", NULL};
    PyObject* eh = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:execute", kwlist, &eh) || check_usable(self)
        || callable_or_none(eh, "unhandled_error")) {
        return NULL;
    }
    /* not executing: isValid() of a root (the C++ reference's bool cast) */
    int idle = self->owns && self->bsi->api->isValid(self->bsi);
    if (idle && futoin_steps_is_native(self->bsi) && flowctx_capture(self) != 0) {
        return NULL;
    }
    if (idle && futoin_steps_is_native(self->bsi)) {
        futoin_steps_set_cancelled(self->bsi, root_cancelled, self); /* cleared before the root goes */
    }
    if (idle) {
        pyfrag_drop_old_runs(self);
        reset_async_stack(self->bsi);
    }
    pyfrag* f = NULL;
    if (eh != Py_None) {
        f = pyfrag_new(self, self->bsi, NULL, eh, self->tool);
        if (!f) {
            return NULL;
        }
        pyfrag_hold(self, self->bsi, f);
    }
    self->bsi->api->execute(self->bsi, f, tr_unhandled);
    self->runs += idle;
    if (self->model && self->model != Py_None) {
        /* as futoin-asyncsteps: the run takes the queued steps; a root
         * re-used for add() + run() cycles keeps none of them (freed one
         * run later: a root run once frees them when it goes, not in run) */
        Py_XSETREF(self->spent_model, self->model);
        Py_INCREF(Py_None);
        self->model = Py_None;
    }
    Py_RETURN_NONE;
}

static PyObject* Steps_new_instance(StepsObject* self, PyObject* unused)
{
    (void)unused;
    if (check_usable(self)) {
        return NULL;
    }
    FutoInAsyncSteps* root = self->bsi->api->newInstance(self->bsi);
    if (!root) {
        PyErr_SetString(PyExc_RuntimeError, "newInstance() failed");
        return NULL;
    }
    StepsObject* v = view_new(root, self->tool);
    if (v) {
        v->owns = 1;
        v->picked_tool = self->picked_tool;
        Py_INCREF(Py_None);
        v->model = Py_None;
    }
    return (PyObject*)v;
}

static void* state_dict_alloc(void* data)
{
    (void)data;
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject* d = PyObject_CallNoArgs(g_State);
    if (!d) {
        PyErr_Clear();
    }
    PyGILState_Release(g);
    return d;
}

/* state mappings a root that moved left behind in its old root, which
 * still holds it until freed: {address: count}, under the GIL. The old
 * root's cleanup leaves the mapping alone (it is the new root's); the last
 * root holding it empties it */
static PyObject* g_moved_states;

static int state_moved_note(PyObject* d, int delta)
{
    PyObject* key = PyLong_FromVoidPtr(d);
    if (!key || (!g_moved_states && !(g_moved_states = PyDict_New()))) {
        Py_XDECREF(key);
        return -1;
    }
    PyObject* was = PyDict_GetItemWithError(g_moved_states, key);
    const long n = (was ? PyLong_AsLong(was) : 0) + delta;
    PyObject* v = n > 0 ? PyLong_FromLong(n) : NULL;
    int rc = n > 0 ? (v ? PyDict_SetItem(g_moved_states, key, v) : -1)
                   : (was ? PyDict_DelItem(g_moved_states, key) : 0);
    Py_XDECREF(v);
    Py_DECREF(key);
    return rc != 0 ? -1 : (was != NULL);
}

static void state_dict_cleanup(void* data, void* value)
{
    (void)data;
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject* d = value;
    PyObject *et, *ev, *etb;
    PyErr_Fetch(&et, &ev, &etb);
    if (d && state_moved_note(d, -1) <= 0) {
        PyErr_Clear();
        PyDict_Clear(d); /* break cycles through flows kept in state */
    }
    PyErr_Restore(et, ev, etb);
    Py_XDECREF(d);
    PyGILState_Release(g);
}

/* whether the engine's error_info and last_exception are still those a
 * read mirrored last (a provider of its own: never known, always read) */
static int state_unchanged(FutoInAsyncSteps* bsi, const FutoInBinaryValue* le, state_seen** seen_out)
{
    state_seen* seen = seen_of(bsi);
    *seen_out = seen;
    return seen && seen->mirrored && le && seen->gen == futoin_steps_error_gen(bsi) && seen->le_type == le->type
        && seen->le_p == le->p;
}

/* state: a per-root State mapping; error_info and last_exception mirror the
 * engine's, refreshed when it changed them (an error): what user code
 * writes there stays until then, as in a plain state object */
static PyObject* Steps_get_state(StepsObject* self, void* closure)
{
    (void)closure;
    if (check_usable(self)) {
        return NULL;
    }
    FutoInAsyncSteps* bsi = self->bsi;
    PyObject* d = bsi->api->stateVariable(bsi, NULL, "futoin.python.state", state_dict_alloc, state_dict_cleanup);
    if (!d) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_RuntimeError, "state is not available");
        }
        return NULL;
    }
    FutoInBinaryValue* le = bsi->api->stateVariable(bsi, NULL, "last_exception", NULL, NULL);
    state_seen* seen;
    if (state_unchanged(bsi, le, &seen) && PyDict_GetItemString(d, "async_stack")) {
        Py_INCREF(d);
        return d;
    }
    const char* info = bsi->api->stateVariable(bsi, NULL, "error_info", NULL, NULL);
    PyObject* s = str_of(info);
    if (!s || PyDict_SetItemString(d, "error_info", s) != 0) {
        Py_XDECREF(s);
        return NULL;
    }
    Py_DECREF(s);
    if (le && le->type == &futoin_error_code_type) {
        last_exception_for(bsi, le->cstr); /* a FutoIn error C raised: a FutoInError */
    }
    PyObject* exc = le && le->type ? value_to_py(le) : (Py_INCREF(Py_None), Py_None);
    if (!exc || PyDict_SetItemString(d, "last_exception", exc) != 0) {
        Py_XDECREF(exc);
        return NULL;
    }
    Py_DECREF(exc);
    if (!PyDict_GetItemString(d, "async_stack")) {
        PyObject* l = PyList_New(0);
        if (l) {
            PyDict_SetItemString(d, "async_stack", l);
            Py_DECREF(l);
        }
    }
    if (seen) {
        seen->mirrored = 1;
        seen->gen = futoin_steps_error_gen(bsi);
        seen->le_type = le ? le->type : NULL;
        seen->le_p = le ? le->p : NULL;
    }
    Py_INCREF(d);
    return d;
}

static PyObject* Steps_execute_burst(StepsObject* self, PyObject* unused)
{
    (void)unused;
    if (check_usable(self)) {
        return NULL;
    }
    ++g_entered;
    int ran = futoin_steps_execute_burst(self->bsi);
    --g_entered;
    if (fatal_raise()) {
        return NULL;
    }
    return PyBool_FromLong(ran);
}

static PyObject* Steps_get_address(StepsObject* self, void* closure);

static PyObject* Steps_binary(StepsObject* self, PyObject* unused)
{
    (void)unused;
    PyObject* addr = Steps_get_address(self, NULL);
    if (addr && self->picked_tool) {
        self->picked_tool = 2; /* C may hold it now: the root stays where it is */
    }
    /* C code may complete it (or a step of its flow): its flow is never
     * taken for abandoned (a step's view may not be kept: its flow's root) */
    StepsObject* root = !addr ? NULL : self->owns ? self : root_of_flow(self->bsi);
    if (root) {
        root->exported = 1;
    }
    return addr;
}

static PyObject* Steps_root_id(StepsObject* self, PyObject* unused)
{
    (void)unused;
    if (check_usable(self)) {
        return NULL;
    }
    return PyLong_FromSsize_t(self->bsi->api->rootId(self->bsi));
}

static PyObject* Steps_is_same_thread(StepsObject* self, PyObject* unused)
{
    (void)unused;
    if (check_usable(self)) {
        return NULL;
    }
    return PyBool_FromLong(self->bsi->api->is_same_thread(self->bsi));
}

/* free a root this object lets go of, its hooks naming the object first;
 * whether a cleanup raised a fatal exception (KeyboardInterrupt) meanwhile */
static int root_let_go(FutoInAsyncSteps* root)
{
    PyObject* before = g_fatal;
    if (futoin_steps_is_native(root)) {
        futoin_steps_set_cancelled(root, NULL, NULL);
        futoin_steps_set_host_data(root, NULL);
    }
    ++g_entered;
    root->api->free(root); /* its steps' memory goes: they unlink */
    --g_entered;
    return g_fatal != before;
}

static void* state_dict_adopt(void* data)
{
    return data; /* the caller's reference */
}

/* the old root of a move from another thread goes on its own loop thread
 * (its memory is that tool's pool); at the latest when its tool is freed */
static void let_go_posted(void* data)
{
    PyGILState_STATE g = PyGILState_Ensure();
    root_let_go(data); /* a KeyboardInterrupt of a cleanup stays for this thread's run */
    PyGILState_Release(g);
}

/* _rebind(tool) -> model: an idle root moves to another tool (awaited on a
 * loop other than its tool's, or run on another thread): a new root there
 * with its state mapping, the old root freed with its steps (posted to its
 * own thread when that is another one); Python replays the recorded steps
 * it returns */
static PyObject* Steps_rebind(StepsObject* self, PyObject* tool)
{
    if (!PyObject_TypeCheck(tool, &ToolType)) {
        return PyErr_Format(PyExc_TypeError, "_rebind() expects a Tool, not %.100s", Py_TYPE(tool)->tp_name);
    }
    if (check_usable(self)) {
        return NULL;
    }
    FutoInAsyncSteps* old = self->bsi;
    if (!self->owns || self->picked_tool != 1 || !futoin_steps_is_native(old) || !old->api->isValid(old)) {
        PyErr_SetString(PyExc_RuntimeError,
                        self->picked_tool == 2 ? "this flow stays on its tool: its binary() pointer was handed out"
                        : self->picked_tool    ? "this flow belongs to another thread's tool"
                                               : "this flow belongs to the tool given to AsyncSteps()");
        return NULL;
    }
    PyObject* model = self->model != Py_None ? self->model : PyList_New(0);
    FutoInAsyncSteps* root = model ? futoin_steps_new(((ToolObject*)tool)->tool) : NULL;
    /* the same mapping (code may hold it), left alone by the old root's cleanup */
    PyObject* state = root ? old->api->stateVariable(old, NULL, "futoin.python.state", NULL, NULL) : NULL;
    const int here = old->api->is_same_thread(old);
    const int noted = root && state ? state_moved_note(state, 1) : 0;
    if (!root || noted < 0 || (!here && futoin_tool_post(futoin_steps_tool(old), let_go_posted, old) != 0)) {
        if (state && noted >= 0) {
            state_moved_note(state, -1);
        }
        if (root) {
            root->api->free(root);
        }
        if (model && model != self->model) {
            Py_DECREF(model);
        }
        return PyErr_Occurred() ? NULL : PyErr_NoMemory();
    }
    if (model == self->model) {
        Py_INCREF(Py_None);
        self->model = Py_None; /* ours now: the replay records it again */
    }
    Py_XINCREF(state);
    const int fatal = here ? root_let_go(old) : 0;
    self->bsi = root;
    self->spare = NULL;
    self->runs = 0;
    self->awaits = 0;
    Py_CLEAR(self->ctx);
    Py_INCREF(tool);
    Py_SETREF(self->tool, tool);
    if (state && !root->api->stateVariable(root, state, "futoin.python.state", state_dict_adopt, state_dict_cleanup)) {
        Py_DECREF(state);
        PyErr_Clear();
    }
    if (fatal && fatal_raise()) {
        Py_XDECREF(model);
        return NULL;
    }
    return model;
}

static PyObject* Steps_free(StepsObject* self, PyObject* unused)
{
    (void)unused;
    PyObject* before = g_fatal;
    if (self->bsi && self->owns) {
        ++g_entered;
        self->bsi->api->free(self->bsi);
        --g_entered;
    }
    self->bsi = NULL;
    self->spare = NULL; /* the root's memory: gone with it */
    if (g_fatal != before && fatal_raise()) {
        return NULL; /* a cleanup's KeyboardInterrupt, from this call */
    }
    Py_RETURN_NONE;
}

static int Steps_bool(StepsObject* self)
{
    return self->bsi && self->bsi->api->isValid(self->bsi);
}

/* repr()'s: the address, not handed out for C to keep */
static PyObject* Steps_get_address(StepsObject* self, void* closure)
{
    (void)closure;
    if (check_usable(self)) {
        return NULL;
    }
    return PyLong_FromVoidPtr(self->bsi);
}

static PyObject* Steps_get_picked_tool(StepsObject* self, void* closure)
{
    (void)closure;
    return PyBool_FromLong(self->picked_tool == 1);
}

static PyObject* Steps_get_model(StepsObject* self, void* closure)
{
    (void)closure;
    if (self->model == Py_None) {
        return PyList_New(0); /* a root with nothing recorded yet */
    }
    PyObject* m = self->model ? self->model : Py_None;
    Py_INCREF(m);
    return m;
}

static PyObject* Steps_get_tool(StepsObject* self, void* closure)
{
    (void)closure;
    PyObject* t = self->tool ? self->tool : Py_None;
    Py_INCREF(t);
    return t;
}

static PyObject* Steps_get_in_callback(StepsObject* self, void* closure)
{
    (void)closure;
    return PyBool_FromLong(self->in_cb);
}

/* a root (ours, or one of another provider: nothing tells), not the view
 * of a step or branch; an ended view raises */
static PyObject* Steps_get_is_root(StepsObject* self, void* closure)
{
    (void)closure;
    if (check_usable(self)) {
        return NULL;
    }
    return PyBool_FromLong(self->owns || futoin_steps_is_root(self->bsi) != 0);
}

/* Python objects a root of ours keeps in its C state: its State mapping,
 * last_exception (with a traceback whose frames may hold the root itself:
 * a cycle through C the GC must see) and the raised [code, info] */
static PyObject* root_last_exception(FutoInAsyncSteps* bsi)
{
    FutoInBinaryValue* le = bsi->api->stateVariable(bsi, NULL, "last_exception", NULL, NULL);
    return le && le->type == &k_py_object ? le->custom_data : NULL;
}

/* ---- abandoned flows ----
 * A root's executing flow that only a call on one of its Python steps can
 * move on (no timer, sync object, C step or binary() pointer) is idle. For
 * a full collection, _running holds such roots weakly (_gc_aside()) and the
 * collector sees the callables their flows keep in step memory: a flow
 * whose root and step views nobody else holds goes as an asyncio task
 * waiting on a lost future goes, its cancel handlers run (Steps_finalize). */

static const FutoInIdleHost k_idle_host = {tr_exec, tr_error, tr_loop, tr_repeat, tr_cancel};

typedef struct fragvec
{
    pyfrag** v;
    size_t n, cap;
    pyfrag* inline_v[32];
    int oom;
} fragvec;

static void fragvec_push(void* ctx, void* data)
{
    fragvec* fv = ctx;
    if (fv->n == fv->cap) {
        size_t cap = fv->cap * 2;
        pyfrag** v = fv->v == fv->inline_v ? PyMem_RawMalloc(cap * sizeof(*v))
                                           : PyMem_RawRealloc(fv->v, cap * sizeof(*v));
        if (!v) {
            fv->oom = 1;
            return;
        }
        if (fv->v == fv->inline_v) {
            memcpy(v, fv->inline_v, sizeof(fv->inline_v));
        }
        fv->v = v;
        fv->cap = cap;
    }
    fv->v[fv->n++] = data;
}

static int frag_cmp(const void* a, const void* b)
{
    const uintptr_t x = (uintptr_t) * (pyfrag* const*)a, y = (uintptr_t) * (pyfrag* const*)b;
    return x < y ? -1 : x > y;
}

/* the callables an idle flow keeps in step memory, each once (the engine may
 * name the same data more than once; root-level ones are on the root's list;
 * a StepHandle's or fragment()'s belong to their holder, never shown) */
static int visit_idle_frags(StepsObject* self, visitproc visit, void* arg)
{
    fragvec fv = {NULL, 0, 32, {NULL}, 0};
    fv.v = fv.inline_v;
    int rc = 0;
    if (futoin_steps_idle_in(self->bsi, &k_idle_host, fragvec_push, &fv) && !fv.oom) {
        qsort(fv.v, fv.n, sizeof(*fv.v), frag_cmp);
        for (size_t i = 0; i < fv.n && !rc; ++i) {
            pyfrag* f = fv.v[i];
            if ((i && f == fv.v[i - 1]) || f->pprev || !f->flow_mem) {
                continue; /* seen, on the root's list, or held by a handle or C code */
            }
            if (f->func) {
                rc = visit(f->func, arg);
            }
            if (!rc && f->onerror) {
                rc = visit(f->onerror, arg);
            }
        }
    }
    if (fv.v != fv.inline_v) {
        PyMem_RawFree(fv.v);
    }
    return rc;
}

static void Steps_finalize(StepsObject* self);

/* _gc_aside() -> whether this root's flow is idle and nothing but its
 * Python steps can move it: then it is aside until _gc_back() */
static PyObject* Steps_gc_aside(StepsObject* self, PyObject* unused)
{
    (void)unused;
    const ToolObject* tool = PyObject_TypeCheck(self->tool, &ToolType) ? (ToolObject*)self->tool : NULL;
    /* only while Steps_finalize() is what runs first when it goes (not a
     * subclass's __del__): its flow must end before the collector clears
     * the callables it shows (a root finalized once never again) */
    self->gc_aside = self->owns && self->bsi && !self->exported && tool && tool->refs == 0
                     && Py_TYPE(self)->tp_finalize == (destructor)Steps_finalize
                     && !PyObject_GC_IsFinalized((PyObject*)self)
                     && futoin_steps_idle_in(self->bsi, &k_idle_host, NULL, NULL);
    return PyBool_FromLong(self->gc_aside);
}

static PyObject* Steps_gc_back(StepsObject* self, PyObject* unused)
{
    (void)unused;
    self->gc_aside = 0;
    Py_RETURN_NONE;
}

/* a root aside that nobody held: its flow is cancelled before it goes (its
 * cancel handlers run, its promise() is cancelled) */
static void Steps_finalize(StepsObject* self)
{
    if (!self->gc_aside || !self->owns || !self->bsi) {
        return;
    }
    self->gc_aside = 0;
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    PyObject* before = g_fatal;
    ++g_entered;
    self->bsi->api->cancel(self->bsi);
    --g_entered;
    if (g_fatal != before && fatal_raise()) {
        PyErr_WriteUnraisable((PyObject*)self);
    }
    PyErr_Restore(et, ev, tb);
}

static int Steps_traverse(StepsObject* self, visitproc visit, void* arg)
{
    Py_VISIT(self->tool);
    Py_VISIT(self->root_ref);
    if (self->gc_aside && self->owns && self->bsi) {
        int rc = visit_idle_frags(self, visit, arg);
        if (rc) {
            return rc;
        }
    }
    Py_VISIT(self->model);
    Py_VISIT(self->spent_model);
    Py_VISIT(self->par_root);
    Py_VISIT(self->ctx);
    for (pyfrag* f = self->frags; f; f = f->next) {
        Py_VISIT(f->func);
        Py_VISIT(f->onerror);
    }
    if (self->owns && self->bsi) {
        FutoInAsyncSteps* bsi = self->bsi;
        Py_VISIT(root_last_exception(bsi));
        Py_VISIT((PyObject*)bsi->api->stateVariable(bsi, NULL, "futoin.python.state", NULL, NULL));
        Py_VISIT((PyObject*)bsi->api->stateVariable(bsi, NULL, "futoin.python.raised", NULL, NULL));
    }
    return 0;
}

static int Steps_clear(StepsObject* self)
{
    Py_CLEAR(self->root_ref);
    Py_CLEAR(self->model);
    Py_CLEAR(self->spent_model);
    Py_CLEAR(self->par_root);
    if (self->ctx) {
        futoin_steps_set_host_data(self->bsi, NULL); /* unreachable: not running */
        Py_CLEAR(self->ctx);
    }
    /* unreachable: its steps never run again (the root is freed next) */
    for (pyfrag* f = self->frags; f; f = f->next) {
        Py_CLEAR(f->func);
        Py_CLEAR(f->onerror);
    }
    if (self->owns && self->bsi) {
        FutoInAsyncSteps* bsi = self->bsi;
        FutoInBinaryValue* le = bsi->api->stateVariable(bsi, NULL, "last_exception", NULL, NULL);
        if (le && le->type == &k_py_object) {
            futoin_reset_binval(le);
        }
        PyObject* d = bsi->api->stateVariable(bsi, NULL, "futoin.python.state", NULL, NULL);
        if (d) {
            PyDict_Clear(d);
        }
    }
    return 0;
}

static void Steps_dealloc(StepsObject* self)
{
    if (self->gc_aside && PyObject_CallFinalizerFromDealloc((PyObject*)self) < 0) {
        return; /* its cancel handlers took it again */
    }
    PyObject_GC_UnTrack(self);
    if (self->link) {
        self->link->view = NULL;
        kept_views_add(self, -1);
    }
    if (self->weakrefs) {
        PyObject_ClearWeakRefs((PyObject*)self);
    }
    if (self->bsi && self->owns) {
        /* this object is half gone: its hooks and ctx go first */
        if (root_let_go(self->bsi) && fatal_raise()) {
            /* a cleanup's KeyboardInterrupt: reported as from any __del__
             * (with the tool: this object is half gone, its repr unsafe) */
            PyErr_WriteUnraisable(self->tool);
        }
    }
    /* a root freed later (its flow was inside a callback) keeps its steps:
     * they must not unlink from a list that is gone */
    for (pyfrag* f = self->frags; f;) {
        pyfrag* next = f->next;
        f->next = NULL;
        f->pprev = NULL;
        f = next;
    }
    self->frags = NULL;
    self->spare = NULL; /* the root's memory: gone with it */
    Py_CLEAR(self->model);
    Py_CLEAR(self->spent_model);
    Py_CLEAR(self->par_root);
    Py_CLEAR(self->ctx);
    Py_CLEAR(self->tool);
    Py_CLEAR(self->root_ref);
    PyMem_Free(self->host); /* its flow's host data: cleared by root_let_go() */
    PyObject_GC_Del(self);
}

static PyObject* Steps_new(PyTypeObject* type, PyObject* args, PyObject* kw)
{
    static char* kwlist[] = {"tool", "picked", NULL};
    PyObject* tool;
    int picked = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!|p:_Root", kwlist, &ToolType, &tool, &picked)) {
        return NULL;
    }
    FutoInAsyncSteps* root = futoin_steps_new(((ToolObject*)tool)->tool);
    if (!root) {
        return PyErr_NoMemory();
    }
    StepsObject* v = (StepsObject*)type->tp_alloc(type, 0);
    if (!v) {
        root->api->free(root);
        return NULL;
    }
    v->bsi = root;
    v->tool = tool;
    Py_INCREF(tool);
    v->owns = 1;
    v->picked_tool = picked;
    Py_INCREF(Py_None);
    v->model = Py_None; /* becomes a list on the first recorded add */
    return (PyObject*)v;
}

/* __init__(tool=None): the tool was taken by __new__; this is for a
 * subclass's super().__init__(tool), which object.__init__ refused */
static int Steps_init(StepsObject* self, PyObject* args, PyObject* kw)
{
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    if (!kw && (n == 0 || (n == 1 && PyTuple_GET_ITEM(args, 0) == self->tool))) {
        return 0; /* AsyncSteps() and AsyncSteps(tool): nothing to check */
    }
    static char* kwlist[] = {"tool", NULL};
    PyObject* tool = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:AsyncSteps.__init__", kwlist, &tool)) {
        return -1;
    }
    if (tool != Py_None && !PyObject_TypeCheck(tool, &ToolType)) {
        PyErr_Format(PyExc_TypeError, "AsyncSteps.__init__(): tool must be a Tool or None, not %.100s",
                     Py_TYPE(tool)->tp_name);
        return -1;
    }
    if (tool != Py_None && self->owns && tool != self->tool) {
        PyErr_SetString(PyExc_ValueError,
                        "AsyncSteps.__init__(): the tool differs from the one the root was made on by "
                        "__new__() (pass the same tool to the constructor)");
        return -1;
    }
    return 0;
}

static PyMethodDef Steps_methods[] = {
        {"add", (PyCFunction)(void (*)(void))Steps_add, METH_FASTCALL | METH_KEYWORDS,
         "add(func, onerror=None): add a step; returns self"},
        {"parallel", (PyCFunction)(void (*)(void))Steps_parallel, METH_VARARGS | METH_KEYWORDS,
         "parallel(onerror=None): add a parallel step; add its branches to the returned object"},
        {"success", (PyCFunction)(void (*)(void))Steps_success, METH_FASTCALL,
         "success(*args): complete the step (from any thread)"},
        {"error", (PyCFunction)(void (*)(void))Steps_error, METH_VARARGS | METH_KEYWORDS,
         "error(code, info=None): fail the step; always raises FutoInError"},
        {"break_loop", (PyCFunction)(void (*)(void))Steps_break_loop, METH_VARARGS | METH_KEYWORDS,
         "break_loop(label=None)"},
        {"continue_loop", (PyCFunction)(void (*)(void))Steps_continue_loop, METH_VARARGS | METH_KEYWORDS,
         "continue_loop(label=None)"},
        {"set_timeout", (PyCFunction)Steps_set_timeout, METH_O, "set_timeout(ms)"},
        {"set_cancel", (PyCFunction)Steps_set_cancel, METH_O, "set_cancel(func(as_))"},
        {"wait_external", (PyCFunction)Steps_wait_external, METH_NOARGS, "wait_external()"},
        {"loop", (PyCFunction)(void (*)(void))Steps_loop, METH_VARARGS | METH_KEYWORDS, "loop(func, label=None)"},
        {"repeat", (PyCFunction)(void (*)(void))Steps_repeat, METH_VARARGS | METH_KEYWORDS,
         "repeat(count, func(as_, i), label=None)"},
        {"sync", (PyCFunction)(void (*)(void))Steps_sync, METH_VARARGS | METH_KEYWORDS,
         "sync(obj, func, onerror=None): add a step inside obj's critical section"},
        {"execute", (PyCFunction)(void (*)(void))Steps_execute, METH_VARARGS | METH_KEYWORDS,
         "execute(unhandled_error=None): schedule the root"},
        {"cancel", (PyCFunction)Steps_cancel, METH_NOARGS, "cancel(): cancel the root (from any thread)"},
        {"_cancel_on_loop", (PyCFunction)Steps_cancel_on_loop, METH_NOARGS,
         "cancel() from another thread: runs cancel() on the loop thread"},
        {"new_instance", (PyCFunction)Steps_new_instance, METH_NOARGS, "a new root on the same tool"},
        {"binary", (PyCFunction)Steps_binary, METH_NOARGS, "address of the FutoInAsyncSteps*"},
        {"_gc_aside", (PyCFunction)Steps_gc_aside, METH_NOARGS, "for a full collection: an idle root held weakly"},
        {"_gc_back", (PyCFunction)Steps_gc_back, METH_NOARGS, "after it: held as before"},
        {"root_id", (PyCFunction)Steps_root_id, METH_NOARGS, "rootId() of the binary interface"},
        {"is_same_thread", (PyCFunction)Steps_is_same_thread, METH_NOARGS, "True on the loop thread"},
        {"_free", (PyCFunction)Steps_free, METH_NOARGS, "release a root now"},
        {"_rebind", (PyCFunction)Steps_rebind, METH_O, "_rebind(tool) -> model: an idle root to another tool"},
        {"_add_hidden", (PyCFunction)Steps_add_hidden, METH_O, "add a step that copy_from does not copy"},
        {"_execute_burst", (PyCFunction)Steps_execute_burst, METH_NOARGS, "run the first burst now"},
        {"_note_await", (PyCFunction)Steps_note_await, METH_NOARGS, NULL},
        {"_flow_ended", (PyCFunction)Steps_flow_ended, METH_NOARGS, NULL},
        {"stack", (PyCFunction)(void (*)(void))Steps_stack, METH_VARARGS | METH_KEYWORDS,
         "stack(size, cleanup=None): a zeroed bytearray; cleanup(buf) runs when the step ends"},
        {"_defer", (PyCFunction)Steps_defer, METH_VARARGS, "_defer(ms, func): a timer on the flow's tool"},
        {"_undefer", (PyCFunction)Steps_undefer, METH_O, NULL},
        {"_fail", (PyCFunction)Steps_fail, METH_VARARGS, "_fail(code, info=None, exc=None): fail from outside"},
        {NULL, NULL, 0, NULL},
};

static PyGetSetDef Steps_getset[] = {
        {"state", (getter)Steps_get_state, NULL, "per-root state mapping", NULL},
        {"_model", (getter)Steps_get_model, NULL, NULL, NULL},
        {"_tool", (getter)Steps_get_tool, NULL, NULL, NULL},
        {"_in_callback", (getter)Steps_get_in_callback, NULL, NULL, NULL},
        {"_picked_tool", (getter)Steps_get_picked_tool, NULL, NULL, NULL},
        {"_address", (getter)Steps_get_address, NULL, NULL, NULL},
        {"_is_root", (getter)Steps_get_is_root, NULL, NULL, NULL},
        {NULL, NULL, NULL, NULL, NULL},
};

static PyNumberMethods Steps_as_number = {.nb_bool = (inquiry)Steps_bool};

static PyTypeObject StepsType = {
        PyVarObject_HEAD_INIT(NULL, 0).tp_name = "futoin_polyglot._futoin.AsyncStepsBase",
        .tp_basicsize = sizeof(StepsObject),
        .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
        .tp_new = Steps_new,
        .tp_init = (initproc)Steps_init,
        .tp_dealloc = (destructor)Steps_dealloc,
        .tp_traverse = (traverseproc)Steps_traverse,
        .tp_clear = (inquiry)Steps_clear,
        .tp_finalize = (destructor)Steps_finalize,
        .tp_methods = Steps_methods,
        .tp_getset = Steps_getset,
        .tp_as_number = &Steps_as_number,
        .tp_weaklistoffset = offsetof(StepsObject, weakrefs),
        .tp_doc = "A view over an FTN12 FutoInAsyncSteps*",
};

/* ---- CStep ---- */

static int CStep_init(CStepObject* self, PyObject* args, PyObject* kw)
{
    static char* kwlist[] = {"address", "data", "keep", "onerror", NULL};
    PyObject* addr;
    PyObject* data = Py_None;
    PyObject* keep = Py_None;
    PyObject* onerror = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OOO:CStep", kwlist, &addr, &data, &keep, &onerror)) {
        return -1;
    }
    if (!PyLong_Check(addr)) {
        /* a ctypes function (CDLL(...).symbol): its address; nothing else,
         * ctypes.cast() would give the address of a str's buffer */
        PyObject* value = NULL;
        PyObject* ctypes = PyImport_ImportModule("ctypes");
        PyObject* fptype = ctypes ? PyObject_GetAttrString(ctypes, "_CFuncPtr") : NULL;
        if (fptype && PyType_Check(fptype) && PyObject_TypeCheck(addr, (PyTypeObject*)fptype)) {
            PyObject* vp = PyObject_GetAttrString(ctypes, "c_void_p");
            PyObject* ptr = vp ? PyObject_CallMethod(ctypes, "cast", "OO", addr, vp) : NULL;
            value = ptr ? PyObject_GetAttrString(ptr, "value") : NULL;
            Py_XDECREF(ptr);
            Py_XDECREF(vp);
        }
        Py_XDECREF(fptype);
        Py_XDECREF(ctypes);
        if (!value || !PyLong_Check(value)) {
            Py_XDECREF(value);
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "CStep needs a function address (int) or a ctypes function, not %.100s",
                         Py_TYPE(addr)->tp_name);
            return -1;
        }
        self->fn = PyLong_AsVoidPtr(value);
        Py_DECREF(value);
        if (keep == Py_None) {
            keep = addr; /* its code lives as long as the ctypes object (a CFUNCTYPE thunk) */
        }
    } else {
        self->fn = PyLong_AsVoidPtr(addr);
    }
    if (!self->fn) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "CStep needs a non-NULL function address");
        }
        return -1;
    }
    self->data = data == Py_None ? NULL : PyLong_AsVoidPtr(data);
    if (PyErr_Occurred()) {
        return -1;
    }
    Py_INCREF(keep);
    Py_XSETREF(self->keep, keep);
    if (onerror != Py_None && !PyObject_TypeCheck(onerror, &CStepType)) {
        /* a C step's handler is C too (a Python one: add(step, onerror)
         * refuses it for the same reason) */
        PyErr_Format(PyExc_TypeError, "CStep onerror must be a CStep (a C error callback) or None, not %.100s",
                     Py_TYPE(onerror)->tp_name);
        return -1;
    }
    if (onerror != Py_None && PyObject_SetAttrString((PyObject*)self, "onerror", onerror) != 0) {
        return -1;
    }
    return 0;
}

/* a CStep takes part in cycles (keep= an object that refers back, its
 * attributes): the collector sees what it holds */
static int CStep_traverse(CStepObject* self, visitproc visit, void* arg)
{
    Py_VISIT(self->keep);
    PyObject** dictptr = _PyObject_GetDictPtr((PyObject*)self);
    if (dictptr) {
        Py_VISIT(*dictptr);
    }
    return 0;
}

static int CStep_clear(CStepObject* self)
{
    Py_CLEAR(self->keep);
    PyObject** dictptr = _PyObject_GetDictPtr((PyObject*)self);
    if (dictptr) {
        Py_CLEAR(*dictptr);
    }
    return 0;
}

static void CStep_dealloc(CStepObject* self)
{
    PyObject_GC_UnTrack(self);
    CStep_clear(self);
    Py_TYPE(self)->tp_free((PyObject*)self);
}

static PyObject* CStep_call(CStepObject* self, PyObject* args, PyObject* kw)
{
    (void)args;
    (void)kw;
    PyErr_Format(PyExc_TypeError, "a CStep is added with as_.add(), not called (function at %p)", self->fn);
    return NULL;
}

typedef struct
{
    PyObject_HEAD
    void* fn;
    void* data;
    PyObject* keep;
    PyObject* dict;
} CStepLayout;

static PyTypeObject CStepType = {
        PyVarObject_HEAD_INIT(NULL, 0).tp_name = "futoin_polyglot._futoin.CStep",
        .tp_basicsize = sizeof(CStepLayout),
        .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
        .tp_new = PyType_GenericNew,
        .tp_init = (initproc)CStep_init,
        .tp_dealloc = (destructor)CStep_dealloc,
        .tp_traverse = (traverseproc)CStep_traverse,
        .tp_clear = (inquiry)CStep_clear,
        .tp_call = (ternaryfunc)CStep_call,
        .tp_dictoffset = offsetof(CStepLayout, dict),
        .tp_doc = "CStep(address, data=None, keep=None, onerror=None): a C function with the FTN12 "
                  "execute-callback signature, added to flows without a Python trampoline",
};

/* ---- Tool ---- */

static void tool_arm(void* data, int64_t delay_ms)
{
    ToolObject* t = data;
    if (!t->arm) {
        return;
    }
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject* saved_type, *saved_value, *saved_tb;
    PyErr_Fetch(&saved_type, &saved_value, &saved_tb);
    PyObject* d = PyLong_FromLongLong(delay_ms);
    PyObject* r = d ? PyObject_CallOneArg(t->arm, d) : NULL;
    if (!r) {
        unraisable(t->arm);
    }
    Py_XDECREF(r);
    Py_XDECREF(d);
    PyErr_Restore(saved_type, saved_value, saved_tb);
    PyGILState_Release(g);
}

static void tool_wakeup(void* data)
{
    ToolObject* t = data;
    uint64_t one = 1;
    if (t->wake_fd >= 0) {
        ssize_t rc = write(t->wake_fd, &one, sizeof(one)); /* thread-safe, no GIL */
        (void)rc;
    }
}

/* a count given as an int: 0 .. 2^32-1 (the "I" format wraps -1 around) */
/* a number past the C type is a ValueError, as the other range errors
 * here (the conversion raised OverflowError); NULL for the caller */
static PyObject* overflow_as_value(const char* what)
{
    if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "%s: the number is out of range", what);
    }
    return NULL;
}

/* a burst (Tool(burst=), Tool.burst): 1 step or more; -1 raised */
static int burst_check(long long n, int overflow, const char* what)
{
    if (overflow || n < 1 || n > (long long)UINT32_MAX) {
        PyErr_Format(PyExc_ValueError, "%s must be between 1 and %u", what, UINT32_MAX);
        return -1;
    }
    return 0;
}

static int u32_of(long long v, const char* what, unsigned int* out)
{
    if (v < 0 || v > (long long)UINT32_MAX) {
        PyErr_Format(PyExc_ValueError, "%s must be between 0 and %u", what, UINT32_MAX);
        return -1;
    }
    *out = (unsigned int)v;
    return 0;
}

static PyObject* Tool_new(PyTypeObject* type, PyObject* args, PyObject* kw)
{
    static char* kwlist[] = {"virtual_time", "burst", NULL};
    int virt = 0;
    long long burst_ll = LLONG_MIN; /* not given: the default */
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|pL:Tool", kwlist, &virt, &burst_ll)) {
        return overflow_as_value("Tool(burst)");
    }
    if (burst_ll != LLONG_MIN && burst_check(burst_ll, 0, "Tool(burst)")) {
        return NULL;
    }
    const unsigned int burst = burst_ll == LLONG_MIN ? 0 : (unsigned int)burst_ll;
    ToolObject* self = (ToolObject*)type->tp_alloc(type, 0);
    if (!self) {
        return NULL;
    }
    self->tool = futoin_tool_new();
    self->wake_fd = -1;
    if (!self->tool) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    if (virt) {
        futoin_tool_use_virtual_time(self->tool);
        self->virtual_time = 1;
    }
    if (burst) {
        futoin_tool_set_burst(self->tool, burst);
    }
    self->tl_next = g_tools;
    if (g_tools) {
        g_tools->tl_pprev = &self->tl_next;
    }
    self->tl_pprev = &g_tools;
    g_tools = self;
    return (PyObject*)self;
}

static void tool_drop_pending(ToolObject* self);

static void Tool_dealloc(ToolObject* self)
{
    if (self->tl_pprev) {
        *self->tl_pprev = self->tl_next;
        if (self->tl_next) {
            self->tl_next->tl_pprev = self->tl_pprev;
        }
    }
    tool_drop_pending(self);
    if (self->tool) {
        futoin_tool_set_hooks(self->tool, NULL);
        futoin_tool_free(self->tool);
    }
    if (self->wake_fd >= 0) {
        close(self->wake_fd);
    }
    Py_XDECREF(self->arm);
    Py_TYPE(self)->tp_free((PyObject*)self);
}

static PyObject* Tool_run_loop(ToolObject* self, PyObject* box, PyObject* others);

/* blocking run without asyncio: the GIL is released while waiting; Ctrl-C
 * raises KeyboardInterrupt here, with the flows left as they were */
/* a blocking run() that could return: not nested, not under asyncio */
static int tool_check_runnable(ToolObject* self)
{
    if (self->running) {
        PyErr_SetString(PyExc_RuntimeError,
                        "Tool.run() is already running: a step cannot block on another flow of its tool; add "
                        "that flow's steps as sub-steps instead");
        return -1;
    }
    if (self->arm) {
        PyErr_SetString(PyExc_RuntimeError,
                        "this tool is driven by a running asyncio loop: await the flow (await as_, "
                        "as_.promise()) instead of run()");
        return -1;
    }
    return 0;
}

static PyObject* Tool_check_runnable(ToolObject* self, PyObject* unused)
{
    (void)unused;
    if (tool_check_runnable(self)) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject* Tool_run(ToolObject* self, PyObject* unused)
{
    (void)unused;
    if (tool_check_runnable(self)) {
        return NULL;
    }
    self->running = 1;
    PyObject* res = Tool_run_loop(self, NULL, NULL);
    self->running = 0;
    return res;
}

/* root.run(): _run_flow(box, others) runs until its flow put something in
 * box (a result, an error, cancelled); when nothing can come from this
 * thread but Python holds a view of a step going on and others() says
 * another thread runs, it waits for that thread (a post wakes it) */
static PyObject* Tool_run_flow(ToolObject* self, PyObject* args)
{
    PyObject *box, *others;
    if (!PyArg_ParseTuple(args, "O!O:_run_flow", &PyDict_Type, &box, &others) || tool_check_runnable(self)) {
        return NULL;
    }
    self->running = 1;
    PyObject* res = Tool_run_loop(self, box, others);
    self->running = 0;
    return res;
}

static PyObject* Tool_run_loop(ToolObject* self, PyObject* box, PyObject* others)
{
    for (;;) {
        ++g_entered;
        futoin_tool_iterate(self->tool, 0);
        --g_entered;
        if (fatal_raise() || PyErr_CheckSignals() != 0) {
            return NULL;
        }
        if (box && PyDict_GET_SIZE(box)) {
            break; /* its flow ended: other flows of the tool wait for the next run */
        }
        int rc;
        Py_BEGIN_ALLOW_THREADS rc = futoin_tool_wait(self->tool, 100);
        Py_END_ALLOW_THREADS
        if (rc == 0) {
            continue;
        }
        /* a step can still be completed only through a view Python holds,
         * by another thread (C code completing one holds a ref()) */
        PyObject* more = others && self->kept_views ? PyObject_CallNoArgs(others) : NULL;
        if (!more && PyErr_Occurred()) {
            return NULL;
        }
        int wait = more && PyObject_IsTrue(more) == 1;
        Py_XDECREF(more);
        if (!wait) {
            break;
        }
        futoin_tool_ref(self->tool); /* waits for a post, not only a timer */
        Py_BEGIN_ALLOW_THREADS futoin_tool_wait(self->tool, 50);
        Py_END_ALLOW_THREADS
        futoin_tool_unref(self->tool);
    }
    Py_RETURN_NONE;
}

static PyObject* Tool_iterate(ToolObject* self, PyObject* args)
{
    long long max_ll = 0;
    unsigned int max = 0;
    if (!PyArg_ParseTuple(args, "|L", &max_ll)) {
        return overflow_as_value("iterate(max_tasks)");
    }
    if (u32_of(max_ll, "iterate(max_tasks)", &max)) {
        return NULL;
    }
    ++g_entered;
    int64_t d = futoin_tool_iterate(self->tool, max);
    --g_entered;
    if (fatal_raise()) {
        return NULL;
    }
    return PyLong_FromLongLong(d);
}

static PyObject* Tool_next_delay(ToolObject* self, PyObject* unused)
{
    (void)unused;
    return PyLong_FromLongLong(futoin_tool_next_delay(self->tool));
}

static PyObject* Tool_now(ToolObject* self, PyObject* unused)
{
    (void)unused;
    return PyLong_FromUnsignedLongLong(futoin_tool_now(self->tool));
}

static PyObject* Tool_advance(ToolObject* self, PyObject* arg)
{
    unsigned long long ms = PyLong_AsUnsignedLongLong(arg);
    if (PyErr_Occurred()) {
        return overflow_as_value("advance(ms)"); /* negative too */
    }
    if (!self->virtual_time) {
        PyErr_SetString(PyExc_RuntimeError, "advance() needs a tool in virtual time");
        return NULL;
    }
    /* past 2^63 a deadline (now + up to 2^32 ms) could wrap around */
    if (ms > (uint64_t)INT64_MAX - futoin_tool_now(self->tool)) {
        PyErr_SetString(PyExc_ValueError, "advance(): the virtual clock would pass 2^63 ms");
        return NULL;
    }
    futoin_tool_advance(self->tool, ms);
    Py_RETURN_NONE;
}

static PyObject* Tool_ref(ToolObject* self, PyObject* unused)
{
    (void)unused;
    futoin_tool_ref(self->tool);
    ++self->refs;
    Py_RETURN_NONE;
}

static PyObject* Tool_unref(ToolObject* self, PyObject* unused)
{
    (void)unused;
    if (self->refs == 0) {
        PyErr_SetString(PyExc_RuntimeError, "unref() without a ref() to match");
        return NULL;
    }
    --self->refs;
    futoin_tool_unref(self->tool);
    Py_RETURN_NONE;
}

/* set_hooks(arm) -> fd: arm(delay_ms) is called on the loop thread; the
 * returned eventfd becomes readable when another thread posts work */
static PyObject* Tool_set_hooks(ToolObject* self, PyObject* arm)
{
    if (arm == Py_None) {
        futoin_tool_set_hooks(self->tool, NULL);
        Py_CLEAR(self->arm);
        if (self->wake_fd >= 0) {
            close(self->wake_fd); /* only the hooks wrote to it */
            self->wake_fd = -1;
        }
        Py_RETURN_NONE;
    }
    if (!PyCallable_Check(arm)) {
        PyErr_SetString(PyExc_TypeError, "arm must be callable");
        return NULL;
    }
    if (self->wake_fd < 0) {
        self->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (self->wake_fd < 0) {
            return PyErr_SetFromErrno(PyExc_OSError);
        }
    }
    Py_INCREF(arm);
    Py_XSETREF(self->arm, arm);
    FutoInLoopHooks hooks = {self, tool_arm, tool_wakeup};
    futoin_tool_bind_thread(self->tool);
    futoin_tool_set_hooks(self->tool, &hooks);
    return PyLong_FromLong(self->wake_fd);
}

static PyObject* Tool_drain_wakeups(ToolObject* self, PyObject* unused)
{
    (void)unused;
    uint64_t v;
    while (self->wake_fd >= 0 && read(self->wake_fd, &v, sizeof(v)) == sizeof(v)) {
    }
    Py_RETURN_NONE;
}

static PyObject* Tool_bind_thread(ToolObject* self, PyObject* unused)
{
    (void)unused;
    futoin_tool_bind_thread(self->tool);
    Py_RETURN_NONE;
}

/* ---- spec 2.6: immediate(), deferred(), cancel(), is_valid() ---- */

typedef struct HandleObject
{
    PyObject_HEAD
    ToolObject* tool; /* kept alive: its callbacks can be cancelled */
    deferred* d;
} HandleObject;

static PyTypeObject HandleType;

/* the tool's scheduling root: its scheduler slots work from any thread, as
 * the C++ reference's AsyncTool (posted from another one) */
static FutoInAsyncSteps* tool_sched_root(ToolObject* self)
{
    if (!self->sched) {
        self->sched = futoin_steps_new(self->tool);
        if (!self->sched) {
            PyErr_NoMemory();
        }
    }
    return self->sched;
}

static PyObject* tool_schedule(ToolObject* self, int64_t delay_ms, PyObject* func, const char* what)
{
    if (!PyCallable_Check(func)) {
        return PyErr_Format(PyExc_TypeError, "%s() expects a callable, not %.100s", what, Py_TYPE(func)->tp_name);
    }
    if (is_async_def(func)) {
        return PyErr_Format(PyExc_TypeError, "%s() got an async def: the tool never awaits it", what);
    }
    FutoInAsyncSteps* sched = tool_sched_root(self);
    if (!sched) {
        return NULL;
    }
    PyObject* ctx = PyContext_CopyCurrent();
    if (!ctx) {
        return NULL;
    }
    /* the handle last: its dealloc needs its fields set */
    deferred* d = PyMem_Calloc(1, sizeof(deferred));
    HandleObject* h = d ? PyObject_New(HandleObject, &HandleType) : NULL;
    if (!h) {
        PyMem_Free(d);
        Py_DECREF(ctx);
        return PyErr_NoMemory();
    }
    d->ctx = ctx;
    Py_INCREF(func);
    d->func = func;
    d->bsi = sched;
    d->remote = !sched->api->is_same_thread(sched);
    d->h = delay_ms < 0 ? sched->api->sched_immediate(sched, d, deferred_fire)
                        : sched->api->sched_deferred(sched, (uint32_t)delay_ms, d, deferred_fire);
    d->owner = self;
    d->next = self->pending;
    if (d->next) {
        d->next->prev = d;
    }
    self->pending = d;
    Py_INCREF(self);
    h->tool = self;
    h->d = d;
    return (PyObject*)h;
}

static PyObject* Tool_immediate(ToolObject* self, PyObject* func)
{
    return tool_schedule(self, -1, func, "immediate");
}

static PyObject* Tool_deferred(ToolObject* self, PyObject* args)
{
    long long ms;
    PyObject* func;
    if (!PyArg_ParseTuple(args, "LO:deferred", &ms, &func)) {
        return overflow_as_value("deferred(delay)");
    }
    if (ms < 0 || ms > UINT32_MAX) {
        return PyErr_Format(PyExc_ValueError, "deferred() delay must be 0..%u ms", (unsigned)UINT32_MAX);
    }
    return tool_schedule(self, ms, func, "deferred");
}

static HandleObject* handle_arg(PyObject* o)
{
    if (!PyObject_TypeCheck(o, &HandleType)) {
        PyErr_Format(PyExc_TypeError, "a Handle of immediate() or deferred() expected, not %.100s",
                     Py_TYPE(o)->tp_name);
        return NULL;
    }
    return (HandleObject*)o;
}

static PyObject* Handle_cancel(HandleObject* self, PyObject* unused)
{
    (void)unused;
    deferred_cancel(self->d, self->d->bsi); /* the tool's own root */
    Py_RETURN_NONE;
}

static PyObject* Handle_is_valid(HandleObject* self, PyObject* unused)
{
    (void)unused;
    return PyBool_FromLong(self->d->func != NULL);
}

static int Handle_bool(HandleObject* self)
{
    return self->d->func != NULL;
}

static void Handle_dealloc(HandleObject* self)
{
    deferred_let_go(self->d);
    Py_DECREF(self->tool);
    PyObject_Free(self);
}

static PyObject* Tool_cancel(ToolObject* self, PyObject* arg)
{
    (void)self;
    HandleObject* h = handle_arg(arg);
    return h ? Handle_cancel(h, NULL) : NULL;
}

static PyObject* Tool_is_valid(ToolObject* self, PyObject* arg)
{
    (void)self;
    HandleObject* h = handle_arg(arg);
    return h ? Handle_is_valid(h, NULL) : NULL;
}

static PyObject* Tool_is_same_thread(ToolObject* self, PyObject* unused)
{
    (void)unused;
    FutoInAsyncSteps* sched = tool_sched_root(self);
    return sched ? PyBool_FromLong(sched->api->is_same_thread(sched)) : NULL;
}

/* callbacks never run: their tool goes (only orphans are left by then) */
static void tool_drop_pending(ToolObject* self)
{
    while (self->pending) {
        deferred* d = self->pending;
        deferred_unlink(d);
        Py_CLEAR(d->func);
        Py_CLEAR(d->ctx);
        d->in_core = 0; /* the core drops its timers with the tool */
        if (d->orphan && !d->posted) {
            PyMem_Free(d); /* else deferred_after_cancel() does, from the tool's free() */
        }
    }
    if (self->sched) {
        self->sched->api->free(self->sched);
        self->sched = NULL;
    }
}

static PyMethodDef Handle_methods[] = {
        {"cancel", (PyCFunction)Handle_cancel, METH_NOARGS, "drop the callback if it has not run (harmless after)"},
        {"is_valid", (PyCFunction)Handle_is_valid, METH_NOARGS, "whether the callback is still to run"},
        {NULL, NULL, 0, NULL},
};

static PyNumberMethods Handle_as_number = {.nb_bool = (inquiry)Handle_bool};

static PyTypeObject HandleType = {
        PyVarObject_HEAD_INIT(NULL, 0).tp_name = "futoin_polyglot._futoin.Handle",
        .tp_basicsize = sizeof(HandleObject),
        .tp_flags = Py_TPFLAGS_DEFAULT,
        .tp_dealloc = (destructor)Handle_dealloc,
        .tp_methods = Handle_methods,
        .tp_as_number = &Handle_as_number,
        .tp_doc = "a callback scheduled by Tool.immediate() or Tool.deferred()",
};

static PyObject* Tool_get_virtual(ToolObject* self, void* c)
{
    (void)c;
    return PyBool_FromLong(self->virtual_time);
}

static PyObject* Tool_address(ToolObject* self, PyObject* unused)
{
    (void)unused;
    return PyLong_FromVoidPtr(self->tool);
}

static PyMethodDef Tool_methods[] = {
        {"run", (PyCFunction)Tool_run, METH_NOARGS, "run until no immediate, timer or reference is left"},
        {"_check_runnable", (PyCFunction)Tool_check_runnable, METH_NOARGS, "RuntimeError if run() could not return"},
        {"_run_flow", (PyCFunction)Tool_run_flow, METH_VARARGS, "run until box gets the flow's outcome"},
        {"iterate", (PyCFunction)Tool_iterate, METH_VARARGS, "one non-blocking turn; returns next delay"},
        {"next_delay", (PyCFunction)Tool_next_delay, METH_NOARGS, NULL},
        {"now", (PyCFunction)Tool_now, METH_NOARGS, "the tool's clock in ms"},
        {"advance", (PyCFunction)Tool_advance, METH_O, "move virtual time forward"},
        {"ref", (PyCFunction)Tool_ref, METH_NOARGS, "keep run() alive (another thread will complete)"},
        {"unref", (PyCFunction)Tool_unref, METH_NOARGS, NULL},
        {"set_hooks", (PyCFunction)Tool_set_hooks, METH_O, NULL},
        {"drain_wakeups", (PyCFunction)Tool_drain_wakeups, METH_NOARGS, NULL},
        {"bind_thread", (PyCFunction)Tool_bind_thread, METH_NOARGS, NULL},
        {"address", (PyCFunction)Tool_address, METH_NOARGS, "address of the FutoInAsyncTool*"},
        {"immediate", (PyCFunction)Tool_immediate, METH_O, "immediate(func) -> Handle: func() on the next turn"},
        {"deferred", (PyCFunction)Tool_deferred, METH_VARARGS, "deferred(delay_ms, func) -> Handle: func() after delay_ms"},
        {"cancel", (PyCFunction)Tool_cancel, METH_O, "cancel(handle): drop a callback not run yet"},
        {"is_valid", (PyCFunction)Tool_is_valid, METH_O, "is_valid(handle): whether it is still to run"},
        {"is_same_thread", (PyCFunction)Tool_is_same_thread, METH_NOARGS, "whether this is the tool's loop thread"},
        {NULL, NULL, 0, NULL},
};

static PyObject* Tool_get_burst(ToolObject* self, void* c)
{
    (void)c;
    return PyLong_FromUnsignedLong(futoin_tool_burst(self->tool));
}

static int Tool_set_burst(ToolObject* self, PyObject* v, void* c)
{
    (void)c;
    if (!v) {
        PyErr_SetString(PyExc_TypeError, "Tool.burst cannot be deleted");
        return -1;
    }
    if (!PyLong_Check(v) || PyBool_Check(v)) {
        PyErr_SetString(PyExc_TypeError, "Tool.burst must be an int");
        return -1;
    }
    int overflow = 0;
    const long long n = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (burst_check(n, overflow, "Tool.burst")) {
        return -1;
    }
    futoin_tool_set_burst(self->tool, (uint32_t)n);
    return 0;
}

static PyGetSetDef Tool_getset[] = {
        {"virtual_time", (getter)Tool_get_virtual, NULL, NULL, NULL},
        {"burst", (getter)Tool_get_burst, (setter)Tool_set_burst,
         "steps a flow (a parallel branch) runs in a row before others get a turn", NULL},
        {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ToolType = {
        PyVarObject_HEAD_INIT(NULL, 0).tp_name = "futoin_polyglot._futoin.Tool",
        .tp_basicsize = sizeof(ToolObject),
        .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
        .tp_new = Tool_new,
        .tp_dealloc = (destructor)Tool_dealloc,
        .tp_methods = Tool_methods,
        .tp_getset = Tool_getset,
        .tp_doc = "Tool(virtual_time=False, burst=0): the scheduler (FTN12 AsyncTool) of the C core",
};

/* ---- module functions ---- */

/* An address user code hands us, checked as far as that can be done
 * without reading it: the first 64 KiB are never mapped, a FutoInAsyncSteps
 * is pointer-aligned, user space ends at 2^47 (x86-64). */
/* whether n bytes at p can be read, asked of the kernel (1 when it cannot
 * tell): an address of memory that is not mapped is an error here, not a
 * crash when it is read */
static int mem_readable(const void* p, size_t n)
{
    char buf[1024];
    if (n > sizeof(buf)) {
        n = sizeof(buf);
    }
    struct iovec local = {buf, n};
    struct iovec remote = {(void*)(uintptr_t)p, n};
    ssize_t got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
    return got == (ssize_t)n || (got < 0 && errno != EFAULT);
}

static void* steps_address(PyObject* addr)
{
    if (!PyLong_Check(addr)) {
        PyErr_Format(PyExc_TypeError, "a FutoInAsyncSteps address must be an int, not %.100s",
                     Py_TYPE(addr)->tp_name);
        return NULL;
    }
    unsigned long long a = PyLong_AsUnsignedLongLong(addr);
    if (PyErr_Occurred()) {
        return overflow_as_value("a FutoInAsyncSteps address"); /* negative too */
    }
    int bad = a < 65536 || (a & (sizeof(void*) - 1)) != 0;
#if defined(__x86_64__)
    bad = bad || a >= (1ULL << 47);
#endif
    if (a == 0) {
        PyErr_SetString(PyExc_ValueError, "a NULL FutoInAsyncSteps*");
        return NULL;
    }
    /* (PyErr_Format() knows no %llx) */
    char msg[96];
    if (bad || (unsigned long long)(uintptr_t)a != a) {
        snprintf(msg, sizeof(msg), "0x%llx is no FutoInAsyncSteps address", a);
        PyErr_SetString(PyExc_ValueError, msg);
        return NULL;
    }
    /* the api pointer read through the kernel: memory that is not mapped is
     * an error here, not a crash when it is read */
    if (!mem_readable((void*)(uintptr_t)a, sizeof(FutoInAsyncSteps))) {
        snprintf(msg, sizeof(msg), "0x%llx is no FutoInAsyncSteps address: not readable memory", a);
        PyErr_SetString(PyExc_ValueError, msg);
        return NULL;
    }
    return (void*)(uintptr_t)a;
}

static PyObject* mod_wrap(PyObject* m, PyObject* args)
{
    (void)m;
    PyObject* addr;
    PyObject* tool = Py_None;
    if (!PyArg_ParseTuple(args, "O|O:wrap", &addr, &tool)) {
        return NULL;
    }
    if (tool != Py_None && !PyObject_TypeCheck(tool, &ToolType)) {
        PyErr_Format(PyExc_TypeError, "wrap(): tool must be a Tool or None, not %.100s", Py_TYPE(tool)->tp_name);
        return NULL;
    }
    void* p;
    if (PyCapsule_CheckExact(addr)) {
        /* this package's own capsules of other things are no steps */
        const char* name = PyCapsule_GetName(addr);
        if (name && strncmp(name, "futoin.", 7) == 0) {
            PyErr_Format(PyExc_TypeError, "wrap(): a '%s' capsule holds no FutoInAsyncSteps", name);
            return NULL;
        }
        p = PyCapsule_GetPointer(addr, name);
    } else {
        p = steps_address(addr);
    }
    if (!p) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "wrap() needs a non-NULL FutoInAsyncSteps*");
        }
        return NULL;
    }
    const FutoInAsyncSteps* bsi = p;
    if (!futoin_steps_is_native(p)
            && (!bsi->api || !mem_readable(bsi->api, sizeof(*bsi->api)) || !bsi->api->add)) {
        PyErr_SetString(PyExc_ValueError, "wrap(): not a FutoInAsyncSteps* (no API table with add() there)");
        return NULL;
    }
    if (tool == Py_None) {
        tool = tool_object_of(p);
    }
    StepsObject* v = view_new(p, tool);
    if (v) {
        view_hold_root(v);
    }
    return (PyObject*)v;
}

static PyObject* mod_is_native(PyObject* m, PyObject* addr)
{
    (void)m;
    void* p = steps_address(addr);
    if (!p) {
        return NULL;
    }
    return PyBool_FromLong(futoin_steps_is_native(p));
}

/* sync_address(obj): the FutoInSync* C code passes to addSync() (ours, or
 * an ISync's adapter kept by the object: valid while obj lives) */
static PyObject* mod_sync_address(PyObject* m, PyObject* obj)
{
    (void)m;
    FutoInSync* s = sync_of(obj, NULL);
    return s ? PyLong_FromVoidPtr(s) : NULL;
}

/* the capsule keeps the object's tool alive: freeing the object stops its
 * timers on that tool */
static void sync_capsule_free(PyObject* cap)
{
    futoin_sync_free(PyCapsule_GetPointer(cap, "futoin.core_sync"));
    Py_XDECREF((PyObject*)PyCapsule_GetContext(cap));
}

static PyObject* sync_capsule(FutoInSync* s, ToolObject* tool)
{
    if (!s) {
        return PyErr_NoMemory();
    }
    PyObject* cap = PyCapsule_New(s, "futoin.core_sync", sync_capsule_free);
    if (!cap) {
        futoin_sync_free(s);
        return NULL;
    }
    Py_INCREF(tool);
    PyCapsule_SetContext(cap, tool);
    return cap;
}

static uint32_t queue_limit(PyObject* o)
{
    if (!o || o == Py_None) {
        return FUTOIN_UNLIMITED;
    }
    unsigned long v = PyLong_AsUnsignedLong(o);
    return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

static PyObject* mod_mutex_new(PyObject* m, PyObject* args)
{
    (void)m;
    ToolObject* t;
    unsigned int max;
    PyObject* mq;
    if (!PyArg_ParseTuple(args, "O!IO", &ToolType, &t, &max, &mq)) {
        return NULL;
    }
    uint32_t q = queue_limit(mq);
    if (PyErr_Occurred()) {
        return NULL;
    }
    return sync_capsule(futoin_mutex_new(t->tool, max, q), t);
}

static PyObject* mod_throttle_new(PyObject* m, PyObject* args)
{
    (void)m;
    ToolObject* t;
    unsigned int max, period;
    PyObject* mq;
    if (!PyArg_ParseTuple(args, "O!IIO", &ToolType, &t, &max, &period, &mq)) {
        return NULL;
    }
    uint32_t q = queue_limit(mq);
    if (PyErr_Occurred()) {
        return NULL;
    }
    return sync_capsule(futoin_throttle_new(t->tool, max, period, q), t);
}

static PyObject* mod_limiter_new(PyObject* m, PyObject* args)
{
    (void)m;
    ToolObject* t;
    FutoInLimiterOptions o;
    if (!PyArg_ParseTuple(args, "O!IIIII", &ToolType, &t, &o.concurrent, &o.max_queue, &o.rate, &o.period_ms,
                          &o.burst)) {
        return NULL;
    }
    return sync_capsule(futoin_limiter_new(t->tool, &o), t);
}

static PyObject* mod_step_handle(PyObject* m, PyObject* args)
{
    /* (execute address, data address, owner) for handing a Python step to
     * C code that calls api->add itself; owner must stay alive meanwhile */
    (void)m;
    PyObject* func;
    PyObject* tool = Py_None;
    if (!PyArg_ParseTuple(args, "O|O:step_handle", &func, &tool)) {
        return NULL;
    }
    if (body_check(func, "step")) {
        return NULL;
    }
    if (tool != Py_None && !PyObject_TypeCheck(tool, &ToolType)) {
        return PyErr_Format(PyExc_TypeError, "tool must be a Tool or None, not %.100s", Py_TYPE(tool)->tp_name);
    }
    pyfrag* f = PyMem_Calloc(1, sizeof(pyfrag));
    if (!f) {
        return PyErr_NoMemory();
    }
    Py_INCREF(func);
    Py_INCREF(tool);
    f->func = func;
    f->tool = tool;
    frag_arity(f);
    PyObject* owner = PyCapsule_New(f, "futoin.step_handle", NULL);
    if (!owner) {
        return NULL;
    }
    return Py_BuildValue("(NNN)", PyLong_FromVoidPtr((void*)(uintptr_t)tr_exec), PyLong_FromVoidPtr(f), owner);
}

static void pyfrag_destroy_heap(void* data)
{
    pyfrag* f = data;
    PyGILState_STATE g = PyGILState_Ensure();
    Py_XDECREF(f->func);
    Py_XDECREF(f->onerror);
    Py_XDECREF(f->tool);
    PyMem_Free(f);
    PyGILState_Release(g);
}

/* fragment(func, onerror, tool) -> (exec, error, loop, repeat, data, destroy)
 * addresses: a Python step for a host that adds it through the vtable and
 * calls destroy(data) when done (the conformance seam, C libraries) */
static PyObject* mod_fragment(PyObject* m, PyObject* args)
{
    (void)m;
    PyObject *func, *onerror = Py_None, *tool = Py_None;
    if (!PyArg_ParseTuple(args, "O|OO:fragment", &func, &onerror, &tool)) {
        return NULL;
    }
    if (body_check(func, "fragment step") || (onerror != Py_None && body_check(onerror, "fragment onerror"))) {
        return NULL;
    }
    pyfrag* f = PyMem_Calloc(1, sizeof(pyfrag));
    if (!f) {
        return PyErr_NoMemory();
    }
    Py_INCREF(func);
    Py_INCREF(tool);
    f->func = func;
    f->onerror = onerror == Py_None ? NULL : (Py_INCREF(onerror), onerror);
    f->tool = tool;
    frag_arity(f);
    return Py_BuildValue("(NNNNNN)", PyLong_FromVoidPtr((void*)(uintptr_t)tr_exec),
                         PyLong_FromVoidPtr(f->onerror ? (void*)(uintptr_t)tr_error : NULL),
                         PyLong_FromVoidPtr((void*)(uintptr_t)tr_loop),
                         PyLong_FromVoidPtr((void*)(uintptr_t)tr_repeat), PyLong_FromVoidPtr(f),
                         PyLong_FromVoidPtr((void*)(uintptr_t)pyfrag_destroy_heap));
}

static PyObject* mod_release_step_handle(PyObject* m, PyObject* cap)
{
    (void)m;
    pyfrag* f = PyCapsule_GetPointer(cap, "futoin.step_handle");
    if (!f) {
        return NULL;
    }
    if (f != (void*)1 && f->func) { /* 1: released already (through another holder of the capsule) */
        Py_CLEAR(f->func);
        Py_CLEAR(f->tool);
        PyMem_Free(f);
        PyCapsule_SetPointer(cap, (void*)1);
    }
    Py_RETURN_NONE;
}

static PyObject* mod_setup(PyObject* m, PyObject* args)
{
    (void)m;
    PyObject *err, *state, *view, *cancelled, *await_step;
    if (!PyArg_ParseTuple(args, "OOO!OO", &err, &state, &PyType_Type, &view, &cancelled, &await_step)) {
        return NULL;
    }
    if (!PyType_IsSubtype((PyTypeObject*)view, &StepsType)) {
        PyErr_SetString(PyExc_TypeError, "view type must derive from AsyncStepsBase");
        return NULL;
    }
    Py_INCREF(err);
    Py_INCREF(state);
    Py_INCREF(view);
    Py_XSETREF(g_FutoInError, err);
    Py_XSETREF(g_State, state);
    Py_XSETREF(g_ViewType, (PyTypeObject*)view);
    Py_INCREF(cancelled);
    Py_XSETREF(g_on_cancelled, cancelled);
    Py_INCREF(await_step);
    Py_XSETREF(g_AwaitStep, await_step);
    Py_RETURN_NONE;
}

static PyMethodDef mod_methods[] = {
        {"wrap", mod_wrap, METH_VARARGS, "wrap(address_or_capsule, tool=None): view over a FutoInAsyncSteps*"},
        {"is_native", mod_is_native, METH_O, "True if the pointer comes from this core"},
        {"sync_address", mod_sync_address, METH_O, "sync_address(obj): its FutoInSync* for C code"},
        {"mutex_new", mod_mutex_new, METH_VARARGS, NULL},
        {"throttle_new", mod_throttle_new, METH_VARARGS, NULL},
        {"limiter_new", mod_limiter_new, METH_VARARGS, NULL},
        {"step_handle", mod_step_handle, METH_VARARGS, NULL},
        {"release_step_handle", mod_release_step_handle, METH_O, NULL},
        {"fragment", mod_fragment, METH_VARARGS, "raw callbacks of a Python step for other hosts"},
        {"_setup", mod_setup, METH_VARARGS, NULL},
        {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "_futoin", "C core of futoin_polyglot", -1,
                                    mod_methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__futoin(void)
{
    if (PyType_Ready(&StepsType) < 0 || PyType_Ready(&ToolType) < 0 || PyType_Ready(&CStepType) < 0
            || PyType_Ready(&HandleType) < 0 || PyType_Ready(&SyncAdapterType) < 0) {
        return NULL;
    }
    PyObject* m = PyModule_Create(&moddef);
    if (!m) {
        return NULL;
    }
    Py_INCREF(&StepsType);
    Py_INCREF(&ToolType);
    Py_INCREF(&CStepType);
    PyModule_AddObject(m, "AsyncStepsBase", (PyObject*)&StepsType);
    PyModule_AddObject(m, "Tool", (PyObject*)&ToolType);
    PyModule_AddObject(m, "CStep", (PyObject*)&CStepType);
    Py_INCREF(&HandleType);
    PyModule_AddObject(m, "Handle", (PyObject*)&HandleType);
    PyModule_AddIntConstant(m, "ABI_VERSION", futoin_abi_version());
    PyModule_AddStringConstant(m, "CORE_VERSION", futoin_version());
    return m;
}
