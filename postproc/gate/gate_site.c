/*
 * postproc/gate/gate_site.c: where a leak was made, for the first line of a
 * report group and the JUnit message: the first frame, innermost first,
 * that is not an allocation wrapper. "leaked from __strdup" says nothing;
 * "in dup_name" says where to look.
 *
 * The wrappers are a fixed list (anchored regexes on the function name):
 * the C library's functions that return new memory (strdup, asprintf...,
 * under glibc's DWARF names too), operator new and the C++ standard
 * library's own frames (a qualified name in std:: or __gnu_cxx::, read past
 * the return type and outside template arguments, so that a program's
 * descend<std::string>() stays the program's: a container's growth is named
 * by the code that grew it), and the
 * xmalloc family and
 * GLib's g_malloc family that programs use as their allocator. When every
 * frame is one (a stack cut by the depth limit), the innermost is named.
 */
#include "gate.h"

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

static const char WRAPPERS[] =
    "^(__)?(strn?dup|wcsn?dup|v?asprintf|__vasprintf_internal|getline|getdelim|"
    "open_memstream|realpath|canonicalize_file_name|reallocarray|"
    "(__libc_)?(malloc|calloc|realloc|memalign|valloc|pvalloc|aligned_alloc|posix_memalign))$"
    "|^operator new"
    "|^x(malloc|calloc|realloc|reallocarray|zalloc|strdup|strndup|memdup|asprintf|vasprintf)$"
    "|^g_(malloc|malloc0|malloc_n|malloc0_n|realloc|realloc_n|try_malloc|try_malloc0|try_realloc|"
    "strdup|strndup|memdup|memdup2|slice_alloc|slice_alloc0|slice_copy|new_|strdup_printf|"
    "strdup_vprintf)";

/* Whether a C++ function's qualified name (the last word before its
 * parameters, template arguments skipped) is in std:: or __gnu_cxx::. */
static bool in_std(const char *f)
{
    const char *name = f;
    unsigned depth = 0;
    for (const char *p = f; *p; p++) {
        if (strncmp(p, "operator", 8) == 0) { /* operator<<, operator(): no brackets */
            p += 8;
            while (*p && strchr("<>=-*", *p))
                p++;
            if (strncmp(p, "()", 2) == 0)
                p += 2;
            if (!*p)
                break;
        }
        if (*p == '<')
            depth++;
        else if (*p == '>' && depth)
            depth--;
        else if (*p == '(' && !depth)
            break;
        else if (*p == ' ' && !depth)
            name = p + 1;
    }
    return strncmp(name, "std::", 5) == 0 || strncmp(name, "__gnu_cxx::", 11) == 0;
}

bool at_gate_is_wrapper(const char *function)
{
    if (strcmp(function, AT_UNKNOWN) != 0 && in_std(function))
        return true;
    static regex_t re;
    static int ready; /* 1 compiled, -1 failed (then nothing is a wrapper) */
    if (!ready)
        ready = regcomp(&re, WRAPPERS, REG_EXTENDED | REG_NOSUB) == 0 ? 1 : -1;
    return ready == 1 && strcmp(function, AT_UNKNOWN) != 0 && regexec(&re, function, 0, NULL, 0) == 0;
}

const at_frame_info *at_gate_alloc_site(const at_frame_info *frames, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (!at_gate_is_wrapper(frames[i].function))
            return &frames[i];
    return n ? &frames[0] : NULL;
}

void at_gate_print_site(FILE *out, const at_frame_info *f, void (*esc)(FILE *, const char *))
{
    if (!f) {
        esc(out, "??");
        return;
    }
    char place[512];
    bool named = strcmp(f->function, AT_UNKNOWN) != 0;
    esc(out, named ? f->function : at_frame_place(f, place, sizeof place));
    if (!named && strcmp(f->module, AT_UNKNOWN) != 0)
        return; /* "old.so+0x234" names its object already */
    if (strcmp(f->file, AT_UNKNOWN) != 0) {
        fputs(" (", out);
        esc(out, at_path_base(f->file));
        fprintf(out, ":%u)", f->line);
    } else if (strcmp(f->module, AT_UNKNOWN) != 0) {
        fputs(" (", out);
        esc(out, at_path_base(f->module));
        fputc(')', out);
    }
}
