/*
 * postproc/resolve/resolve_names.h: the name a resolved frame shows for a DWARF
 * function (subprogram or inlined call).
 */
#ifndef AT_RESOLVE_NAMES_H
#define AT_RESOLVE_NAMES_H

#include <elfutils/libdw.h>

#include "demangle.h"

/* "ns::Class::f(int) const" for C++, "f()" for C; NULL when the DIE has
 * no name at all. malloc'ed. */
char *at_die_function_name(Dwarf_Die *die, at_demangler *dm);

#endif
