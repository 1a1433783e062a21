/*
 * preload/write/tzoffset.c: the local time's offset from UTC, found without
 * glibc's time-zone code.
 *
 * The header's timestamp and the records' times are local. localtime_r
 * would make glibc read the zone and keep it in memory it allocates (with
 * the tracer's guard held, so untraced): the program's own later tzset()
 * frees that memory, giving releases of blocks the trace never saw (every
 * git process had one), and the program's libc would hold a zone it never
 * asked for. So the tracer reads the zone itself, into a private mapping:
 *
 * - TZ unset: /etc/localtime. TZ empty or "UTC"-like: offset 0.
 * - TZ ":FILE", "Area/City" or an absolute path: that TZif file (under
 *   /usr/share/zoneinfo when relative). The version-2 block (64-bit
 *   transition times) gives the offset in force now; after the last
 *   transition, the file's POSIX footer does.
 * - Otherwise TZ is a POSIX string, "STDoffset[DST[offset][,start,end]]",
 *   with the usual Mm.w.d[/time] rules (Jn and n day forms count as no
 *   rule: standard time).
 *
 * Anything it cannot read gives offset 0, as glibc does for a zone it
 * cannot find.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tracer.h"

/* ---- POSIX TZ strings -------------------------------------------------- */

static const char *skip_name(const char *s)
{
    if (*s == '<') {
        while (*s && *s != '>')
            s++;
        return *s ? s + 1 : s;
    }
    while ((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z'))
        s++;
    return s;
}

static const char *parse_num(const char *s, long *v)
{
    *v = 0;
    while (*s >= '0' && *s <= '9')
        *v = *v * 10 + (*s++ - '0');
    return s;
}

/* [+-]hh[:mm[:ss]] in seconds; *ok cleared when there is no number. */
static const char *parse_hms(const char *s, long *secs, int *ok)
{
    int sign = 1;
    if (*s == '+' || *s == '-')
        sign = *s++ == '-' ? -1 : 1;
    *ok = *s >= '0' && *s <= '9';
    long h, m = 0, sec = 0;
    s = parse_num(s, &h);
    if (*s == ':')
        s = parse_num(s + 1, &m);
    if (*s == ':')
        s = parse_num(s + 1, &sec);
    *secs = sign * (h * 3600 + m * 60 + sec);
    return s;
}

static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int64_t year_of(int64_t t)
{
    int64_t days = t / 86400 - (t % 86400 < 0);
    int64_t y = 1970 + days / 366;
    while (days_from_civil(y + 1, 1, 1) <= days)
        y++;
    while (days_from_civil(y, 1, 1) > days)
        y--;
    return y;
}

struct rule {
    long month, week, wday, time;
};

/* ",Mm.w.d[/time]"; 0 when the rule is of another form. */
static const char *parse_rule(const char *s, struct rule *r, int *ok)
{
    *ok = 0;
    if (s[0] != ',' || s[1] != 'M')
        return s;
    s = parse_num(s + 2, &r->month);
    if (*s++ != '.')
        return s;
    s = parse_num(s, &r->week);
    if (*s++ != '.')
        return s;
    s = parse_num(s, &r->wday);
    r->time = 7200;
    if (*s == '/') {
        int tok;
        s = parse_hms(s + 1, &r->time, &tok);
    }
    *ok = r->month >= 1 && r->month <= 12 && r->week >= 1 && r->week <= 5 && r->wday <= 6;
    return s;
}

/* The local time (seconds since the epoch, as if UTC) a rule gives in year y. */
static int64_t rule_local(const struct rule *r, int64_t y)
{
    static const int mdays[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
    int64_t first = days_from_civil(y, (int)r->month, 1);
    int wd1 = (int)(((first % 7) + 11) % 7);   /* 1970-01-01 was a Thursday */
    int len = mdays[r->month - 1] +
              (r->month == 2 && (y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)));
    int day = 1 + ((int)r->wday - wd1 + 7) % 7 + ((int)r->week - 1) * 7;
    while (day > len)
        day -= 7;
    return (first + day - 1) * 86400 + r->time;
}

/* Seconds east of UTC at time t under POSIX string s. */
static long posix_offset(const char *s, int64_t t)
{
    int ok;
    long std, dst;
    s = parse_hms(skip_name(s), &std, &ok);
    if (!ok)
        return 0;
    std = -std;                      /* POSIX counts west */
    if (!*s || *s == ',')
        return std;
    s = skip_name(s);
    dst = std + 3600;
    if (*s && *s != ',') {
        s = parse_hms(s, &dst, &ok);
        dst = -dst;
    }
    struct rule start, end;
    s = parse_rule(s, &start, &ok);
    if (!ok)
        return std;
    s = parse_rule(s, &end, &ok);
    if (!ok)
        return std;
    int64_t y = year_of(t + std);
    int64_t on = rule_local(&start, y) - std, off = rule_local(&end, y) - dst;
    int in_dst = on < off ? (t >= on && t < off) : !(t >= off && t < on);
    return in_dst ? dst : std;
}

/* ---- TZif files ---------------------------------------------------------- */

static uint64_t be(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/* Offset at t from a TZif image; 0 with *ok cleared when it is not one. */
static long tzif_offset(const unsigned char *d, size_t len, int64_t t, int *ok)
{
    *ok = 0;
    if (len < 44 || memcmp(d, "TZif", 4) != 0 || d[4] < '2')
        return 0;
    /* Skip the version-1 block to the version-2 header. */
    uint64_t c[6];
    for (int i = 0; i < 6; i++)
        c[i] = be(d + 20 + 4 * i, 4);
    size_t v1 = 44 + c[3] * 5 + c[4] * 6 + c[5] + c[2] * 8 + c[1] + c[0];
    if (v1 + 44 > len || memcmp(d + v1, "TZif", 4) != 0)
        return 0;
    for (int i = 0; i < 6; i++)
        c[i] = be(d + v1 + 20 + 4 * i, 4);
    uint64_t isut = c[0], isstd = c[1], leap = c[2], timecnt = c[3], typecnt = c[4], chars = c[5];
    const unsigned char *times = d + v1 + 44, *idx = times + timecnt * 8, *types = idx + timecnt;
    const unsigned char *footer = types + typecnt * 6 + chars + leap * 12 + isstd + isut;
    if (typecnt == 0 || footer > d + len)
        return 0;
    *ok = 1;
    size_t n = 0;   /* transitions at or before t */
    while (n < timecnt && (int64_t)be(times + n * 8, 8) <= t)
        n++;
    if (n == timecnt && footer < d + len && *footer == '\n' && footer + 1 < d + len &&
        footer[1] != '\n') {
        char tz[128];
        size_t k = 0;
        for (const unsigned char *p = footer + 1; p < d + len && *p != '\n' && k < sizeof tz - 1; p++)
            tz[k++] = (char)*p;
        tz[k] = '\0';
        return posix_offset(tz, t);
    }
    unsigned type = n ? idx[n - 1] : 0;
    if (type >= typecnt)
        return 0;
    return (long)(int32_t)be(types + type * 6, 4);
}

static long file_offset(const char *path, int64_t t, int *ok)
{
    *ok = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct stat st;
    void *m = MAP_FAILED;
    if (fstat(fd, &st) == 0 && st.st_size > 0 && st.st_size < (1 << 20))
        m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return 0;
    long off = tzif_offset(m, (size_t)st.st_size, t, ok);
    munmap(m, (size_t)st.st_size);
    return off;
}

long at_tz_offset(int64_t t)
{
    const char *tz = at_getenv("TZ");
    int ok;
    if (!tz)
        return file_offset("/etc/localtime", t, &ok);
    if (*tz == ':')
        tz++;
    if (!*tz)
        return 0;
    char path[PATH_MAX];
    if (*tz == '/') {
        return file_offset(tz, t, &ok);
    }
    static const char dir[] = "/usr/share/zoneinfo/";
    size_t n = strlen(tz);
    if (n + sizeof dir <= sizeof path && !strstr(tz, "..")) {
        memcpy(path, dir, sizeof dir - 1);
        memcpy(path + sizeof dir - 1, tz, n + 1);
        long off = file_offset(path, t, &ok);
        if (ok)
            return off;
    }
    return posix_offset(tz, t);
}
