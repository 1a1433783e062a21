# Tests of the exports (postproc/export/export.mk).
UNIT_TESTS += tests/unit/test_export.c tests/unit/test_flame.c
INTEGRATION_TESTS += tests/integration/test_export.c tests/integration/test_visual.c
# The real-trace test traces the post-processor's own sites program.
TEST_DEPS += postproc/alloctrace-postproc preload/liballoctrace.so $(B)/tests/programs/postproc_sites
FUZZ_TARGETS += tests/fuzz/fuzz_export.c
TEST_DEPS += $(B)/tests/programs/resolve_app_O2 $(B)/tests/programs/resolve_cxx
