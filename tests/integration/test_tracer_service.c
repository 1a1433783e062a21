/*
 * tests/integration/test_tracer_service.c: a service traced through its
 * whole life under the launcher: stopped by a supervisor's signal,
 * daemonized (double fork, setsid, chdir("/"), descriptors closed), started
 * through a shim that execs, and nginx with `user www-data;` in a
 * root-owned directory, daemon on and off. The program is
 * tests/programs/tracer_service.c; nginx and valgrind are peers, skipped
 * with a message when missing.
 *
 * The launcher runs in the background through sh: its pid (the
 * supervisor's, since it execs it) goes to DIR/launcher.pid, its stderr to
 * DIR/launcher.err, its exit status to DIR/status once it ends.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <pwd.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "test_tracer_trace.h"

#define SERVICE "build/tests/programs/tracer_service"

static const char *const modes[] = { "full", "leaks" };

/* Starts the launcher in DIR with `args` (a shell word list), in the
 * background; returns at once. */
static void launch_bg(const char *dir, const char *args)
{
    char *launcher = h_path("scripts/alloctrace");
    /* exec's redirections, not a group's: dash would keep copies of the
     * harness's pipes open in the background for the group to restore. */
    h_result r = h_sh("cd '%s' && ( exec >/dev/null 2>&1 </dev/null; "
                      "sh -c 'echo $$ >launcher.pid; exec \"$0\" \"$@\"' '%s' %s "
                      ">launcher.out 2>launcher.err; echo $? >status ) &",
                      dir, launcher, args);
    assert_int_equal(r.status, 0);
    h_result_free(&r);
    free(launcher);
}

/* The number in DIR/NAME once it is there (up to 20 s). */
static long wait_number(const char *dir, const char *name)
{
    char *path = h_fmt("%s/%s", dir, name);
    for (int i = 0; i < 400; i++) {
        char *text = h_read_file(path, NULL);
        if (text && text[0] >= '0' && text[0] <= '9' && strchr(text, '\n')) {
            long v = atol(text);
            free(text);
            free(path);
            return v;
        }
        free(text);
        usleep(50000);
    }
    fail_msg("%s did not appear", path);
    return -1;
}

static int exists(const char *dir, const char *name)
{
    char *path = h_fmt("%s/%s", dir, name);
    struct stat st;
    int yes = stat(path, &st) == 0;
    free(path);
    return yes;
}

static char *read_in(const char *dir, const char *name)
{
    char *path = h_fmt("%s/%s", dir, name);
    char *text = h_read_file(path, NULL);
    free(path);
    assert_non_null(text);
    return text;
}

/* DIR's trace of process `pid` (alloctrace.NAME.PID.txt[.zst]), or NULL. */
static char *trace_of(const char *dir, const char *name, long pid)
{
    char *prefix = h_fmt("alloctrace.%s.%ld.txt", name, pid);
    char *found = NULL;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));)
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0)
            found = h_fmt("%s/%s", dir, e->d_name);
    if (d)
        closedir(d);
    free(prefix);
    return found;
}

/* Sizes of the blocks a leaks-mode trace reports as definitely lost,
 * sorted, as "1001 2002 3003". */
static char *definite_sizes(const char *trace)
{
    char *pp = h_path("postproc/alloctrace-postproc");
    h_result r = h_sh("%s --leak-kinds=definite '%s' | sed -n 's/^[0-9]*\\. .*malloc(\\([0-9]*\\)).*/\\1/p' "
                      "| sort -n | tr '\\n' ' '", pp, trace);
    assert_int_equal(r.status, 0);
    free(pp);
    char *s = strdup(r.out);
    h_result_free(&r);
    return s;
}

/* A supervisor's SIGTERM to the launcher reaches the server, which
 * handles it and exits 0: the launcher exits 0 too (the server's own
 * status), after its summary; leaks mode's report is whole. */
static void test_server_stopped_by_sigterm_to_the_launcher_keeps_its_status(void **state)
{
    (void)state;
    for (size_t m = 0; m < 2; m++) {
        char *dir = h_tmpdir();
        char *args = h_fmt("-m %s %s serve %s/server.pid", modes[m], h_path(SERVICE), dir);
        launch_bg(dir, args);
        long server = wait_number(dir, "server.pid");
        long launcher = wait_number(dir, "launcher.pid");
        assert_int_equal(kill((pid_t)launcher, SIGTERM), 0);
        assert_int_equal(wait_number(dir, "status"), 0);
        char *out = read_in(dir, "launcher.out"), *err = read_in(dir, "launcher.err");
        assert_string_equal(out, "stopped by signal 15\n");
        char *re = h_fmt("^alloctrace: trace: alloctrace\\.tracer_service\\.%ld\\.txt", server);
        char *line = h_find_line(err, re);
        assert_non_null(line);
        char *trace = trace_of(dir, "tracer_service", server);
        struct t_trace t = t_load(trace);
        assert_int_equal(t_count_allocs(&t, 222), 1);   /* made after the signal */
        if (m == 1)
            assert_true(t.leak_summary);
        t_free(&t);
        free(trace);
        free(line);
        free(re);
        free(out);
        free(err);
        free(args);
    }
    h_cleanup();
}

