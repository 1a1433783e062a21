// tests/programs/tracer_cxx.cpp: C++ new/delete arrive through malloc/free.
// Prints "new ADDRESS" and "new[] ADDRESS" for the test to pair.
#include <cstdio>

struct Item {
    long values[5];   // 40 bytes
};

__attribute__((noinline)) static Item *make_item() { return new Item(); }
__attribute__((noinline)) static int *make_array() { return new int[25]; }   // 100 bytes

int main()
{
    Item *item = make_item();
    int *array = make_array();
    std::printf("new %p\nnew[] %p\n", static_cast<void *>(item), static_cast<void *>(array));
    std::fflush(stdout);
    delete item;
    delete[] array;
    return 0;
}
