/*
 * postproc/resolve/demangle.h: C++ names demangled with their parameter list
 * ("_ZN2ns3fooEi" -> "ns::foo(int)"), by the C++ runtime's own demangler.
 */
#ifndef AT_DEMANGLE_H
#define AT_DEMANGLE_H

typedef struct at_demangler at_demangler;

at_demangler *at_demangler_new(void);
void at_demangler_free(at_demangler *d);

/* The demangled form of a mangled C++ name (malloc'ed), or NULL when the
 * name is not one ("main", "foo.cold") or no demangler is available. */
char *at_demangle(at_demangler *d, const char *name);

#endif
