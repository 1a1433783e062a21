# The analyses of a full trace (peak, temporaries, histogram, sites, series,
# contexts) and what prints them: --format report, --format stats, --diff.
POSTPROC_SRCS += postproc/analyze/analyze.c postproc/analyze/analyze_stage.c \
                 postproc/analyze/analyze_thread.c postproc/analyze/live_table.c \
                 postproc/analyze/report_text.c postproc/analyze/stats_json.c \
                 postproc/analyze/print.c postproc/analyze/diff.c \
                 postproc/analyze/site_name.c postproc/analyze/timeline.c
