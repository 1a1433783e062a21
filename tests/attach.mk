# tests/attach.mk: alloctrace -p and --detach (tests/integration/test_attach.c).
#
# attach_target is started without the tracer; attach_static is the same
# program linked statically (nothing to load the tracer with).
ATTACH_PROGS := $(B)/tests/programs/attach_target $(B)/tests/programs/attach_static

INTEGRATION_TESTS += tests/integration/test_attach.c
TEST_DEPS += preload/liballoctrace-attach.so $(ATTACH_PROGS)

$(B)/tests/programs/attach_target: tests/programs/attach_target.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O0 -g -Wall -Wextra -Werror -D_GNU_SOURCE $< -o $@ -pthread -ldl

$(B)/tests/programs/attach_static: tests/programs/attach_target.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O0 -g -Wall -Wextra -Werror -D_GNU_SOURCE -static $< -o $@ -pthread -ldl
