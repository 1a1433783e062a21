# examples/examples.mk: the program `make demo` traces, built -O0 -g so the
# post-processor can show exact lines.
PRODUCTS += $(B)/examples/example

$(B)/examples/example: examples/example.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O0 -g -fno-builtin -Wall -Wextra -Werror $< -o $@
