# The leak gate (alloctrace --check): judging, baselines, JSON and JUnit results.
POSTPROC_SRCS += postproc/gate.c postproc/baseline.c postproc/gate_json.c postproc/gate_junit.c \
                 postproc/gate_supp.c postproc/gate_run.c postproc/gate_utf8.c \
                 postproc/json.c postproc/gate_vglog.c postproc/gate_supp_foreign.c \
                 postproc/gate_supp_valgrind.c postproc/gate_supp_lsan.c postproc/gate_site.c
