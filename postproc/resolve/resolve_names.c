/*
 * postproc/resolve/resolve_names.c: a function DIE's name as the frame text shows
 * it, the way gdb and the demangler write it.
 *
 * Decisions:
 * - A linkage name, demangled, is the answer whenever there is one: it has
 *   the namespaces, classes and parameter list exactly as the compiler
 *   meant them.
 * - gcc gives no linkage name to functions of internal linkage (a
 *   `static inline` function in a namespace, anything in an anonymous
 *   namespace): the bare DW_AT_name would show `make_array()` where gdb
 *   shows `shop::make_array(int)`. For a C++ DIE without one, the name is
 *   built: the enclosing namespaces and classes of its declaration (found
 *   through DW_AT_abstract_origin and DW_AT_specification, then
 *   dwarf_getscopes_die), then the parameter types. Types are written as
 *   the demangler writes them (`char const*`, `unsigned long`, typedefs
 *   replaced by what they name, since a mangled name has no typedefs), so
 *   a frame reads the same whether its name came from a linkage name, the
 *   symbol table or neither.
 * - Not built for main and extern "C" functions (external, at namespace
 *   scope: the same in the source as in the symbol table), nor for C: those
 *   keep "name()".
 * - Types are named only as deep as AT_TYPE_DEPTH levels; anything this
 *   code does not spell (function pointers, pointers to members) reads
 *   "?", never a wrong type.
 */
#include "resolve_names.h"
#include "xalloc.h"

#include <dwarf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AT_TYPE_DEPTH 16

/* A growing string. */
typedef struct buf {
    char *s;
    size_t len, cap;
} buf;

static void put(buf *b, const char *s)
{
    size_t n = strlen(s);
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->s = at_xrealloc(b->s, b->cap);
    }
    memcpy(b->s + b->len, s, n + 1);
    b->len += n;
}

static const char *attr_string(Dwarf_Die *die, unsigned name)
{
    Dwarf_Attribute a;
    return dwarf_formstring(dwarf_attr_integrate(die, name, &a));
}

static bool attr_flag(Dwarf_Die *die, unsigned name)
{
    Dwarf_Attribute a;
    bool v = false;
    return dwarf_formflag(dwarf_attr_integrate(die, name, &a), &v) == 0 && v;
}

static char *with_parens(const char *name)
{
    return at_xasprintf("%s()", name);
}

/* The DIE a reference attribute points at, in *out. */
static bool follow(Dwarf_Die *die, unsigned name, Dwarf_Die *out)
{
    Dwarf_Attribute a;
    return dwarf_attr(die, name, &a) && dwarf_formref_die(&a, out) != NULL;
}

/* The declaration behind a concrete or out-of-line DIE: where it sits in
 * the namespaces and classes. */
static Dwarf_Die declaration_of(Dwarf_Die *die)
{
    Dwarf_Die d = *die, next;
    for (int i = 0; i < 8; i++) {
        if (follow(&d, DW_AT_abstract_origin, &next) || follow(&d, DW_AT_specification, &next))
            d = next;
        else
            break;
    }
    return d;
}

static bool is_cxx(Dwarf_Die *die)
{
    Dwarf_Die cu;
    if (!dwarf_diecu(die, &cu, NULL, NULL))
        return false;
    int lang = dwarf_srclang(&cu);
    return lang == DW_LANG_C_plus_plus || lang == DW_LANG_C_plus_plus_03 ||
           lang == DW_LANG_C_plus_plus_11 || lang == DW_LANG_C_plus_plus_14;
}

static bool is_scope_tag(int tag)
{
    return tag == DW_TAG_namespace || tag == DW_TAG_structure_type || tag == DW_TAG_class_type ||
           tag == DW_TAG_union_type;
}

/* "ns::Class::" for the namespaces and classes around decl, outermost
 * first; returns how many there are. */
static int put_scopes(buf *b, Dwarf_Die *decl)
{
    Dwarf_Die *scopes = NULL;
    int n = dwarf_getscopes_die(decl, &scopes);
    int count = 0;
    for (int i = n - 1; i >= 1; i--) { /* scopes[0] is decl itself */
        int tag = dwarf_tag(&scopes[i]);
        if (!is_scope_tag(tag))
            continue;
        const char *name = dwarf_diename(&scopes[i]);
        put(b, name ? name : tag == DW_TAG_namespace ? "(anonymous namespace)" : "{unnamed type}");
        put(b, "::");
        count++;
    }
    free(scopes);
    return n < 0 ? -1 : count;
}

/* gcc's base type names as the demangler spells them. */
static const char *base_name(const char *name)
{
    static const char *const map[][2] = {
        { "long int", "long" },
        { "long unsigned int", "unsigned long" },
        { "short int", "short" },
        { "short unsigned int", "unsigned short" },
        { "long long int", "long long" },
        { "long long unsigned int", "unsigned long long" },
        { "_Bool", "bool" },
    };
    for (size_t i = 0; i < sizeof map / sizeof *map; i++)
        if (strcmp(name, map[i][0]) == 0)
            return map[i][1];
    return name;
}

