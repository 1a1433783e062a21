// tests/programs/tracer_cxx.cpp: C++ new/delete arrive through malloc/free.
// Prints "new ADDRESS" and "new[] ADDRESS" for the test to pair, and
// "caught 42" after an exception unwound through the program's frames.
#include <cstdio>
#include <stdexcept>
#include <string>

struct Item {
    long values[5];   // 40 bytes
};

__attribute__((noinline)) static Item *make_item() { return new Item(); }
__attribute__((noinline)) static int *make_array() { return new int[25]; }   // 100 bytes

__attribute__((noinline)) static void thrower(int v)
{
    throw std::runtime_error(std::to_string(v));
}

int main()
{
    Item *item = make_item();
    int *array = make_array();
    std::printf("new %p\nnew[] %p\n", static_cast<void *>(item), static_cast<void *>(array));
    std::fflush(stdout);
    try {
        thrower(42);
    } catch (const std::exception &e) {
        std::printf("caught %s\n", e.what());
    }
    delete item;
    delete[] array;
    return 0;
}
