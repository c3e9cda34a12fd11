/* No password in sight: a Redis password given in a URL, in
 * WHARF_REDIS_PASSWORD or in [redis] password_file never shows in an
 * error line (of a URL that does not parse, too), wharfd's log,
 * /metrics, the console's API, `wharf stats`, nor the argv of wharfd and
 * its children (ps). Against a real redis-server with requirepass, and
 * real sentinels with a password of their own. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <wharf/client.h>

#include "host_process.h"
#include "http_get.h"
#include "redis_cluster.h"
#include "redis_server.h"
#include "spawn.h"
#include "tools.h"
#include "wharf_cli.h"

/* The secret, and a part of it that no message would hold by chance. */
#define PASSWORD "S3cretPW-4f9a"
#define MARK "S3cretPW"

static test_redis redis;
static test_host host;
static char dir[64];
static char out[16384], err[16384];

static void suite_up(void)
{
    static const char *const args[] = {NULL};

    snprintf(dir, sizeof(dir), "/tmp/wharf-test-secrets-XXXXXX");
    cr_assert(mkdtemp(dir) != NULL, "mkdtemp: %s", strerror(errno));
    test_redis_start_with(&redis, PASSWORD, args);
}

static void suite_down(void)
{
    test_host_stop(&host);
    test_redis_stop(&redis);
}

TestSuite(secrets, .init = suite_up, .fini = suite_down, .timeout = 120);

static void slurp(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, len - 1, f) : 0;

    buf[n] = '\0';
    if (f)
        fclose(f);
}

/* Runs argv with stdout and stderr into out and err, with env_name set
 * to env_value in the child when env_name is not NULL; returns the exit
 * code. */
static int run(const char *const *argv, const char *env_name,
               const char *env_value)
{
    char out_path[128], err_path[128];
    int status;

    snprintf(out_path, sizeof(out_path), "%s/stdout", dir);
    snprintf(err_path, sizeof(err_path), "%s/stderr", dir);
    status = test_spawn(argv, NULL, out_path, err_path, env_name, env_value);
    slurp(out_path, out, sizeof(out));
    slurp(err_path, err, sizeof(err));
    return status;
}

/* dir/name holding text; returns its path (a static buffer). */
static const char *write_file(const char *name, const char *text)
{
    static char path[256];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "w");
    cr_assert(f != NULL, "%s: %s", path, strerror(errno));
    cr_assert(fputs(text, f) >= 0 && fclose(f) == 0);
    return path;
}

static void assert_hidden(const char *text, const char *where)
{
    cr_assert(strstr(text, MARK) == NULL, "%s shows the password: %s", where,
              text);
}

Test(secrets, a_url_that_does_not_parse_is_shown_without_its_password)
{
    static const char bad[] = "redis://default:" PASSWORD "@127.0.0.1:notaport";
    char manifest[256], line[512];
    const char *check[] = {WHARFD_PATH, "--config", manifest, "--check", NULL};
    const test_cli_run *cli;
    wharf_client *client = NULL;
    int code;

    snprintf(line, sizeof(line), "[redis]\nurl = %s\n", bad);
    snprintf(manifest, sizeof(manifest), "%s", write_file("bad.ini", line));
    code = run(check, NULL, NULL);
    cr_assert_eq(code, 78, "--check gave %d: %s", code, err);
    cr_assert(strstr(err, "bad.ini:2: bad value 'redis://default:***@"
                          "127.0.0.1:notaport' for url: bad port") != NULL,
              "%s", err);
    assert_hidden(err, "--check");

    snprintf(manifest, sizeof(manifest), "%s",
             write_file("good.ini", "[redis]\nurl = redis://127.0.0.1/0\n"));
    code = run(check, "WHARF_REDIS_URL", bad);
    cr_assert_eq(code, 78, "--check gave %d: %s", code, err);
    cr_assert(strstr(err, "WHARF_REDIS_URL: bad value 'redis://default:***@") !=
                  NULL,
              "%s", err);
    assert_hidden(err, "--check with WHARF_REDIS_URL");

    cli = test_cli(bad, dir, (const char *const[]){"stats", NULL});
    cr_assert_eq(cli->status, 78, "%s", cli->err);
    cr_assert(strstr(cli->err, "'redis://default:***@127.0.0.1:notaport'") !=
                  NULL,
              "%s", cli->err);
    assert_hidden(cli->err, "wharf --redis");
    /* A userinfo without a colon is a password alone. */
    cli = test_cli("redis://" PASSWORD "@127.0.0.1:notaport", dir,
                   (const char *const[]){"stats", NULL});
    cr_assert(strstr(cli->err, "'redis://***@127.0.0.1:notaport'") != NULL,
              "%s", cli->err);
    assert_hidden(cli->err, "wharf --redis");

    cr_assert_eq(wharf_client_open(&client, bad, NULL, NULL, err, sizeof(err)),
                 WHARF_CLIENT_BAD_INPUT);
    cr_assert(strstr(err, "redis://default:***@") != NULL, "%s", err);
    assert_hidden(err, "wharf_client_open");
}