/* Ctrl-C twice, as an impatient user does: the launcher survives both,
 * passes them on, and the trace and summary are whole. */
static void test_second_sigint_to_the_launcher_loses_nothing(void **state)
{
    (void)state;
    char *dir = h_tmpdir();
    char *args = h_fmt("-m leaks %s serve %s/server.pid", h_path(SERVICE), dir);
    launch_bg(dir, args);
    long server = wait_number(dir, "server.pid");
    long launcher = wait_number(dir, "launcher.pid");
    kill((pid_t)launcher, SIGINT);
    kill((pid_t)launcher, SIGINT);
    assert_int_equal(wait_number(dir, "status"), 0);
    char *err = read_in(dir, "launcher.err");
    h_has(err, "blocks alive at exit)");
    h_lacks(err, "warning");
    char *trace = trace_of(dir, "tracer_service", server);
    struct t_trace t = t_load(trace);
    assert_true(t.leak_summary);
    assert_int_equal(t_count_allocs(&t, 222), 1);
    t_free(&t);
    free(trace);
    free(err);
    free(args);
    h_cleanup();
}

/* A daemon (double fork, setsid, chdir("/"), every descriptor closed) is
 * followed until it ends: the launcher waits for it, passes it the
 * SIGTERM, and names the three traces, all in its own directory. */
static void test_daemon_is_followed_and_every_trace_is_named(void **state)
{
    (void)state;
    for (size_t m = 0; m < 2; m++) {
        char *dir = h_tmpdir();
        char *args = h_fmt("-m %s %s daemon %s/daemon.pid", modes[m], h_path(SERVICE), dir);
        launch_bg(dir, args);
        long daemon = wait_number(dir, "daemon.pid");
        long launcher = wait_number(dir, "launcher.pid");
        usleep(200000);
        assert_false(exists(dir, "status"));   /* still following the daemon */
        assert_int_equal(kill((pid_t)launcher, SIGTERM), 0);
        assert_int_equal(wait_number(dir, "status"), 0);
        char *err = read_in(dir, "launcher.err");
        h_has(err, "left 1 process running (a daemon): following it until it ends");
        /* Full mode: the middle process, which only forks and exits,
         * records nothing and leaves no file; leaks mode: its report. */
        assert_int_equal(h_count_lines(err, "^alloctrace: trace: alloctrace\\.tracer_service\\.[0-9]+\\.txt"),
                         m == 0 ? 2 : 3);
        char *trace = trace_of(dir, "tracer_service", daemon);
        assert_non_null(trace);
        char *root = trace_of("/", "tracer_service", daemon);
        assert_null(root);
        struct t_trace t = t_load(trace);
        assert_int_equal(t_count_allocs(&t, 2002), 1);
        assert_int_equal(t_count_allocs(&t, 3003), 1);
        /* Leaks mode: the block leaked before the forks is the daemon's too. */
        assert_int_equal(t_count_allocs(&t, 1001), m == 1 ? 1 : 0);
        assert_non_null(strstr(t.header, ", ppid="));
        t_free(&t);
        free(trace);
        free(err);
        free(args);
    }
    h_cleanup();
}

/* The daemon's leaks in leaks mode are valgrind's --trace-children=yes
 * definite leaks of the daemon, block for block. */
