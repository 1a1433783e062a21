/*
 * preload/process/context.c: the exported at_* API that include/alloctrace.h looks
 * up at run time: named contexts and switching tracing on and off.
 *
 * Contexts are per thread: a call's @CTX is the OR of the contexts its own
 * thread has entered and not left, so concurrent phases in different
 * threads do not mark each other's allocations. Registration is global: a
 * name gets the next free bit (the same bit if registered again) and its
 * "@ BIT : NAME" line is written before any call that can use it.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "tracer.h"

#define NAME_MAX_LEN 128

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static char names[AT_MAX_CONTEXTS][NAME_MAX_LEN];
static int nnames;

static size_t registry_line(char *out, int i)
{
    char *p = out;
    memcpy(p, AT_CTX_PREFIX, sizeof AT_CTX_PREFIX - 1);
    p += sizeof AT_CTX_PREFIX - 1;
    p += at_fmt_hex(p, 1u << i);
    memcpy(p, " : ", 3);
    p += 3;
    size_t n = strlen(names[i]);
    memcpy(p, names[i], n);
    p += n;
    *p++ = '\n';
    return (size_t)(p - out);
}

AT_EXPORT unsigned at_context_register(const char *name)
{
    if (!name || !*name)
        return 0;
    int saved = at_guard;
    at_guard = 1;
    unsigned bit = 0;
    pthread_mutex_lock(&reg_lock);
    for (int i = 0; i < nnames && !bit; i++)
        if (strncmp(names[i], name, NAME_MAX_LEN - 1) == 0)
            bit = 1u << i;
    if (!bit && nnames < AT_MAX_CONTEXTS) {
        int i = nnames++;
        size_t k = 0;
        for (; name[k] && k < NAME_MAX_LEN - 1; k++)
            names[i][k] = (name[k] == '\n' || name[k] == '\r') ? '_' : name[k];
        names[i][k] = '\0';
        bit = 1u << i;
        if (at_state == AT_STATE_ACTIVE) {
            char line[NAME_MAX_LEN + 32];
            at_append_raw(line, registry_line(line, i));
        }
    }
    pthread_mutex_unlock(&reg_lock);
    at_guard = saved;
    return bit;
}

void at_context_write_registry(void)
{
    char line[NAME_MAX_LEN + 32];
    for (int i = 0; i < nnames; i++)
        at_append_raw(line, registry_line(line, i));
}

AT_EXPORT void at_context_enter(unsigned bits) { at_ctx_mask |= bits; }
AT_EXPORT void at_context_exit(unsigned bits) { at_ctx_mask &= ~bits; }
AT_EXPORT unsigned at_context_current(void) { return at_ctx_mask; }
AT_EXPORT void at_tracing_enable(int on) { at_enabled = on != 0; }
AT_EXPORT int at_tracing_active(void) { return at_state == AT_STATE_ACTIVE && at_enabled; }

AT_EXPORT void at_trace_flush(void)
{
    int saved = at_guard;
    at_guard = 1;
    /* Not from a signal handler that interrupted the tracer on this thread:
     * it may hold ev_lock or be copying a record the flush would wait for. */
    int e = errno;   /* the write's errno is not the program's */
    if (at_state == AT_STATE_ACTIVE && !at_cfg.leaks_mode && !saved)
        at_writer_flush();
    errno = e;
    at_guard = saved;
}