/* The Python and Node clients (through the parity tests' drivers) show a
 * URL that does not parse without its password, and exit 78. */
Test(secrets, the_python_and_node_clients_hide_it_too)
{
    static const char *const bad[] = {
        "redis://default:" PASSWORD "@127.0.0.1:notaport",
        "redis+cluster://default:" PASSWORD "@127.0.0.1:notaport",
        "rediss://default:" PASSWORD "@127.0.0.1:6380/0?tls_bogus=1",
    };
    char python_driver[300], node_driver[300];
    const char *argv[8];
    int code;

    test_need_tools((const char *const[]){"node", NULL});
    snprintf(python_driver, sizeof(python_driver), "%s/tests/clients/driver.py",
             WHARF_SOURCE_DIR);
    snprintf(node_driver, sizeof(node_driver), "%s/tests/clients/driver.js",
             WHARF_SOURCE_DIR);
    cr_assert_eq(setenv("PYTHONPATH", WHARF_SOURCE_DIR "/clients/python", 1),
                 0);
    cr_assert_eq(setenv("PYTHONDONTWRITEBYTECODE", "1", 1), 0);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        for (int node = 0; node < 2; node++) {
            size_t k = 0;

            argv[k++] = node ? "/usr/bin/node" : "/usr/bin/python3";
            argv[k++] = node ? node_driver : python_driver;
            argv[k++] = bad[i];
            argv[k++] = "enqueue";
            argv[k++] = "chaos";
            argv[k++] = "ok";
            argv[k] = NULL;
            code = run(argv, NULL, NULL);
            cr_assert_eq(code, 78, "%s %s: %d: %s", argv[0], bad[i], code, err);
            cr_assert(strstr(err, "bad Redis URL '") != NULL &&
                          strstr(err, ":***@") != NULL,
                      "%s: %s", argv[0], err);
            assert_hidden(err, argv[0]);
        }
}

/* The argv (NULs as spaces) of pid into buf. */
static void cmdline_of(pid_t pid, char *buf, size_t len)
{
    char path[64];
    size_t n;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
    f = fopen(path, "r");
    n = f ? fread(buf, 1, len - 1, f) : 0;
    if (f)
        fclose(f);
    for (size_t i = 0; i < n; i++)
        if (buf[i] == '\0')
            buf[i] = ' ';
    buf[n] = '\0';
}

/* Checks the argv of wharfd and of every child it has; returns how many
 * processes were looked at. */
