/*
 * tests/fuzz/fuzz_reader.c: libFuzzer target for the post-processor's
 * reader and the stages behind it (reorder first, as in main.c). The
 * first byte picks the stages (leaks, compress, a depth cut, strict
 * mode), the rest is the trace; everything
 * is written to /dev/null. Any crash, leak or sanitizer report is a bug:
 * the post-processor must never crash on any input.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "compress.h"
#include "diag.h"
#include "leaks.h"
#include "reader.h"
#include "reorder.h"
#include "select.h"
#include "trace.h"
#include "writer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int null_fd = -1;
    static FILE *null_f;
    if (null_fd < 0) {
        null_fd = open("/dev/null", O_WRONLY);
        null_f = fdopen(dup(null_fd), "w");
    }
    uint8_t flags = size ? data[0] : 0;
    if (size) {
        data++;
        size--;
    }
    at_diag d;
    at_diag_init(&d, "fuzz");
    d.out = null_f;
    d.strict = flags & 8;
    at_trace *t = at_trace_new();
    at_stage *w = at_writer_new(null_fd, t, &d), *head = w, *c = NULL, *l = NULL, *s = NULL;
    if (flags & 3)
        head = c = at_compress_new(head, t, &d, flags & 1, (at_sort)((flags >> 4) % 5),
                                   (flags & 2) ? 1 + (flags >> 6) : 0);
    at_select_opts sel;
    at_select_init(&sel);
    if ((flags & 0xc0) == 0xc0) {
        sel.use_context = true;
        sel.context_mask = flags & 1;
        sel.use_resource = true;
        sel.resource_mask = 1 | (flags & 2);
        at_select_parse_address(&sel, ":0x10+0x1000");
        head = s = at_select_new(head, t, &sel, &d);
    }
    if (flags & 4)
        head = l = at_leaks_new(head, t);
    at_stage *o = head = at_reorder_new(head, t, &d); /* first, as in main.c */
    if (at_read_mem((const char *)data, size, t, head, &d) == 0)
        at_stage_finish(head);
    at_reorder_free(o);
    at_leaks_free(l);
    at_select_free(s);
    free(sel.address_module);
    at_compress_free(c);
    at_writer_free(w);
    at_trace_free(t);
    return 0;
}