static void test_daemon_leaks_equal_valgrinds(void **state)
{
    (void)state;
    if (!h_have("valgrind"))
        skip();
    char *dir = h_tmpdir(), *prog = h_path(SERVICE);
    h_result vg = h_sh("cd '%s' && valgrind --trace-children=yes --leak-check=full --log-file=vg.%%p "
                       "'%s' daemon %s/vg.pid >/dev/null 2>&1", dir, prog, dir);
    assert_int_equal(vg.status, 0);
    h_result_free(&vg);
    long vg_daemon = wait_number(dir, "vg.pid");
    kill((pid_t)vg_daemon, SIGTERM);
    h_result log = {0};
    for (int i = 0; i < 200; i++) {
        h_result_free(&log);
        log = h_sh("cat '%s/vg.%ld' 2>/dev/null", dir, vg_daemon);
        if (strstr(log.out, "ERROR SUMMARY"))
            break;
        usleep(100000);
    }
    h_result sizes = h_sh("sed -n 's/.*== \\([0-9,]*\\) bytes in 1 blocks are definitely lost.*/\\1/p' "
                          "'%s/vg.%ld' | tr -d , | sort -n | tr '\\n' ' '", dir, vg_daemon);
    assert_string_equal(sizes.out, "1001 2002 3003 ");

    char *args = h_fmt("-m leaks %s daemon %s/daemon.pid", prog, dir);
    launch_bg(dir, args);
    long daemon = wait_number(dir, "daemon.pid");
    kill((pid_t)daemon, SIGTERM);   /* as its own init script would */
    assert_int_equal(wait_number(dir, "status"), 0);
    char *trace = trace_of(dir, "tracer_service", daemon);
    char *ours = definite_sizes(trace);
    assert_string_equal(ours, sizes.out);
    free(ours);
    free(trace);
    free(args);
    h_result_free(&sizes);
    h_result_free(&log);
    free(prog);
    h_cleanup();
}

/* A shim that execs the real program: the launcher says so, never
 * "killed"; with --follow-exec the trace named is the program's. */
static void test_shim_exec_is_said_and_followed(void **state)
{
    (void)state;
    char *dir = h_tmpdir(), *prog = h_path(SERVICE), *launcher = h_path("scripts/alloctrace");
    for (size_t m = 0; m < 2; m++) {
        h_result r = h_sh("cd '%s' && '%s' -m %s -o shim%zu.txt '%s' shim '%s' leak", dir, launcher,
                          modes[m], m, prog, prog);
        assert_int_equal(r.status, 0);
        char *said = h_fmt("alloctrace: tracer_service exec'd %s, not traced: add --follow-exec\n", prog);
        h_has(r.err, said);
        h_lacks(r.err, "SIGKILL");
        h_has(r.err, "alloctrace: trace: shim");
        free(said);
        h_result_free(&r);

        r = h_sh("cd '%s' && '%s' -m %s --follow-exec -o real%zu.txt '%s' shim '%s' leak", dir,
                 launcher, modes[m], m, prog, prog);
        assert_int_equal(r.status, 0);
        char *re = h_fmt("^alloctrace: trace: real%zu\\.txt\\.2 ", m);
        char *line = h_find_line(r.err, re);
        assert_non_null(line);
        char *path = h_fmt("%s/real%zu.txt.2", dir, m);
        struct t_trace t = t_load(path);
        assert_int_equal(t_count_allocs(&t, 555), 1);   /* the program behind the shim */
        assert_int_equal(t_count_allocs(&t, 444), 0);
        t_free(&t);
        free(path);
        free(line);
        free(re);
        h_result_free(&r);
    }
    free(launcher);
    free(prog);
    h_cleanup();
}

/* ---- nginx ------------------------------------------------------------ */

static int nginx_usable(void)
{
    if (!h_have("nginx"))
        return 0;
    if (geteuid() != 0 || !getpwnam("www-data")) {
        print_message("skipped: nginx's workers switch to www-data only when started as root\n");
        return 0;
    }
    return 1;
}

/* A root-owned directory (755: www-data may not write there) with a
 * config on a free loopback port. */
static int nginx_setup(const char *dir, int daemon_on)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof a;
    assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof a), 0);
    getsockname(s, (struct sockaddr *)&a, &len);
    int port = ntohs(a.sin_port);
    close(s);
    assert_int_equal(chmod(dir, 0755), 0);
    h_result r = h_sh(
        "cd '%s' && mkdir tmp && cat >nginx.conf <<EOF\n"
        "user www-data;\nworker_processes 2;\ndaemon %s;\npid %s/nginx.pid;\n"
        "error_log %s/error.log;\nevents { worker_connections 64; }\n"
        "http { access_log off; client_body_temp_path %s/tmp; proxy_temp_path %s/tmp;\n"
        "  fastcgi_temp_path %s/tmp; uwsgi_temp_path %s/tmp; scgi_temp_path %s/tmp;\n"
        "  server { listen 127.0.0.1:%d; location / { return 200 \"hello\\n\"; } } }\nEOF\n",
        dir, daemon_on ? "on" : "off", dir, dir, dir, dir, dir, dir, dir, port);
    assert_int_equal(r.status, 0);
    h_result_free(&r);
    return port;
}

