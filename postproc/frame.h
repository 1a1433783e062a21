/*
 * postproc/frame.h: what a frame says, read from its resolved text (forms
 * of TEXT_FORMAT.md section 5) or, for an unresolved frame, from the maps.
 * Filters, exports and the leak gate all read frames through this, so the
 * text forms are parsed in one place.
 */
#ifndef AT_FRAME_H
#define AT_FRAME_H

#include <stdbool.h>
#include <stdint.h>

#include "maps.h"
#include "stack.h"

#define AT_UNKNOWN "??"

typedef struct at_frame_info {
    uint64_t addr;
    const char *function; /* "xmalloc", "ns::Foo::bar(int) const"; "??" if unknown.
                             C names lose the "()" the resolver adds. */
    const char *file;     /* full path as written; "??" if unknown */
    unsigned line;        /* 0 if unknown, or code of no particular line of file */
    const char *module;   /* object path; from the text or the maps; "??" if none */
    bool inlined;         /* text ended in " [inlined]" */
} at_frame_info;

/* Fills info for one frame. Strings point into storage of `arena` (or are
 * the static AT_UNKNOWN), valid as long as the table. maps may be NULL. */
void at_frame_read(const at_frame *frame, const at_maps *maps, at_stack_table *arena,
                   at_frame_info *info);

/* The last component of a path ("config.c" of "/src/config.c"); the path
 * itself when it ends in '/' or has none. */
const char *at_path_base(const char *path);

/* Fills infos[0 .. stack->nframes) in the stack's order (innermost first). */
void at_frame_read_stack(const at_stack *stack, const at_maps *maps, at_stack_table *arena,
                         at_frame_info *infos);

#endif
