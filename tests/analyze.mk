# Tests of the analyses (postproc/analyze/): hand-made traces in the unit
# test, a real traced program in the integration test.
UNIT_TESTS += tests/unit/test_analyze.c
