# tests/cli.mk: the command line's rules (help, --version, errors, exit
# statuses, bundled options, progress), the README tour run as printed,
# and the man pages against --help.
INTEGRATION_TESTS += tests/integration/test_cli.c
TEST_DEPS += preload/liballoctrace.so $(B)/tests/programs/tracer_calls \
             $(B)/tests/programs/tracer_leaks
INTEGRATION_TESTS += tests/integration/test_readme.c
INTEGRATION_TESTS += tests/integration/test_man.c
