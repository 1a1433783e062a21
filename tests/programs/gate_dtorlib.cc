/* tests/programs/gate_dtorlib.cc: a library that frees its blocks in its
 * own destructors, which run after the tracer's (the tracer is preloaded,
 * so its destructor comes before those of the program's libraries): a C
 * destructor frees what a constructor allocated, and a C++ static object's
 * destructor (registered while the library started) frees its string and
 * vector. valgrind sees every block freed; so must the gate. */
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

static char *cache;

__attribute__((constructor)) static void dtorlib_init()
{
    cache = static_cast<char *>(std::malloc(100));
    std::memset(cache, 1, 100);
}

__attribute__((destructor)) static void dtorlib_fini()
{
    std::free(cache);
    cache = nullptr;
}

struct holder {
    std::vector<std::string> names;
    holder() { names.push_back(std::string(50, 'x')); }
};
static holder held;

extern "C" int dtorlib_value() { return cache[0] + static_cast<int>(held.names.size()); }
