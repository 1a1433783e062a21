# The resolver (-r): libdw for DWARF and symbols, libelf for the ELF header.
POSTPROC_SRCS += postproc/resolve/resolve.c postproc/resolve/resolve_module.c postproc/resolve/resolve_lookup.c \
                 postproc/resolve/resolve_cache.c postproc/resolve/demangle.c postproc/resolve/resolve_stage.c \
                 postproc/resolve/resolve_symbols.c postproc/resolve/resolve_names.c \
                 postproc/resolve/resolve_units.c
# The persistent cache of answers (resolve_disk.c) and the debug-file
# prediction its keys need (resolve_debugsrc.c).
POSTPROC_SRCS += postproc/resolve/resolve_disk.c postproc/resolve/resolve_debugsrc.c
POSTPROC_PKGS += libdw libelf
