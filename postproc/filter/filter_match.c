/*
 * postproc/filter/filter_match.c: does a filter hold for a stack and a size?
 *
 * A list sub-filter is a glob over the frames outermost first (docs/filters.md
 * section 4). It is matched by dynamic programming over (element, frame):
 * row i says which frame prefixes the first i elements can cover, so the
 * cost is O(elements x frames) whatever the filter, and a recursive stack
 * never defeats it the way a lazy one-pass scan is defeated. Each
 * (element, frame) test is made at most once.
 *
 * Results are cached three times: per element, its answer per distinct
 * frame (when the set read the frames itself, filter_frames.c); per
 * filter, its list part per stack id; per set, the filters whose list part
 * matches each stack, so that at_filter_set_first_match costs, per
 * allocation, only the size checks of those few candidates.
 */
#include "filter_impl.h"
#include "xalloc.h"

#include <stdio.h>
#include <string.h>

/* ---- one element against one frame -------------------------------------- */

/* A regex that hit PCRE2's limits this often is tested with the tight
 * limits from then on: a pattern that backtracks exponentially would
 * otherwise cost the full limit on every distinct frame (10k frames
 * against (a+)+$ took 191 s with PCRE2's default limit of ten million). */
#define REGEX_HITS_BEFORE_TIGHT 8

static void note_undecided(at_filter_set *s, const at_felem *e, const char *subject, int rc)
{
    at_filter_undecided *u = &s->undecided;
    if (u->count++)
        return;
    PCRE2_UCHAR msg[128];
    if (pcre2_get_error_message(rc, msg, sizeof msg) < 0)
        snprintf((char *)msg, sizeof msg, "PCRE2 error %d", rc);
    u->label = at_xstrdup(s->matching ? s->matching->label : "?");
    u->regex = at_xstrdup(e->text);
    u->subject = at_xstrdup(subject);
    u->reason = at_xstrdup((const char *)msg);
}

static bool regex_search(at_filter_set *s, at_felem *e, const char *subject)
{
    size_t len = strlen(subject);
    pcre2_match_context *mc = e->limit_hits < REGEX_HITS_BEFORE_TIGHT ? s->mctx : s->mctx_tight;
    int rc = e->jit ? pcre2_jit_match(e->re, (PCRE2_SPTR)subject, len, 0, 0, s->md, mc)
                    : pcre2_match(e->re, (PCRE2_SPTR)subject, len, 0, 0, s->md, mc);
    /* 0 means a match whose ovector did not fit: still a match. */
    if (rc >= 0)
        return true;
    if (rc != PCRE2_ERROR_NOMATCH) {
        /* a limit (or another PCRE2 error): undecided, reported by the stage */
        e->limit_hits++;
        note_undecided(s, e, subject, rc);
    }
    return false;
}

/* A literal path: the whole path or a trailing part at a '/' boundary; a
 * literal starting with '/' names the whole path. A literal ending in '/'
 * is a run of whole directory components anywhere in the path (at its
 * start when the literal starts with '/'). */
static bool path_matches(const at_felem *e, const char *path)
{
    size_t n = strlen(path);
    if (e->dir) {
        if (e->text[0] == '/')
            return n > e->len && memcmp(path, e->text, e->len) == 0;
        /* Try each component start (paths have few): cheaper than memmem. */
        for (size_t i = 0; i + e->len < n; i++)
            if ((i == 0 || path[i - 1] == '/') && path[i] == e->text[0] &&
                memcmp(path + i, e->text, e->len) == 0)
                return true;
        return false;
    }
    if (e->len > n || memcmp(path + n - e->len, e->text, e->len) != 0)
        return false;
    if (e->len == n)
        return true;
    return e->text[0] != '/' && path[n - e->len - 1] == '/';
}

/* Length of a function name without its parameter list: the text before
 * the '(' that opens the last balanced (...) group ("ns::Foo::bar(int)
 * const" -> "ns::Foo::bar", "S::operator()(int)" -> "S::operator()").
 * The whole length when there is none. */
static size_t name_without_params(const char *fn, size_t n)
{
    size_t close = n;
    while (close > 0 && fn[close - 1] != ')')
        close--;
    if (close == 0)
        return n;
    int depth = 0;
    for (size_t i = close; i-- > 0;) {
        if (fn[i] == ')')
            depth++;
        else if (fn[i] == '(' && --depth == 0)
            return i > 0 ? i : n;
    }
    return n;
}

static bool function_matches(const at_felem *e, const char *fn)
{
    size_t n = strlen(fn);
    if (n == e->len)
        return memcmp(fn, e->text, n) == 0;
    /* Without its parameter list the name is the literal only if the
     * list's '(' comes right after it. */
    return n > e->len && fn[e->len] == '(' && memcmp(fn, e->text, e->len) == 0 &&
           name_without_params(fn, n) == e->len;
}

