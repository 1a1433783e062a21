/*
 * tests/unit/test_tracer_tzoffset.c: the tracer's own reading of the time
 * zone (preload/write/tzoffset.c) against glibc's localtime_r, every 3 days and
 * an hour from 1970 to 2046 (so past the last transition of the zone
 * files, where their POSIX footer rules), for TZ unset, empty, zone
 * names, absolute paths, POSIX strings with and without rules, both
 * hemispheres, odd offsets, and a zone that does not exist.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "tracer.h"

/* config.c's, which also works before libc is initialised; here libc is. */
const char *at_getenv(const char *name)
{
    return getenv(name);
}

static void offset_matches_localtime(const char *zone)
{
    if (zone)
        setenv("TZ", zone, 1);
    else
        unsetenv("TZ");
    tzset();
    for (int64_t t = 0; t < 2400000000LL; t += 86400 * 3 + 3607) {
        time_t tt = (time_t)t;
        struct tm tm;
        localtime_r(&tt, &tm);
        long mine = at_tz_offset(t);
        if (mine != tm.tm_gmtoff)
            fail_msg("TZ=%s at %lld: localtime_r says %ld, tzoffset.c %ld", zone ? zone : "(unset)",
                     (long long)t, (long)tm.tm_gmtoff, mine);
    }
}

static void zone_files_match_localtime(void **state)
{
    (void)state;
    const char *zones[] = { "Europe/Paris", ":America/New_York", "Australia/Sydney",
                            "Asia/Kolkata", "America/Sao_Paulo", "Pacific/Chatham",
                            "/usr/share/zoneinfo/Europe/London" };
    if (access("/usr/share/zoneinfo/Europe/Paris", R_OK) != 0)
        skip();
    for (size_t i = 0; i < sizeof zones / sizeof *zones; i++)
        offset_matches_localtime(zones[i]);
}

static void posix_strings_match_localtime(void **state)
{
    (void)state;
    const char *zones[] = { "EST5EDT,M3.2.0,M11.1.0", "CET-1CEST,M3.5.0,M10.5.0/3",
                            "NZST-12NZDT,M9.5.0,M4.1.0/3", "<+0330>-3:30", "JST-9", "UTC0" };
    for (size_t i = 0; i < sizeof zones / sizeof *zones; i++)
        offset_matches_localtime(zones[i]);
}

static void unset_empty_and_unknown_zones_match_localtime(void **state)
{
    (void)state;
    offset_matches_localtime(NULL);
    offset_matches_localtime("");
    offset_matches_localtime("UTC");
    offset_matches_localtime("Bogus/Zone");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(zone_files_match_localtime),
        cmocka_unit_test(posix_strings_match_localtime),
        cmocka_unit_test(unset_empty_and_unknown_zones_match_localtime),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