static void put_type(buf *b, Dwarf_Die *type, int depth)
{
    if (depth > AT_TYPE_DEPTH) {
        put(b, "?");
        return;
    }
    Dwarf_Die inner;
    bool has_inner = follow(type, DW_AT_type, &inner);
    const char *suffix = NULL;
    switch (dwarf_tag(type)) {
    case DW_TAG_base_type:
        put(b, base_name(dwarf_diename(type) ? dwarf_diename(type) : "?"));
        return;
    case DW_TAG_typedef: /* the type it names, as in the mangled name */
        if (has_inner) {
            put_type(b, &inner, depth + 1);
            return;
        }
        /* fall through */
    case DW_TAG_structure_type:
    case DW_TAG_class_type:
    case DW_TAG_union_type:
    case DW_TAG_enumeration_type: {
        const char *name = dwarf_diename(type);
        if (!name) {
            put(b, "{unnamed type}");
            return;
        }
        Dwarf_Die decl = *type;
        put_scopes(b, &decl);
        put(b, name);
        return;
    }
    case DW_TAG_pointer_type: suffix = "*"; break;
    case DW_TAG_reference_type: suffix = "&"; break;
    case DW_TAG_rvalue_reference_type: suffix = "&&"; break;
    case DW_TAG_const_type: suffix = " const"; break;
    case DW_TAG_volatile_type: suffix = " volatile"; break;
    case DW_TAG_unspecified_type: /* decltype(nullptr) */
        put(b, dwarf_diename(type) ? dwarf_diename(type) : "?");
        return;
    default:
        put(b, "?");
        return;
    }
    if (has_inner)
        put_type(b, &inner, depth + 1);
    else
        put(b, "void");
    put(b, suffix);
}

/* Whether an artificial `this` points to a const object: a const member
 * function. */
static bool const_this(Dwarf_Die *param)
{
    Dwarf_Die ptr, pointee;
    return follow(param, DW_AT_type, &ptr) && dwarf_tag(&ptr) == DW_TAG_pointer_type &&
           follow(&ptr, DW_AT_type, &pointee) && dwarf_tag(&pointee) == DW_TAG_const_type;
}

/* "(int, char const*)" and " const" for a const member function, from the
 * formal parameters of decl (or of its concrete DIE when decl has none). */
static void put_params(buf *b, Dwarf_Die *decl)
{
    put(b, "(");
    Dwarf_Die child;
    bool first = true, is_const = false;
    if (dwarf_child(decl, &child) == 0) {
        do {
            int tag = dwarf_tag(&child);
            if (tag == DW_TAG_unspecified_parameters) {
                put(b, first ? "..." : ", ...");
                first = false;
                continue;
            }
            if (tag != DW_TAG_formal_parameter)
                continue;
            if (attr_flag(&child, DW_AT_artificial)) {
                is_const = is_const || const_this(&child);
                continue;
            }
            if (!first)
                put(b, ", ");
            first = false;
            Dwarf_Attribute a;
            Dwarf_Die type;
            if (dwarf_formref_die(dwarf_attr_integrate(&child, DW_AT_type, &a), &type))
                put_type(b, &type, 0);
            else
                put(b, "?");
        } while (dwarf_siblingof(&child, &child) == 0);
    }
    put(b, ")");
    if (is_const)
        put(b, " const");
}

/* The qualified name of a C++ function DIE without a linkage name, or
 * NULL when it is main or extern "C" (external, at namespace scope). */
static char *qualified_name(Dwarf_Die *die, const char *name)
{
    Dwarf_Die decl = declaration_of(die);
    buf b = { 0 };
    put(&b, "");
    int scopes = put_scopes(&b, &decl);
    if (scopes < 0 || (scopes == 0 && attr_flag(die, DW_AT_external))) {
        free(b.s);
        return NULL;
    }
    put(&b, name);
    /* The declaration lists the parameters; an out-of-line abstract
     * instance without children falls back to the DIE's own. */
    Dwarf_Die probe;
    put_params(&b, dwarf_child(&decl, &probe) == 0 ? &decl : die);
    return b.s;
}

char *at_die_function_name(Dwarf_Die *die, at_demangler *dm)
{
    const char *linkage = attr_string(die, DW_AT_linkage_name);
    if (!linkage)
        linkage = attr_string(die, DW_AT_MIPS_linkage_name);
    char *d = linkage ? at_demangle(dm, linkage) : NULL;
    if (d)
        return d;
    const char *name = attr_string(die, DW_AT_name);
    if (!name)
        return linkage ? with_parens(linkage) : NULL;
    if (!linkage && is_cxx(die)) {
        char *q = qualified_name(die, name);
        if (q)
            return q;
    }
    return with_parens(name);
}
