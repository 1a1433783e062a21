/*
 * postproc/trace.h: the record model every stage of alloctrace-postproc
 * works on, and the stage interface that chains them.
 *
 * A trace is a stream of records (TEXT_FORMAT.md): the header, registries,
 * map lines, comments, attachments and calls. The reader hands them one at
 * a time to the first stage; each stage passes what it keeps to the next
 * (at_stage_put) and, at the end of input, flushes what it buffered and
 * finishes the next (at_stage_finish). So the whole file is never in memory:
 * only stages that must wait for the end (leaks pairing, compression) hold
 * records, and they hold only what they must (live blocks, groups).
 *
 * Lifetime: a record and what it points to are valid only during the put
 * call, except the things owned by the at_trace (registries, interned
 * stacks, interned names, the header, map paths), which live as long as the
 * trace. A map record's at_map itself moves when the map table grows. A
 * stage that keeps a record copies it with at_record_copy.
 *
 * The compressed form of the input is not a record kind of its own: the
 * reader gives every call of a group the group's stack, and a compressing
 * stage hands groups (AT_REC_GROUP) to the writer or an export.
 */
#ifndef AT_TRACE_H
#define AT_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "maps.h"
#include "stack.h"

/* Header filter bits, in the order the header lists them. */
enum {
    AT_F_LEAKS = 1u << 0,
    AT_F_COMPRESS = 1u << 1,
    AT_F_RESOLVE = 1u << 2,
};

typedef struct at_kv {
    char *key;
    char *value;
} at_kv;

/* The header line. Known keys are parsed; every field is kept as its text
 * too (NULL when absent), so the writer reproduces what it read. */
typedef struct at_header {
    bool present;       /* the input had a header line */
    char *version, *arch, *timestamp, *process, *pid, *depth, *origin;
    char *sample;       /* "sampling interval=": the trace is sampled (sampling.h) */
    uint64_t sample_interval; /* its value in bytes; 0: every call is in the trace */
    bool time_on_change; /* "time=on change": a call without a time has the last time
                          * before it in index order (reorder.h); never written back */
    char *snapshot;     /* a snapshot file's "## snapshot: N LABEL" line: "N LABEL", or NULL */
    unsigned filter;    /* AT_F_* */
    char *filter_other; /* filter words that are not leaks/compress/resolve, "|"-joined, or NULL */
    at_kv *unknown;     /* other keys, in input order */
    size_t nunknown;
} at_header;

#define AT_MAX_RESOURCES 32

typedef struct at_resource {
    uint32_t bit;   /* 0x1, 0x2, ... */
    char *name;     /* "memory" */
    char *desc;     /* "memory allocation in bytes" */
    bool refcount;
} at_resource;

typedef struct at_context {
    uint32_t bit;
    char *name;
} at_context;

typedef struct at_arg {
    const char *name;  /* without the '$' */
    const char *value; /* to the end of the line */
} at_arg;

/* One allocation or release. The words first, then the small fields, so
 * that no padding falls between them: 72 bytes, not 88 (every call is
 * copied into the reader's block, the reorder window, the resolve stage
 * and the analyzer's ring). */
typedef struct at_call {
    uint64_t index;
    uint64_t time_us;   /* microseconds since midnight */
    const char *name;   /* interned in the trace ("malloc") */
    uint64_t size;      /* 0 for a release */
    uint64_t id;
    const at_arg *args;
    const at_stack *stack; /* interned; never NULL */
    uint32_t context;   /* OR of context bits, 0 if none */
    uint32_t res;       /* resource bit: from <TYPE>, else the first registered, else 0 */
    uint32_t nargs;
    bool has_time;
    bool is_alloc;      /* allocation (has a size and "= 0xID") or release */
    uint8_t kind;          /* at_leak_kind (leakkind.h) from a "## leak kind:" line; 0: none */
} at_call;

typedef enum at_rec_kind {
    AT_REC_HEADER,     /* points to trace->header */
    AT_REC_RESOURCE,   /* a registry line, points into trace */
    AT_REC_CONTEXT,
    AT_REC_MAP,        /* points into trace->maps */
    AT_REC_COMMENT,    /* kept verbatim (never a "# " comment) */
    AT_REC_ATTACHMENT,
    AT_REC_CALL,
    AT_REC_GROUP,      /* compressed group: calls sharing one stack */
} at_rec_kind;

/* A large group comes in pieces, so that it is never all in memory: every
 * piece has the group's stack, `more` is set on all but the last, and the
 * calls of all pieces together are in index order. A stage that only looks
 * at calls can take each piece as it comes; the writer writes the summary
 * and the frames after the last piece. */
typedef struct at_group {
    const at_stack *stack;
    const at_call *const *calls; /* in index order */
    size_t ncalls;
    uint64_t total_size;         /* sum of the allocations' sizes in this piece */
    bool more;                   /* more pieces of this group follow */
} at_group;