static bool elem_matches(at_filter_set *s, at_fkind kind, at_felem *e, const at_frame_info *f)
{
    const char *subject;
    switch (kind) {
    case AT_FK_CALLSTACK:
        if (f->line < e->line_lo || f->line > e->line_hi)
            return false;
        subject = f->file;
        break;
    case AT_FK_STRING:
        subject = f->file;
        break;
    case AT_FK_FUNCTIONS:
        subject = f->function;
        break;
    default:
        subject = f->module;
        break;
    }
    if (!subject)
        subject = AT_UNKNOWN;
    if (e->type == AT_EL_REGEX)
        return regex_search(s, e, subject);
    if (kind == AT_FK_FUNCTIONS)
        return function_matches(e, subject);
    return path_matches(e, subject);
}

/* elem_matches through the element's memo for frame id `id`. */
static bool elem_matches_memo(at_filter_set *s, at_fkind kind, at_felem *e, const at_frame_info *f, uint32_t id)
{
    if (id >= e->memo_cap) {
        size_t cap = e->memo_cap ? e->memo_cap : 256;
        while (cap <= id)
            cap *= 2;
        e->memo = at_xrealloc(e->memo, cap / 4);
        memset(e->memo + e->memo_cap / 4, 0, (cap - e->memo_cap) / 4);
        e->memo_cap = cap;
    }
    unsigned shift = (id & 3) * 2;
    unsigned v = (e->memo[id / 4] >> shift) & 3;
    if (!v) {
        v = elem_matches(s, kind, e, f) ? 2 : 1;
        e->memo[id / 4] |= (uint8_t)(v << shift);
    }
    return v == 2;
}

/* ---- the glob ----------------------------------------------------------- */

bool at_fsub_list_matches(at_filter_set *s, const at_fsub *sub, const at_frame_info *frames,
                          const uint32_t *ids, size_t n)
{
    /* prev[j]: the elements so far cover exactly the first j frames
     * (outermost first: frame j of the list is frames[n - 1 - j]). */
    bool small[2][130];
    bool *prev = small[0], *cur = small[1], *heap = NULL;
    if (n + 1 > sizeof small[0]) {
        heap = at_xrealloc(NULL, 2 * (n + 1) * sizeof *heap);
        prev = heap;
        cur = heap + n + 1;
    }
    memset(prev, 0, (n + 1) * sizeof *prev);
    prev[0] = true;
    /* Elements [tail, nelems) are all wildcards: once the last other
     * element fits anywhere, they take the rest and the list matches. */
    size_t tail = sub->nelems;
    while (tail > 0 && sub->elems[tail - 1].type == AT_EL_WILD)
        tail--;
    bool early = tail > 0 && tail < sub->nelems;
    for (size_t i = 0; i < sub->nelems; i++) {
        at_felem *e = &sub->elems[i];
        bool any = false;
        if (e->type == AT_EL_WILD) {
            cur[0] = prev[0];
            for (size_t j = 1; j <= n; j++)
                cur[j] = prev[j] || cur[j - 1];
            any = cur[n]; /* the OR of the previous row */
        } else {
            cur[0] = false;
            for (size_t j = 1; j <= n; j++) {
                cur[j] = prev[j - 1] && (ids ? elem_matches_memo(s, sub->kind, e, &frames[n - j], ids[n - j])
                                             : elem_matches(s, sub->kind, e, &frames[n - j]));
                any |= cur[j];
                if (any && early && i + 1 == tail) {
                    free(heap);
                    return true;
                }
            }
        }
        bool *t = prev;
        prev = cur;
        cur = t;
        if (!any)
            break;
    }
    bool result = prev[n];
    free(heap);
    return result;
}

bool at_fsub_size_holds(const at_fsub *sub, uint64_t size)
{
    switch (sub->op) {
    case AT_SZ_EQ: return size == sub->n;
    case AT_SZ_LT: return size < sub->n;
    case AT_SZ_LE: return size <= sub->n;
    case AT_SZ_GT: return size > sub->n;
    case AT_SZ_GE: return size >= sub->n;
    default:       return size >= sub->lo && size <= sub->hi;
    }
}

/* ---- filters and sets --------------------------------------------------- */

static bool size_part(const at_filter *f, uint64_t size)
{
    for (size_t i = 0; i < f->nsubs && f->has_size; i++)
        if (f->subs[i].is_size && !at_fsub_size_holds(&f->subs[i], size))
            return false;
    return true;
}

