// tests/programs/deep_cxx.cc: a C++ program with deep stacks, for issue
// 26's tests (tests/integration/test_cxx_reports.c). Every number is known
// from the source:
//   - descend<T> recurses 60 frames (templates, -O0: one frame a call),
//     then grows a std::vector<std::string> of 3 strings of 40 characters
//     (the vector's 1, 2, 4 slots: 32, 64, 128 bytes, and three 41-byte
//     strings), all freed;
//   - one `new char[123]` is leaked, through the same 60 frames;
//   - libstdc++'s emergency exception pool, allocated before main, is
//     never freed: libc's caches, not a leak;
//   - with an argument, a second `new char[123]` leaks from the same site
//     (two runs to --diff).
#include <string>
#include <vector>

template <typename T> __attribute__((noinline)) size_t grow(int n)
{
    std::vector<T> v;
    for (int i = 0; i < n; i++)
        v.push_back(T(40, 'x'));
    return v.size();
}

template <typename T> __attribute__((noinline)) size_t descend(int depth, bool leak)
{
    if (depth > 1)
        return descend<T>(depth - 1, leak) + 1;
    if (leak) {
        char *volatile p = new char[123];
        (void)p;
        return 0;
    }
    return grow<T>(3);
}

int main(int argc, char **argv)
{
    (void)argv;
    size_t n = descend<std::string>(60, false);
    n += descend<std::string>(60, true);
    if (argc > 1)
        n += descend<std::string>(60, true) - 59;
    return n == (3 + 59) + 59 ? 0 : 1;
}
