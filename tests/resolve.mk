# The resolver's tests and the programs they resolve (tests/programs/resolve_*):
# the same sites built -O0 and -O2 (inlining), PIE and non-PIE, stripped with
# the debug info in a separate file under a .build-id tree, a shared library
# and a C++ program. Built without sanitizers: they stand for user programs.
RP := $(B)/tests/programs
RESOLVE_PROGRAMS := $(RP)/libresolve_lib.so $(RP)/resolve_app_O0 $(RP)/resolve_app_O2 \
                    $(RP)/resolve_app_nopie $(RP)/resolve_app_stripped $(RP)/resolve_cxx \
                    $(RP)/resolve_app_symtab $(RP)/resolve_cxx_symtab $(RP)/resolve_app_debuglink \
                    $(RP)/resolve_names_gcc $(RP)/resolve_names_clang $(RP)/resolve_line0 \
                    $(RP)/resolve_app_clang
RESOLVE_PROG_FLAGS := -g -Wall -Wextra -Werror -D_GNU_SOURCE
RESOLVE_LINK := -L$(RP) -lresolve_lib -Wl,-rpath,'$$ORIGIN'

$(RP)/libresolve_lib.so: tests/programs/resolve_lib.c tests/programs/resolve_probe.h
	@mkdir -p $(@D)
	$(CC) -std=gnu11 $(RESOLVE_PROG_FLAGS) -O0 -fPIC -shared $< -o $@
$(RP)/resolve_app_O0: tests/programs/resolve_app.c tests/programs/resolve_probe.h $(RP)/libresolve_lib.so
	$(CC) -std=gnu11 $(RESOLVE_PROG_FLAGS) -O0 -fPIE -pie $< $(RESOLVE_LINK) -o $@
$(RP)/resolve_app_O2: tests/programs/resolve_app.c tests/programs/resolve_probe.h $(RP)/libresolve_lib.so
	$(CC) -std=gnu11 $(RESOLVE_PROG_FLAGS) -O2 -fPIE -pie $< $(RESOLVE_LINK) -o $@
$(RP)/resolve_app_nopie: tests/programs/resolve_app.c tests/programs/resolve_probe.h $(RP)/libresolve_lib.so
	$(CC) -std=gnu11 $(RESOLVE_PROG_FLAGS) -O0 -fno-pie -no-pie $< $(RESOLVE_LINK) -o $@
$(RP)/resolve_cxx: tests/programs/resolve_cxx.cc tests/programs/resolve_probe.h
	$(CXX) -std=gnu++17 $(RESOLVE_PROG_FLAGS) -O0 -fPIE -pie $< -o $@
# Stripped of everything, with no .gnu_debuglink: only the build id leads
# to resolve_debug/.build-id/xx/yyyy.debug (what --debug-dir is for).
$(RP)/resolve_app_stripped: $(RP)/resolve_app_O0
	rm -rf $(RP)/resolve_debug
	objcopy --only-keep-debug $< $@.debug
	objcopy --strip-all $< $@
	id=$$(readelf -n $@ | sed -n 's/.*Build ID: *//p'); \
	  mkdir -p $(RP)/resolve_debug/.build-id/$$(echo $$id | cut -c1-2) && \
	  mv $@.debug $(RP)/resolve_debug/.build-id/$$(echo $$id | cut -c1-2)/$$(echo $$id | cut -c3-).debug

# Stripped, with a .gnu_debuglink naming its debug file in .debug/ beside it.
$(RP)/resolve_app_debuglink: $(RP)/resolve_app_O0
	@mkdir -p $(RP)/.debug
	objcopy --only-keep-debug $< $(RP)/.debug/resolve_app_debuglink.debug
	objcopy --strip-all --add-gnu-debuglink=$(RP)/.debug/resolve_app_debuglink.debug $< $@
# Without DWARF but with the symbol table: names only, "FUNC() from MODULE".
$(RP)/resolve_app_symtab: $(RP)/resolve_app_O0
	objcopy --strip-debug $< $@
$(RP)/resolve_cxx_symtab: $(RP)/resolve_cxx
	objcopy --strip-debug $< $@

# Inlined C++ functions without linkage names (g++), the same with clang++
# at -O2 (linkage names, no .debug_aranges).
$(RP)/resolve_names_gcc: tests/programs/resolve_names.cc
	@mkdir -p $(@D)
	g++ -std=gnu++17 $(RESOLVE_PROG_FLAGS) -O2 $< -o $@
$(RP)/resolve_names_clang: tests/programs/resolve_names.cc
	@mkdir -p $(@D)
	clang++ -std=gnu++17 $(RESOLVE_PROG_FLAGS) -O2 $< -o $@
# clang -O2, the library's site in a second unit of the executable: no
# .debug_aranges, two units to tell apart by their ranges.
$(RP)/resolve_app_clang: tests/programs/resolve_app.c tests/programs/resolve_lib.c tests/programs/resolve_probe.h
	@mkdir -p $(@D)
	clang -std=gnu11 $(RESOLVE_PROG_FLAGS) -O2 -fPIE -pie tests/programs/resolve_app.c \
	    tests/programs/resolve_lib.c -o $@
# The call after the AT_LINE0 marker gets line 0 (tests/programs/line0.awk).
$(RP)/resolve_line0: tests/programs/resolve_line0.c tests/programs/line0.awk
	@mkdir -p $(@D)
	clang -std=gnu11 $(RESOLVE_PROG_FLAGS) -O0 -fno-builtin -S $< -o $@.s
	awk -f tests/programs/line0.awk $@.s > $@.0.s
	grep -q 'loc.* 0 ' $@.0.s
	clang -g $@.0.s -o $@
	rm -f $@.s $@.0.s

TEST_DEPS += $(RESOLVE_PROGRAMS)
UNIT_TESTS += tests/unit/test_resolve.c
INTEGRATION_TESTS += tests/integration/test_resolve.c
# The disk cache: its file format (unit and fuzz) and whole runs that use it.
UNIT_TESTS += tests/unit/test_resolve_disk.c
FUZZ_TARGETS += tests/fuzz/fuzz_resolve_disk.c
INTEGRATION_TESTS += tests/integration/test_resolve_cache.c
TEST_DEPS += preload/liballoctrace.so
