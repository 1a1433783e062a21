# alloctrace: top-level build.
#
# Each directory describes its own targets in a `module.mk` fragment that
# this file includes; the fragments append to the lists below. Everything
# built goes under build/, except the two products users run from the tree:
# preload/liballoctrace.so and postproc/alloctrace-postproc.

VERSION := 0.1.0
PREFIX  ?= /usr/local
B       := build

# Every goal but these needs the Debian packages; install them before the
# pkg-config calls below run, so a fresh machine needs only `make check`.
# Recursive makes inherit AT_DEPS_DONE and do not check again.
GOALS := $(or $(MAKECMDGOALS),all)
ifneq ($(filter-out clean help deps uninstall,$(GOALS)),)
ifndef AT_DEPS_DONE
  DEPS_STATUS := $(shell scripts/install-deps >&2; echo $$?)
  ifneq ($(DEPS_STATUS),0)
    $(error alloctrace: build dependencies are missing (see the lines above))
  endif
  export AT_DEPS_DONE := 1
endif
endif

CC      ?= cc
CXX     ?= c++
CFLAGS  ?= -O2 -g
WARN    := -Wall -Wextra -Werror
BASE_CFLAGS := -std=gnu11 $(WARN) -D_GNU_SOURCE -Iinclude \
               -DAT_VERSION='"$(VERSION)"' -DAT_BUILD_ROOT='"$(CURDIR)"'

pc_cflags = $(shell pkg-config --cflags $(1))
pc_libs   = $(shell pkg-config --libs $(1))

# Sanitizers for the post-processor's test build.
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer

# Lists the fragments extend. A fragment only appends to these and adds
# rules for its own special files (test programs with unusual flags); the
# generic rules below turn the lists into targets, so fragments can be read
# in any order.
PRODUCTS :=          # what `make` builds
TESTS    :=          # extra test executables for `make check` (run after unit tests)
BENCHES  :=          # benchmark entry points run by `make bench`
BENCH_PROGRAMS :=    # what they run; `make check` builds them too (never runs
                     # them), so a benchmark that no longer links fails CI
CLEAN    :=          # extra files `make clean` removes
POSTPROC_SRCS :=     # post-processor sources except postproc/main.c
POSTPROC_PKGS :=     # pkg-config packages the post-processor links
UNIT_TESTS :=        # tests/unit/NAME.c: cmocka, linked with the post-processor
                     # objects built with ASan+UBSan
INTEGRATION_TESTS := # tests/integration/NAME.c: cmocka, linked with tests/harness.c;
                     # they run the real tracer and post-processor programs
FUZZ_TARGETS :=      # tests/fuzz/NAME.c (LLVMFuzzerTestOneInput); corpus in tests/fuzz/NAME/
TEST_DEPS :=         # what integration tests need built first (test programs)
LAUNCHER_HELPERS :=  # launcher/NAME.c -> build/launcher/NAME: small C programs the sh
                     # launcher calls for what sh does badly; installed in lib/alloctrace

.PHONY: all check demo install uninstall fuzz bench clean deps help
# Objects and test programs are never removed as intermediates.
.SECONDARY:
all:

