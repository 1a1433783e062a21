# The callstack filter language (docs/filters.md): parser, matcher, normal form,
# lint and reports. Regexes are PCRE2.
POSTPROC_SRCS += postproc/filter/filter_parse.c postproc/filter/filter_match.c postproc/filter/filter_print.c \
                 postproc/filter/filter_lint.c postproc/filter/filter_report.c postproc/filter/filter_stage.c \
                 postproc/filter/filter_frames.c
POSTPROC_PKGS += libpcre2-8