static int assert_argv_hidden(pid_t parent)
{
    char text[4096], path[300], stat_line[512];
    struct dirent *d;
    DIR *proc = opendir("/proc");
    int seen = 1;

    cr_assert(proc != NULL);
    cmdline_of(parent, text, sizeof(text));
    cr_assert(strstr(text, "wharfd") != NULL, "%s", text);
    assert_hidden(text, "wharfd's argv");
    while ((d = readdir(proc)) != NULL) {
        const char *close_paren;
        int ppid = 0;

        if (d->d_name[0] < '0' || d->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%s/stat", d->d_name);
        slurp(path, stat_line, sizeof(stat_line));
        close_paren = strrchr(stat_line, ')');
        if (!close_paren || sscanf(close_paren, ") %*c %d", &ppid) != 1 ||
            ppid != parent)
            continue;
        cmdline_of(atoi(d->d_name), text, sizeof(text));
        assert_hidden(text, "the argv of a child of wharfd");
        seen++;
    }
    closedir(proc);
    return seen;
}

static bool task_done(void *arg)
{
    return test_host_done(&host, arg) >= 1;
}

/* A host whose password is in its URL serves a task, and no surface it
 * has shows the password. */
Test(secrets, a_serving_host_shows_its_password_nowhere)
{
    char url[128], listen[64], metrics[65536];
    int port = test_free_port(), code;
    test_host_opts o = {.redis_url = url, .metrics_listen = listen};
    const test_cli_run *cli;
    redisContext *rc = test_redis_connect(&redis);

    snprintf(url, sizeof(url), "redis://:" PASSWORD "@127.0.0.1:%d/0",
             redis.port);
    snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
    test_host_up(&host, &redis, &o, rc);
    cli = test_cli(
        url, dir,
        (const char *const[]){"enqueue", "chaos", "ok", "--id", "s1", NULL});
    cr_assert_eq(cli->status, 0, "%s", cli->err);
    cr_assert(test_wait_until(task_done, "s1", TEST_EVENT_MS),
              "the task did not run (see %s)", host.log);

    cli = test_cli(url, dir, (const char *const[]){"stats", NULL});
    cr_assert_eq(cli->status, 0, "%s", cli->err);
    cr_assert(strstr(cli->out, "chaos") != NULL, "%s", cli->out);
    assert_hidden(cli->out, "wharf stats");
    assert_hidden(cli->err, "wharf stats");
    cli = test_cli(url, dir, (const char *const[]){"stats", "--json", NULL});
    cr_assert_eq(cli->status, 0, "%s", cli->err);
    assert_hidden(cli->out, "wharf stats --json");

    code = test_http_get(port, "/metrics", metrics, sizeof(metrics));
    cr_assert_eq(code, 200);
    cr_assert(strstr(metrics, "wharf_tasks_total") != NULL, "%s", metrics);
    assert_hidden(metrics, "/metrics");
    code = test_http_get(port, "/api/overview", metrics, sizeof(metrics));
    cr_assert_eq(code, 200);
    assert_hidden(metrics, "/api/overview");

    cr_assert_geq(assert_argv_hidden(host.pid), 3,
                  "wharfd and its two workers");
    cr_assert_eq(test_host_stop(&host), 0);
    slurp(host.log, out, sizeof(out));
    cr_assert(strstr(out, "wharfd started") != NULL, "%s", out);
    assert_hidden(out, "wharfd's log");
    redisFree(rc);
}

/* [redis] password_file (systemd's LoadCredential=): the host and the CLI
 * with the manifest authenticate with its first line. */
Test(secrets, password_file_gives_the_host_and_the_cli_the_password)
{
    char keys[512], url[128];
    test_host_opts o = {.redis_keys = keys};
    const char *wharf_config[] = {WHARF_BINARY_DIR "/wharf",
                                  "--config",
                                  host.manifest,
                                  "enqueue",
                                  "chaos",
                                  "ok",
                                  "--id",
                                  "f1",
                                  NULL};
    redisContext *rc = test_redis_connect(&redis);
    int code;

    snprintf(keys, sizeof(keys), "password_file = %s\n",
             write_file("credential", PASSWORD "\n"));
    test_host_up(&host, &redis, &o, rc);
    code = run(wharf_config, NULL, NULL);
    cr_assert_eq(code, 0, "wharf --config gave %d: %s", code, err);
    cr_assert(test_wait_until(task_done, "f1", TEST_EVENT_MS),
              "the task did not run (see %s)", host.log);
    cr_assert_eq(test_host_stop(&host), 0);
    slurp(host.log, out, sizeof(out));
    assert_hidden(out, "wharfd's log");

    /* WHARF_REDIS_PASSWORD alone, for the CLI. */
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d/0", redis.port);
    cr_assert_eq(setenv("WHARF_REDIS_PASSWORD", PASSWORD, 1), 0);
    {
        const test_cli_run *cli =
            test_cli(url, dir, (const char *const[]){"stats", NULL});
        cr_assert_eq(cli->status, 0, "%s", cli->err);
        assert_hidden(cli->out, "wharf stats");
    }
    redisFree(rc);
}

Test(secrets, a_password_file_that_cannot_serve_is_a_configuration_error)
{
    char manifest[256], text[512];
    const char *check[] = {WHARFD_PATH, "--config", manifest, "--check", NULL};
    int code;

    snprintf(text, sizeof(text), "[redis]\npassword_file = %s/nothing\n", dir);
    snprintf(manifest, sizeof(manifest), "%s", write_file("m1.ini", text));
    code = run(check, NULL, NULL);
    cr_assert_eq(code, 78, "%d: %s", code, err);
    cr_assert(strstr(err, "m1.ini:2: cannot read password_file '") != NULL &&
                  strstr(err, "No such file or directory") != NULL,
              "%s", err);

    write_file("empty", "\n");
    snprintf(text, sizeof(text), "[redis]\npassword_file = empty\n");
    snprintf(manifest, sizeof(manifest), "%s", write_file("m2.ini", text));
    code = run(check, NULL, NULL);
    cr_assert_eq(code, 78, "%d: %s", code, err);
    cr_assert(strstr(err, "m2.ini:2: password_file '") != NULL &&
                  strstr(err, "' is empty") != NULL,
              "%s", err);

    snprintf(text, sizeof(text), "[redis]\npassword_file = %s\n", dir);
    snprintf(manifest, sizeof(manifest), "%s", write_file("m3.ini", text));
    code = run(check, NULL, NULL);
    cr_assert_eq(code, 78, "%d: %s", code, err);
    cr_assert(strstr(err, "m3.ini:2: password_file '") != NULL &&
                  strstr(err, "' is not a regular file") != NULL,
              "%s", err);

    write_file("credential", PASSWORD "\n");
    snprintf(text, sizeof(text),
             "[redis]\nurl = redis://:other@127.0.0.1/0\n"
             "password_file = credential\n");
    snprintf(manifest, sizeof(manifest), "%s", write_file("m4.ini", text));
    code = run(check, NULL, NULL);
    cr_assert_eq(code, 78, "%d: %s", code, err);
    cr_assert(strstr(err, "m4.ini:3: password_file and a password in url: "
                          "give only one") != NULL,
              "%s", err);
    assert_hidden(err, "--check");
}

/* The sentinels' own password, and a wrong one. */
#define SENTINEL_PW "Sent1nel-7c2e"
#define SENTINEL_MARK "Sent1nel"

static bool sentinel_task_done(void *arg)
{
    return test_host_done(arg, "st1") >= 1;
}

/* [redis] sentinel_password_file: with the right password the host finds
 * the master through the sentinels and serves; with a wrong one every
 * sentinel refuses it, and wharfd stops with 78 and the cause, never the
 * password. --check refuses it beside sentinel_password, without a
 * Sentinel url, and a file that cannot serve. */
Test(secrets, sentinel_password_file_authenticates_to_the_sentinels)
{
    static test_sentinels sentinels;
    static test_host sentinel_host;
    char keys[512], url[600], manifest[256], text[1024];
    const char *check[] = {WHARFD_PATH, "--config", manifest, "--check", NULL};
    test_host_opts o = {.redis_url = url, .redis_keys = keys};
    redisContext *primary;
    int code;

    test_sentinels_start(&sentinels);
    for (int i = 0; i < 3; i++) {
        redisContext *c = test_redis_connect(&sentinels.sentinel[i]);
        redisReply *r =
            redisCommand(c, "ACL SETUSER default resetpass >" SENTINEL_PW);
        cr_assert(r && r->type == REDIS_REPLY_STATUS, "ACL SETUSER: %s",
                  r ? r->str : c->errstr);
        freeReplyObject(r);
        redisFree(c);
    }
    snprintf(url, sizeof(url), "%s/0", sentinels.url);

    /* A wrong password: every sentinel refuses it. */
    snprintf(keys, sizeof(keys), "sentinel_password_file = %s\n",
             write_file("sentinel-wrong", "not-" SENTINEL_PW "\n"));
    test_host_manifest_opts(&sentinel_host, &redis, &o);
    test_host_start(&sentinel_host);
    code = test_host_wait_exit(&sentinel_host, 60000);
    cr_assert_eq(code, 78, "wharfd gave %d (see %s)", code, sentinel_host.log);
    cr_assert(test_host_log_has(&sentinel_host, "authentication failed",
                                "refused sentinel_user / sentinel_password",
                                NULL),
              "see %s", sentinel_host.log);
    slurp(sentinel_host.log, out, sizeof(out));
    cr_assert(strstr(out, SENTINEL_MARK) == NULL,
              "wharfd's log shows the sentinels' password: %s", out);

    /* The right one: the host serves the master the sentinels name. */
    snprintf(keys, sizeof(keys), "sentinel_password_file = %s\n",
             write_file("sentinel-right", SENTINEL_PW "\n"));
    test_host_up(&sentinel_host, &redis, &o, NULL);
    primary = test_redis_connect(&sentinels.primary);
    test_add_entry(primary, "chaos", "st1", "ok");
    cr_assert(
        test_wait_until(sentinel_task_done, &sentinel_host, TEST_EVENT_MS),
        "the task did not run (see %s)", sentinel_host.log);
    cr_assert_eq(test_host_stop(&sentinel_host), 0);
    slurp(sentinel_host.log, out, sizeof(out));
    cr_assert(strstr(out, SENTINEL_MARK) == NULL,
              "wharfd's log shows the sentinels' password: %s", out);
    redisFree(primary);
    test_sentinels_stop(&sentinels);

    /* What --check refuses, each at the key's line. */
    snprintf(text, sizeof(text),
             "[redis]\nurl = %s\nsentinel_password = x\n"
             "sentinel_password_file = sentinel-right\n",
             url);
    snprintf(manifest, sizeof(manifest), "%s", write_file("s1.ini", text));
    code = run(check, NULL, NULL);
    cr_assert_eq(code, 78, "%d: %s", code, err);
    cr_assert(strstr(err, "s1.ini:4: sentinel_password_file and "
                          "sentinel_password: give only one") != NULL,
              "%s", err);
    snprintf(text, sizeof(text),
             "[redis]\nurl = %s?sentinel_password=x\n"
             "sentinel_password_file = sentinel-right\n",
             url);
    snprintf(manifest, sizeof(manifest), "%s", write_file("s2.ini", text));
    code = run(check, NULL, NULL);
    cr_assert_eq(code, 78, "%d: %s", code, err);
    cr_assert(strstr(err, "s2.ini:3: sentinel_password_file and a "
                          "sentinel_password in url: give only one") != NULL,
              "%s", err);
    snprintf(text, sizeof(text),
             "[redis]\nurl = redis://127.0.0.1/0\n"
             "sentinel_password_file = sentinel-right\n");
    snprintf(manifest, sizeof(manifest), "%s", write_file("s3.ini", text));
    code = run(check, NULL, NULL);
    cr_assert_eq(code, 78, "%d: %s", code, err);
    cr_assert(strstr(err, "s3.ini:3: sentinel_password_file needs a Sentinel "
                          "url") != NULL,
              "%s", err);
    write_file("sentinel-empty", "\n");
    snprintf(text, sizeof(text),
             "[redis]\nurl = %s\nsentinel_password_file = sentinel-empty\n",
             url);
    snprintf(manifest, sizeof(manifest), "%s", write_file("s4.ini", text));
    code = run(check, NULL, NULL);
    cr_assert_eq(code, 78, "%d: %s", code, err);
    cr_assert(strstr(err, "s4.ini:3: sentinel_password_file '") != NULL &&
                  strstr(err, "' is empty") != NULL,
              "%s", err);
}
