// tests/programs/resolve_names.cc: C++ functions that are inlined at -O2
// and that gcc describes without a linkage name (internal linkage: static
// in a namespace, anything in an anonymous namespace). The resolver must
// name them as gdb does, from their scopes and parameter types. Built with
// g++ and with clang++ (which gives linkage names, and no .debug_aranges).
#include <cstdlib>
#include <cstring>

namespace shop {
static inline int *make_array(int n)
{
    int *p = static_cast<int *>(malloc(sizeof(int) * (size_t)n)); /* @make_array */
    memset(p, 1, sizeof(int) * (size_t)n);
    return p;
}

struct basket {
    static inline char *label(const char *s, unsigned len)
    {
        char *c = static_cast<char *>(malloc(len + 1)); /* @label */
        memcpy(c, s, len);
        c[len] = 0;
        return c;
    }
};

// A typedef parameter reads as the type it names, as in a mangled name.
static inline void *sized(size_t n)
{
    return malloc(n); /* @sized */
}

namespace {
inline void *hidden(long n) { return malloc((size_t)n); /* @hidden */ }
} // namespace
} // namespace shop

int *volatile keep_array;
char *volatile keep_label;
void *volatile keep_hidden;
void *volatile keep_sized;

int main(int argc, char **argv)
{
    (void)argv;
    keep_array = shop::make_array(argc + 3);
    keep_label = shop::basket::label("apples", 5u + (unsigned)argc);
    keep_hidden = shop::hidden(argc * 10);
    keep_sized = shop::sized((size_t)argc * 12);
    return 0;
}