include $(sort $(wildcard preload/*.mk postproc/*.mk postproc/*/*.mk tests/*.mk examples/*.mk \
                          bench/*.mk scripts/*.mk launcher/*.mk))

# ---- post-processor ------------------------------------------------------
# postproc/ and each of its stage folders are on the include path, so a
# header is included by its bare name wherever it lives and a file moving
# between folders changes no #include. That needs header names unique
# across the folders: checked here rather than left to include order.
PP_DIRS    := postproc $(patsubst %/,%,$(sort $(dir $(wildcard postproc/*/*.[ch]))))
PP_HEADERS := $(notdir $(wildcard $(addsuffix /*.h,$(PP_DIRS))))
ifneq ($(words $(PP_HEADERS)),$(words $(sort $(PP_HEADERS))))
  $(error alloctrace: two headers under postproc/ share a name: $(sort $(foreach h,$(PP_HEADERS),$(if $(filter-out 1,$(words $(filter $(h),$(PP_HEADERS)))),$(h)))))
endif
PP_CFLAGS  = $(BASE_CFLAGS) $(CFLAGS) $(addprefix -I,$(PP_DIRS)) -I$(B)/gen \
             $(call pc_cflags,$(sort $(POSTPROC_PKGS)))
PP_LIBS    = $(call pc_libs,$(sort $(POSTPROC_PKGS))) -lm -lpthread
PP_OBJS     := $(POSTPROC_SRCS:%.c=$(B)/%.o)
PP_SAN_OBJS := $(POSTPROC_SRCS:%.c=$(B)/san/%.o)

$(B)/postproc/%.o: postproc/%.c
	@mkdir -p $(@D)
	$(CC) $(PP_CFLAGS) -MMD -MP -c $< -o $@
$(B)/san/postproc/%.o: postproc/%.c
	@mkdir -p $(@D)
	$(CC) $(PP_CFLAGS) $(SAN_FLAGS) -MMD -MP -c $< -o $@

ifneq ($(wildcard postproc/main.c),)
PRODUCTS += postproc/alloctrace-postproc
postproc/alloctrace-postproc: $(B)/postproc/main.o $(PP_OBJS)
	$(CC) $(CFLAGS) $^ $(PP_LIBS) -o $@
endif

# ---- the launcher's C helpers ---------------------------------------------
# scripts/alloctrace finds them as it finds the library: next to it in the
# build tree (../build/launcher/NAME), else installed (../lib/alloctrace/NAME).
LAUNCHER_BINS := $(LAUNCHER_HELPERS:%=$(B)/launcher/%)
PRODUCTS += $(LAUNCHER_BINS)
$(B)/launcher/%: launcher/%.c
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(CFLAGS) $< -o $@

# ---- tests ---------------------------------------------------------------
CMOCKA_CFLAGS = $(call pc_cflags,cmocka)
CMOCKA_LIBS   = $(call pc_libs,cmocka)
UNIT_BINS := $(UNIT_TESTS:tests/unit/%.c=$(B)/tests/unit/%)
INT_BINS  := $(INTEGRATION_TESTS:tests/integration/%.c=$(B)/tests/integration/%)
FUZZ_REPLAY_BINS := $(FUZZ_TARGETS:tests/fuzz/%.c=$(B)/tests/fuzz/replay_%)
FUZZERS   := $(FUZZ_TARGETS:tests/fuzz/%.c=$(B)/fuzz/%)

$(B)/tests/unit/%: tests/unit/%.c $(PP_SAN_OBJS)
	@mkdir -p $(@D)
	$(CC) $(PP_CFLAGS) $(SAN_FLAGS) $(CMOCKA_CFLAGS) -Itests $< $(PP_SAN_OBJS) $(PP_LIBS) $(CMOCKA_LIBS) -o $@

$(B)/tests/harness.o: tests/harness.c tests/harness.h
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(CFLAGS) $(CMOCKA_CFLAGS) -c $< -o $@
$(B)/tests/integration/%: tests/integration/%.c $(B)/tests/harness.o tests/harness.h
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(CFLAGS) $(CMOCKA_CFLAGS) -Itests $< $(B)/tests/harness.o $(CMOCKA_LIBS) -lzstd -lpthread -o $@

# A fuzz target's corpus is replayed in `make check` by the same target
# linked with a small driver under ASan+UBSan (no clang needed there).
$(B)/tests/fuzz/replay_%: tests/fuzz/%.c tests/fuzz/replay.c $(PP_SAN_OBJS)
	@mkdir -p $(@D)
	$(CC) $(PP_CFLAGS) $(SAN_FLAGS) -DAT_CORPUS_DIR='"$(CURDIR)/tests/fuzz/$*"' $< tests/fuzz/replay.c $(PP_SAN_OBJS) $(PP_LIBS) -o $@
FUZZ_CFLAGS = -g -O1 -fsanitize=fuzzer,address,undefined
$(B)/fuzz/%: tests/fuzz/%.c $(POSTPROC_SRCS)
	@mkdir -p $(@D)
	clang $(filter-out -Werror,$(PP_CFLAGS)) $(FUZZ_CFLAGS) $< $(POSTPROC_SRCS) $(PP_LIBS) -o $@

TESTS := $(UNIT_BINS) $(FUZZ_REPLAY_BINS) $(TESTS) $(INT_BINS)

-include $(shell find $(B) -name '*.d' 2>/dev/null)

all: $(PRODUCTS)

deps:
	@scripts/install-deps

# Runs every test; tests/run-tests prints each result and the closing
# "N passed, N failed" line, and fails when anything failed.
check: all $(TESTS) $(TEST_DEPS) $(BENCH_PROGRAMS)
	@scripts/install-deps --peers
	@tests/run-tests $(TESTS)

demo: all
	@examples/demo

fuzz: $(FUZZERS)

bench: all $(BENCH_PROGRAMS)
	@for b in $(BENCHES); do $$b || exit 1; done

# What `make install` puts where; `make uninstall` removes exactly these.
# include/alloctrace/format.h is internal (the tracer and the
# post-processor share it) and is not installed; include/alloctrace.h is
# the optional API for programs. Docs keep README's relative links
# (docs/...) under share/doc/alloctrace.
BINDIR  := $(PREFIX)/bin
LIBDIR  := $(PREFIX)/lib/alloctrace
DATADIR := $(PREFIX)/share/alloctrace
INCDIR  := $(PREFIX)/include
MANDIR  := $(PREFIX)/share/man
DOCDIR  := $(PREFIX)/share/doc/alloctrace
INSTALL_BINS := scripts/alloctrace scripts/alloctrace-check scripts/alloctrace-inject postproc/alloctrace-postproc
MAN1 := man/alloctrace.1 man/alloctrace-postproc.1
MAN7 := man/alloctrace-filters.7
SUPPS := $(wildcard share/alloctrace/*.supp)
DOCS := README.md LICENSE
DOCS_DOCS := $(wildcard docs/*.md)

INSTALL_DIRS := $(BINDIR) $(LIBDIR) $(DATADIR) $(INCDIR) $(MANDIR)/man1 $(MANDIR)/man7 $(DOCDIR)/docs
# The directories install had to create (parents too) are listed in
# LIBDIR/created-dirs, added to across installs, so that uninstall removes
# those it made once they are empty, and never one that was there before.
DIRS_LIST := $(DESTDIR)$(LIBDIR)/created-dirs

install: all
	@new=""; for d in $(INSTALL_DIRS); do \
	    while [ -n "$$d" ] && [ "$$d" != / ] && [ ! -d "$(DESTDIR)$$d" ]; do \
	        new="$$new$$d\n"; d=$${d%/*}; done; done; \
	install -d $(addprefix $(DESTDIR),$(INSTALL_DIRS)) && \
	{ cat "$(DIRS_LIST)" 2>/dev/null; printf "$$new"; } | sort -u > "$(DIRS_LIST).new" && \
	mv "$(DIRS_LIST).new" "$(DIRS_LIST)"
	install -m 755 $(INSTALL_BINS) $(DESTDIR)$(BINDIR)/
	install -m 755 preload/liballoctrace.so preload/liballoctrace-attach.so $(DESTDIR)$(LIBDIR)/
	$(if $(LAUNCHER_BINS),install -m 755 $(LAUNCHER_BINS) $(DESTDIR)$(LIBDIR)/)
	install -m 644 include/alloctrace.h $(DESTDIR)$(INCDIR)/
	install -m 644 $(SUPPS) $(DESTDIR)$(DATADIR)/
	install -m 644 $(MAN1) $(DESTDIR)$(MANDIR)/man1/
	install -m 644 $(MAN7) $(DESTDIR)$(MANDIR)/man7/
	install -m 644 $(DOCS) $(DESTDIR)$(DOCDIR)/
	install -m 644 $(DOCS_DOCS) $(DESTDIR)$(DOCDIR)/docs/

# Removes the installed files, then the directories of alloctrace's own
# and those install created (created-dirs) when empty: never a bin/ or
# share/man/ that was there before, even empty.
uninstall:
	rm -f $(addprefix $(DESTDIR)$(BINDIR)/,$(notdir $(INSTALL_BINS))) \
	      $(DESTDIR)$(LIBDIR)/liballoctrace.so $(DESTDIR)$(LIBDIR)/liballoctrace-attach.so \
	      $(DESTDIR)$(INCDIR)/alloctrace.h \
	      $(addprefix $(DESTDIR)$(LIBDIR)/,$(LAUNCHER_HELPERS)) \
	      $(addprefix $(DESTDIR)$(DATADIR)/,$(notdir $(SUPPS))) \
	      $(addprefix $(DESTDIR)$(MANDIR)/man1/,$(notdir $(MAN1))) \
	      $(addprefix $(DESTDIR)$(MANDIR)/man7/,$(notdir $(MAN7))) \
	      $(addprefix $(DESTDIR)$(DOCDIR)/,$(DOCS) $(DOCS_DOCS))
	@dirs=$$(sort -r "$(DIRS_LIST)" 2>/dev/null); rm -f "$(DIRS_LIST)"; \
	for d in $$dirs; do rmdir "$(DESTDIR)$$d" 2>/dev/null; done; \
	rmdir $(DESTDIR)$(LIBDIR) $(DESTDIR)$(DATADIR) $(DESTDIR)$(DOCDIR)/docs $(DESTDIR)$(DOCDIR) 2>/dev/null; true

clean:
	rm -rf $(B) $(PRODUCTS) $(CLEAN)

help:
	@echo "make          build preload/liballoctrace.so and postproc/alloctrace-postproc"
	@echo "make check    build and run every test (installs build dependencies as root)"
	@echo "make demo     trace examples/ and print the leak report"
	@echo "make fuzz     build the libFuzzer targets (clang)"
	@echo "make bench    run the benchmarks in bench/"
	@echo "make install  PREFIX=/usr/local (DESTDIR honoured)"
	@echo "make uninstall  the same PREFIX and DESTDIR: removes what install put there"
	@echo "make deps     install missing Debian packages"
