# Exports: the cost graph and the Callgrind, webgrind, folded and flame
# graph formats, the HTML report, and the pipeline stage that writes the
# exports (--format).
POSTPROC_SRCS += postproc/export/profile.c postproc/export/callgrind.c postproc/export/webgrind.c \
                 postproc/export/folded.c postproc/export/export_stage.c \
                 postproc/export/flame.c postproc/export/flamegraph.c postproc/export/markup.c postproc/export/assets.c \
                 postproc/export/html.c postproc/export/html_diff.c postproc/export/pprof.c
# --format pprof: C for pprof's profile.proto, made by protoc-c from our own
# pprof.proto (never committed), encoded by libprotobuf-c and gzip'd by zlib.
POSTPROC_PKGS += libprotobuf-c zlib
PPROF_GEN := $(B)/gen/pprof.pb-c.c
POSTPROC_SRCS += $(PPROF_GEN)
$(PPROF_GEN): postproc/export/pprof.proto
	@mkdir -p $(@D)
	protoc-c --proto_path=postproc/export --c_out=$(@D) pprof.proto
$(B)/gen/pprof.pb-c.h: $(PPROF_GEN)
$(B)/postproc/export/pprof.o $(B)/san/postproc/export/pprof.o: $(B)/gen/pprof.pb-c.h
$(B)/$(B)/gen/%.o: $(B)/gen/%.c
	@mkdir -p $(@D)
	$(CC) $(PP_CFLAGS) -MMD -MP -c $< -o $@
$(B)/san/$(B)/gen/%.o: $(B)/gen/%.c
	@mkdir -p $(@D)
	$(CC) $(PP_CFLAGS) $(SAN_FLAGS) -MMD -MP -c $< -o $@
# assets.c copies these in with .incbin, which the compiler's -MMD does not see.
AT_ASSET_FILES := $(wildcard postproc/export/assets/*)
$(B)/postproc/export/assets.o $(B)/san/postproc/export/assets.o: $(AT_ASSET_FILES)
