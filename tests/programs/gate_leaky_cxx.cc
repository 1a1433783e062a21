// tests/programs/gate_leaky_cxx.cc: C++ leaks for the gate's tests of
// valgrind suppressions (mangled names, operator new): "one" leaks an int
// from make_one, "array" 10 ints from make_array (new[]), "nothrow" an
// int from make_nothrow (the nothrow operator new).
#include <cstring>
#include <new>

static int *volatile keep;

namespace app {
struct Maker {
    int *make_one() const { return new int(1); }
};
}

static void make_array() { keep = new int[10]; }
static void make_nothrow() { keep = new (std::nothrow) int(3); }

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (std::strcmp(argv[i], "one") == 0)
            keep = app::Maker().make_one();
        else if (std::strcmp(argv[i], "array") == 0)
            make_array();
        else if (std::strcmp(argv[i], "nothrow") == 0)
            make_nothrow();
        keep = nullptr;
    }
    return 0;
}
