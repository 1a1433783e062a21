# Leak kinds at exit (preload/leaks/reach.c): the reach_* programs, compared per
# kind with valgrind where it is installed. -O0 -g: every allocation and
# pointer stays where the source puts it.
RCH := $(B)/tests/programs
REACH_PROGS := $(RCH)/reach_kinds $(RCH)/reach_cxx

INTEGRATION_TESTS += tests/integration/test_reach.c
TEST_DEPS += preload/liballoctrace.so postproc/alloctrace-postproc $(REACH_PROGS)

$(RCH)/reach_kinds: tests/programs/reach_kinds.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O0 -g -Wall -Wextra -Werror -D_GNU_SOURCE -pthread $< -o $@
$(RCH)/reach_cxx: tests/programs/reach_cxx.cc
	@mkdir -p $(@D)
	$(CXX) -O0 -g -Wall -Wextra -Werror $< -o $@
