/*
 * tests/programs/resolve_cxx.cc: C++ allocation sites whose names only a
 * demangler spells right: a function template in a namespace, a class's
 * operator new, a lambda, an overloaded method.
 */
#define RESOLVE_PRINT_MAPS
#include "resolve_probe.h"

#include <new>

namespace shapes {

struct Widget {
    int sides;
    static void *operator new(std::size_t n)
    {
        return resolve_probe("operator_new", n); /* @operator_new */
    }
    static void operator delete(void *p) { free(p); }
};

template <typename T> __attribute__((noinline)) T *make_array(std::size_t n)
{
    T *p = static_cast<T *>(resolve_probe("template", n * sizeof(T))); /* @template */
    resolve_sink = p;
    return p;
}

class Pool {
public:
    __attribute__((noinline)) void *grab(int n) const
    {
        void *p = resolve_probe("method", static_cast<std::size_t>(n)); /* @method */
        resolve_sink = p;
        return p;
    }
};

} // namespace shapes

int main()
{
    resolve_print_maps();
    shapes::Widget *w = new shapes::Widget;
    delete w;
    free(shapes::make_array<double>(4));
    shapes::Pool pool;
    free(pool.grab(8));
    auto lambda = [](std::size_t n) {
        void *p = resolve_probe("lambda", n); /* @lambda */
        resolve_sink = p;
        return p;
    };
    free(lambda(40));
    return 0;
}
