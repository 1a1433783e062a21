# The resolver (-r): libdw for DWARF and symbols, libelf for the ELF header.
POSTPROC_SRCS += postproc/resolve.c postproc/resolve_module.c postproc/resolve_lookup.c \
                 postproc/resolve_cache.c postproc/demangle.c postproc/resolve_stage.c \
                 postproc/resolve_symbols.c postproc/resolve_names.c \
                 postproc/resolve_units.c
# The persistent cache of answers (resolve_disk.c) and the debug-file
# prediction its keys need (resolve_debugsrc.c).
POSTPROC_SRCS += postproc/resolve_disk.c postproc/resolve_debugsrc.c
POSTPROC_PKGS += libdw libelf
