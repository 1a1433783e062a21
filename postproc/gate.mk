# The leak gate (alloctrace --check): judging, baselines, JSON and JUnit results.
POSTPROC_SRCS += postproc/gate.c postproc/baseline.c postproc/gate_json.c postproc/gate_junit.c \
                 postproc/gate_supp.c postproc/gate_run.c postproc/gate_utf8.c

# `make install` also installs the gate's script and default suppressions
# (the top Makefile's install recipe knows only the launcher): the launcher
# hands `alloctrace --check` to the alloctrace-check next to it.
.PHONY: install-gate
install: install-gate
install-gate: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/alloctrace
	install -m 755 scripts/alloctrace-check $(DESTDIR)$(PREFIX)/bin/
	install -m 644 share/alloctrace/default.supp $(DESTDIR)$(PREFIX)/share/alloctrace/
