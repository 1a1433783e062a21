// tests/programs/gate_empty_cxx.cc: an "empty" C++ program using iostream.
#include <iostream>

int main()
{
    std::cout << "hello from C++" << std::endl;
    return 0;
}