/* n requests on new connections; returns how many were answered. */
static int get_n(int port, int n)
{
    int ok = 0;
    for (int i = 0; i < n; i++) {
        int s = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        int tries = 0;
        while (connect(s, (struct sockaddr *)&a, sizeof a) != 0 && tries++ < 100)
            usleep(50000);
        const char req[] = "GET / HTTP/1.0\r\n\r\n";
        char buf[512];
        if (write(s, req, sizeof req - 1) == (ssize_t)sizeof req - 1 &&
            read(s, buf, sizeof buf) > 0 && strncmp(buf, "HTTP/1.1 200", 12) == 0)
            ok++;
        close(s);
    }
    return ok;
}

/* Every worker's trace exists, is named by the launcher, and together
 * they hold the requests' allocations: nginx makes a request's pool
 * with posix_memalign(4096) (request_pool_size). */
static void check_workers(const char *dir, const char *err, int requests)
{
    regex_t rx;
    assert_int_equal(regcomp(&rx, "^alloctrace: trace: (alloctrace\\.nginx\\.[0-9]+\\.txt[.a-z]*) .*; pid [0-9]+, child of",
                             REG_EXTENDED | REG_NEWLINE), 0);
    size_t workers = 0, pools = 0;
    for (const char *p = err; *p;) {
        regmatch_t mm[2];
        if (regexec(&rx, p, 2, mm, 0) != 0)
            break;
        char *path = h_fmt("%s/%.*s", dir, (int)(mm[1].rm_eo - mm[1].rm_so), p + mm[1].rm_so);
        struct t_trace t = t_load(path);
        size_t here = 0;
        for (size_t i = 0; i < t.n; i++)
            here += !t.recs[i].release && t.recs[i].size == 4096 &&
                    strcmp(t.recs[i].name, "posix_memalign") == 0;
        pools += here;
        workers += strstr(t.header, ", ppid=") != NULL;
        t_free(&t);
        free(path);
        p += mm[0].rm_eo;
    }
    regfree(&rx);
    assert_true(workers >= 2);
    assert_true(pools >= (size_t)requests);
}

static void test_nginx_as_www_data_in_the_foreground_stopped_by_sigterm(void **state)
{
    (void)state;
    if (!nginx_usable())
        skip();
    char *dir = h_tmpdir();
    int port = nginx_setup(dir, 0);
    char *args = h_fmt("nginx -c %s/nginx.conf -p %s", dir, dir);
    launch_bg(dir, args);
    long launcher = wait_number(dir, "launcher.pid");
    wait_number(dir, "nginx.pid");
    assert_int_equal(get_n(port, 10), 10);
    kill((pid_t)launcher, SIGTERM);
    assert_int_equal(wait_number(dir, "status"), 0);
    char *err = read_in(dir, "launcher.err");
    h_lacks(err, "Permission denied");
    check_workers(dir, err, 10);
    free(err);
    free(args);
    h_cleanup();
}

static void test_nginx_as_www_data_daemon_stopped_by_nginx_s_quit(void **state)
{
    (void)state;
    if (!nginx_usable())
        skip();
    char *dir = h_tmpdir();
    int port = nginx_setup(dir, 1);
    char *args = h_fmt("nginx -c %s/nginx.conf -p %s", dir, dir);
    launch_bg(dir, args);
    wait_number(dir, "nginx.pid");
    assert_int_equal(get_n(port, 10), 10);
    assert_false(exists(dir, "status"));   /* following the daemon */
    h_result q = h_sh("nginx -c '%s/nginx.conf' -p '%s' -s quit", dir, dir);
    assert_int_equal(q.status, 0);
    h_result_free(&q);
    assert_int_equal(wait_number(dir, "status"), 0);
    char *err = read_in(dir, "launcher.err");
    h_lacks(err, "Permission denied");
    h_has(err, "(a daemon): following it until it ends");
    check_workers(dir, err, 10);
    free(err);
    free(args);
    h_cleanup();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_server_stopped_by_sigterm_to_the_launcher_keeps_its_status),
        cmocka_unit_test(test_second_sigint_to_the_launcher_loses_nothing),
        cmocka_unit_test(test_daemon_is_followed_and_every_trace_is_named),
        cmocka_unit_test(test_daemon_leaks_equal_valgrinds),
        cmocka_unit_test(test_shim_exec_is_said_and_followed),
        cmocka_unit_test(test_nginx_as_www_data_in_the_foreground_stopped_by_sigterm),
        cmocka_unit_test(test_nginx_as_www_data_daemon_stopped_by_nginx_s_quit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
