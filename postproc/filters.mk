# The callstack filter language (docs/filters.md): parser, matcher, normal form,
# lint and reports. Regexes are PCRE2.
POSTPROC_SRCS += postproc/filter_parse.c postproc/filter_match.c postproc/filter_print.c \
                 postproc/filter_lint.c postproc/filter_report.c postproc/filter_stage.c \
                 postproc/filter_frames.c
POSTPROC_PKGS += libpcre2-8
