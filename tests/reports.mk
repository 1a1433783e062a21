# Issue 26's tests: reports of a deep C++ program (whole stacks at the
# default depth, libstdc++'s pool not leaked, --diff on a stripped build)
# and the HTML report's views (Bottom-up, Top-down, Callers and callees,
# a range and a moment of the chart) against a replay of a hand-made trace;
# libc's caches by stack and the per-site timeline in the unit test.
UNIT_TESTS += tests/unit/test_runtime.c
INTEGRATION_TESTS += tests/integration/test_deep_cxx.c tests/integration/test_html_views.c
TEST_DEPS += preload/liballoctrace.so postproc/alloctrace-postproc \
             $(B)/tests/programs/deep_cxx $(B)/tests/programs/deep_cxx_stripped

# -O0: one frame a call, so the recursion is 60 frames deep.
$(B)/tests/programs/deep_cxx: tests/programs/deep_cxx.cc
	@mkdir -p $(@D)
	$(CXX) -O0 -g -Wall -Wextra -Werror $< -o $@
$(B)/tests/programs/deep_cxx_stripped: $(B)/tests/programs/deep_cxx
	strip --strip-all -o $@ $<
