// tests/programs/reach_cxx.cc: the C++ cases of memcheck's leak kinds and
// its interior-pointer heuristics. Arguments:
//   string   a lost `new std::string` of 43 characters: valgrind says
//            "76 (32 direct, 44 indirect) bytes"
//   newarray a global pointing at `new T[5]` of a T with a destructor
//            (the pointer is 8 bytes into the block, after the count)
//   multi    a global `Right *` into a `Both : Left, Right` object (an
//            interior pointer at the Right part, vtable pointers at both)
//   lostarr  the same new[] with no pointer left: definitely lost
#include <cstring>
#include <string>

struct T {
    long v = 0;
    ~T() { v = 1; }
};

struct Left {
    virtual ~Left() {}
    virtual void f() {}
    long l = 1;
};
struct Right {
    virtual ~Right() {}
    virtual void g() {}
    long r = 2;
};
struct Both : Left, Right {
    long b = 3;
};

static T *array;
static Right *right;

static __attribute__((noinline)) void make_string()
{
    std::string *s = new std::string("a string of forty-three characters, on heap");
    (void)s;
}

static __attribute__((noinline)) void make_newarray()
{
    array = new T[5];
}

static __attribute__((noinline)) void make_lostarr()
{
    T *a = new T[3];
    (void)a;
}

static __attribute__((noinline)) void make_multi()
{
    right = new Both;
}

static __attribute__((noinline)) void scrub()
{
    volatile char pad[16384];
    for (size_t i = 0; i < sizeof pad; i++)
        pad[i] = 0;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "string"))
            make_string();
        else if (!strcmp(argv[i], "newarray"))
            make_newarray();
        else if (!strcmp(argv[i], "lostarr"))
            make_lostarr();
        else if (!strcmp(argv[i], "multi"))
            make_multi();
    }
    scrub();
    return 0;
}