static bool list_part_uncached(at_filter_set *s, const at_filter *f, const at_frame_info *frames,
                               const uint32_t *ids, size_t n)
{
    s->matching = f;
    for (size_t i = 0; i < f->nsubs; i++) {
        const at_fsub *sub = &f->subs[i];
        if (!sub->is_size && at_fsub_list_matches(s, sub, frames, ids, n) == sub->negate)
            return false;
    }
    return true;
}

static bool list_part(at_filter_set *s, at_filter *f, const at_stack *stack, const at_frame_info *frames,
                      const uint32_t *ids)
{
    if (!f->has_list)
        return true;
    uint32_t id = stack->id;
    if (id >= f->cache_cap) {
        size_t cap = f->cache_cap ? f->cache_cap : 64;
        while (cap <= id)
            cap *= 2;
        f->cache = at_xrealloc(f->cache, cap);
        memset(f->cache + f->cache_cap, 0, cap - f->cache_cap);
        f->cache_cap = cap;
    }
    if (!f->cache[id])
        f->cache[id] = list_part_uncached(s, f, frames, ids, stack->nframes) ? 2 : 1;
    return f->cache[id] == 2;
}

bool at_filter_matches_frames(at_filter_set *s, size_t i, const at_frame_info *frames, size_t nframes,
                              uint64_t size)
{
    const at_filter *f = &s->filters[i];
    return size_part(f, size) && list_part_uncached(s, f, frames, NULL, nframes);
}

bool at_filter_matches(at_filter_set *s, size_t i, const at_stack *stack, const at_frame_info *frames,
                       uint64_t size)
{
    at_filter *f = &s->filters[i];
    if (!size_part(f, size))
        return false;
    return list_part(s, f, stack, frames, NULL);
}

static bool candidates_known(const at_filter_set *s, uint32_t id)
{
    return id < s->st_cap && s->st_start[id] != UINT32_MAX;
}

/* Records which filters' list parts match this stack. */
static void compute_candidates(at_filter_set *s, const at_stack *stack, const at_frame_info *frames,
                               const uint32_t *ids)
{
    uint32_t id = stack->id;
    if (id >= s->st_cap) {
        size_t cap = s->st_cap ? s->st_cap : 64;
        while (cap <= id)
            cap *= 2;
        s->st_start = at_xrealloc(s->st_start, cap * sizeof *s->st_start);
        s->st_len = at_xrealloc(s->st_len, cap * sizeof *s->st_len);
        for (size_t k = s->st_cap; k < cap; k++)
            s->st_start[k] = UINT32_MAX;
        s->st_cap = cap;
    }
    uint32_t start = (uint32_t)s->pool_len;
    for (size_t i = 0; i < s->count; i++) {
        if (!list_part(s, &s->filters[i], stack, frames, ids))
            continue;
        if (s->pool_len == s->pool_cap) {
            s->pool_cap = s->pool_cap ? 2 * s->pool_cap : 256;
            s->pool = at_xrealloc(s->pool, s->pool_cap * sizeof *s->pool);
        }
        s->pool[s->pool_len++] = (uint32_t)i;
    }
    s->st_start[id] = start;
    s->st_len[id] = (uint32_t)(s->pool_len - start);
}

static long first_candidate(const at_filter_set *s, uint32_t id, uint64_t size)
{
    const uint32_t *c = s->pool + s->st_start[id];
    for (uint32_t k = 0; k < s->st_len[id]; k++)
        if (size_part(&s->filters[c[k]], size))
            return (long)c[k];
    return -1;
}

long at_filter_set_first_match(at_filter_set *s, const at_stack *stack, const at_frame_info *frames,
                               uint64_t size)
{
    if (!candidates_known(s, stack->id))
        compute_candidates(s, stack, frames, NULL);
    return first_candidate(s, stack->id, size);
}

long at_filter_set_first_match_stack(at_filter_set *s, const at_stack *stack, const at_maps *maps,
                                     at_stack_table *arena, uint64_t size)
{
    if (!candidates_known(s, stack->id)) {
        if (stack->nframes > s->scratch_cap) {
            s->scratch_cap = stack->nframes * 2;
            s->scratch = at_xrealloc(s->scratch, s->scratch_cap * sizeof *s->scratch);
            s->scratch_ids = at_xrealloc(s->scratch_ids, s->scratch_cap * sizeof *s->scratch_ids);
        }
        for (uint32_t k = 0; k < stack->nframes; k++) {
            s->scratch_ids[k] = at_filter_frame_id(s, &stack->frames[k], maps, arena);
            s->scratch[k] = s->fr[s->scratch_ids[k]].info;
        }
        compute_candidates(s, stack, s->scratch, s->scratch_ids);
    }
    return first_candidate(s, stack->id, size);
}

const at_filter_undecided *at_filter_set_undecided(const at_filter_set *s)
{
    return &s->undecided;
}
