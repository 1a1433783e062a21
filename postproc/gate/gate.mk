# The leak gate (alloctrace --check): judging, baselines, JSON and JUnit results.
POSTPROC_SRCS += postproc/gate/gate.c postproc/gate/baseline.c postproc/gate/gate_json.c postproc/gate/gate_junit.c \
                 postproc/gate/gate_supp.c postproc/gate/gate_run.c \
                 postproc/gate/gate_vglog.c postproc/gate/gate_supp_foreign.c \
                 postproc/gate/gate_supp_valgrind.c postproc/gate/gate_supp_lsan.c postproc/gate/gate_site.c
