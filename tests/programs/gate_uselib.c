/* tests/programs/gate_uselib.c: leaks through libgate_lib.so only. */
void gate_lib_leak(void);

int main(void)
{
    gate_lib_leak(); /* line 6 */
    return 0;
}