typedef struct at_record {
    at_rec_kind kind;
    uint64_t line; /* input line number (first line of the record), 0 if none */
    union {
        const at_header *header;
        const at_resource *resource;
        const at_context *context;
        const at_map *map;
        struct {
            const char *text; /* without the line end */
            size_t len;
        } comment;
        struct {
            const char *name, *path;
        } attachment;
        const at_call *call;
        const at_group *group;
    } u;
} at_record;

/* *c into d field by field, each load the width of the store that may
 * have just written it (the stage before wrote the call, or carried its
 * time into it: an 8-byte store of time_us, a byte store of has_time):
 * a struct copy's 16-byte loads over two such stores cannot take their
 * bytes from the store buffer and wait for the stores to reach the
 * cache. The empty asm statements keep the compiler from merging the
 * loads again. d->stack is left NULL for the caller. */
static inline void at_call_copy_fresh(at_call *d, const at_call *c)
{
    d->index = c->index;
    __asm__ volatile("" ::: "memory");
    d->time_us = c->time_us;
    __asm__ volatile("" ::: "memory");
    d->name = c->name;
    __asm__ volatile("" ::: "memory");
    d->size = c->size;
    __asm__ volatile("" ::: "memory");
    d->id = c->id;
    __asm__ volatile("" ::: "memory");
    d->args = c->args;
    d->stack = NULL;
    d->context = c->context;
    __asm__ volatile("" ::: "memory");
    d->res = c->res;
    __asm__ volatile("" ::: "memory");
    d->nargs = c->nargs;
    __asm__ volatile("" ::: "memory");
    d->has_time = c->has_time;
    __asm__ volatile("" ::: "memory");
    d->is_alloc = c->is_alloc;
    __asm__ volatile("" ::: "memory");
    d->kind = c->kind;
}

/* A call's record in *rec, each field in one store and nothing else
 * written: a record is read by the next stage right away, and a struct
 * initializer's zeroing of the padding and the union's rest (unaligned
 * 16-byte stores across kind, line and u) left the next stage's loads of
 * line and u.call to wait for those stores to reach the cache instead of
 * taking their bytes from the store buffer: 3-4% of the reading thread's
 * samples on a compiler's trace. */
static inline void at_call_record(at_record *rec, const at_call *c, uint64_t line)
{
    rec->kind = AT_REC_CALL;
    rec->line = line;
    rec->u.call = c;
}

/* What the stages share: the registries, maps, interned stacks and names.
 * Filled by the reader as it goes. */
typedef struct at_trace {
    at_header header;
    at_resource resources[AT_MAX_RESOURCES];
    uint32_t nresources;
    at_context contexts[32];
    uint32_t ncontexts;
    at_maps *maps;
    at_stack_table *stacks;
    struct at_names *names;
    bool input_compressed; /* the input's header said filter=compress */
    bool calls_in_order;   /* a reorder stage (reorder.h) puts such calls back in index order */
    uint64_t chunk_end;    /* the last "# chunk end: INDEX" mark seen (0: none) */
} at_trace;

at_trace *at_trace_new(void);
void at_trace_free(at_trace *t);

/* An interned copy of s[0..len): equal strings give equal pointers. */
const char *at_trace_name(at_trace *t, const char *s, size_t len);

/* The registered resource with this bit, or NULL. */
const at_resource *at_trace_resource(const at_trace *t, uint32_t bit);
/* The registered resource with this name, or NULL. */
const at_resource *at_trace_resource_named(const at_trace *t, const char *name, size_t len);

/* Adds or replaces a registry entry (by bit). Returns the stored one. */
const at_resource *at_trace_add_resource(at_trace *t, uint32_t bit, const char *name,
                                         const char *desc, bool refcount);
const at_context *at_trace_add_context(at_trace *t, uint32_t bit, const char *name);

/* Header field setters (copy the value; NULL clears). */
void at_header_set(char **field, const char *value, size_t len);
void at_header_add_unknown(at_header *h, const char *key, size_t klen, const char *value,
                           size_t vlen);
void at_header_clear(at_header *h);

/* A deep copy of a record that outlives the put call (things owned by the
 * trace are shared, not copied), and its release. Groups are not copied. */
at_record *at_record_copy(const at_record *r);
void at_record_free(at_record *r);

/* A call copied into one malloc'ed block (args included). */
at_call *at_call_copy(const at_call *c);

/* ---- stages ------------------------------------------------------------ */

typedef struct at_stage at_stage;
struct at_stage {
    void (*put)(at_stage *self, const at_record *r);
    void (*finish)(at_stage *self); /* end of input: flush, then finish next */
    at_stage *next;
};

static inline void at_stage_put(at_stage *s, const at_record *r)
{
    s->put(s, r);
}

static inline void at_stage_finish(at_stage *s)
{
    s->finish(s);
}

/* A stage that passes everything on, for stages that only look at some
 * records to build on. */
void at_stage_pass_put(at_stage *self, const at_record *r);
void at_stage_pass_finish(at_stage *self);

#endif
