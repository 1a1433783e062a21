# Tests of the analyses (postproc/analyze/): hand-made traces in the unit
# test, a real traced program in the integration test.
UNIT_TESTS += tests/unit/test_analyze.c tests/unit/test_snapshot.c \
              tests/unit/test_analyze_thread.c tests/unit/test_live_table.c
INTEGRATION_TESTS += tests/integration/test_analyze.c
TEST_DEPS += postproc/alloctrace-postproc preload/liballoctrace.so $(B)/tests/programs/postproc_sites
FUZZ_TARGETS += tests/fuzz/fuzz_analyze.c
