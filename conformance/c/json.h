/* A small JSON reader for the conformance runner (no dependency). Numbers
 * keep their source text so 64-bit integers are read exactly. */
#ifndef FTN_CONF_JSON_H
#define FTN_CONF_JSON_H

#include <stddef.h>

typedef enum
{
    JNULL,
    JBOOL,
    JNUM,
    JSTR,
    JARR,
    JOBJ
} jtype;

typedef struct jval jval;
struct jval
{
    jtype type;
    int b;
    double num;
    char* str;    /* JSTR: the string; JNUM: the source text */
    size_t len;   /* JARR/JOBJ: item count */
    jval* items;  /* JARR/JOBJ: items */
    char** keys;  /* JOBJ: keys, parallel to items */
};

/* Parse; NULL on error with a message in err. */
jval* json_parse(const char* text, char* err, size_t errlen);
jval* json_load_file(const char* path, char* err, size_t errlen);
void json_free(jval* v);

const jval* json_get(const jval* obj, const char* key);
const char* json_str(const jval* v, const char* dflt);
double json_num(const jval* v, double dflt);

#endif
