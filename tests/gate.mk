# Tests of the leak gate: unit tests on groups built in the test; integration
# tests run alloctrace-check on the gate_* programs.
UNIT_TESTS += tests/unit/test_gate.c tests/unit/test_gate_baseline.c tests/unit/test_gate_export.c \
              tests/unit/test_gate_supp.c
