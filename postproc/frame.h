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
    bool has_offset;      /* the maps place addr in module: offset is known */
    uint64_t offset;      /* addr - the module's load base: the same in every run */
} at_frame_info;

/* Fills info for one frame. Strings point into storage of `arena` (or are
 * the static AT_UNKNOWN), valid as long as the table. maps may be NULL. */
void at_frame_read(const at_frame *frame, const at_maps *maps, at_stack_table *arena,
                   at_frame_info *info);

/* An unresolved frame's name that stays the same from run to run:
 * "libxml2.so.2+0x1316be" (module base name and offset); "libx.so@0xADDR"
 * when only the frame's text names the module; else "0xADDR". Written into buf (at least 64 bytes more than the
 * module's base name is long; truncated to len) and returned. */
const char *at_frame_place(const at_frame_info *fi, char *buf, size_t len);

/* The last component of a path ("config.c" of "/src/config.c"); the path
 * itself when it ends in '/' or has none. */
const char *at_path_base(const char *path);

/* Fills infos[0 .. stack->nframes) in the stack's order (innermost first). */
void at_frame_read_stack(const at_stack *stack, const at_maps *maps, at_stack_table *arena,
                         at_frame_info *infos);

#endif
