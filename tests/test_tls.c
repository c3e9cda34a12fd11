/* rediss://: a host, the CLI and the C client run tasks over TLS against a
 * real redis-server with --tls-port, with a CA, server and client
 * certificates made by openssl for each test; every refusal (a wrong CA,
 * an expired certificate, a wrong host name, TLS on one side only, a
 * client certificate missing) is one line naming its cause and exit 78,
 * or wharfd's reconnect loop logging it once; a restart of Redis over TLS
 * loses and repeats nothing. The server also listens plain, on the port
 * the test's own connection (and the support's readiness check) uses. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <wharf/client.h>

#include "host_process.h"
#include "redis_server.h"
#include "tools.h"
#include "wharf_cli.h"

static char dir[64]; /* the certificates, the CLI's stderr */
static test_redis redis, second, replica, shard[3];
static pid_t sentinel_pid[3];
static int sentinel_port[3], sentinel_tls_port[3];
static test_host host;
static redisContext *rc; /* plain, to redis */
static int tls_port;     /* redis's TLS port */
static char tls_port_text[16], second_port_text[16];
static char server_crt[128], server_key[128], ca_crt[128];
static char expired_crt[128];

/* dir/name, in one of a few static buffers used in turn. */
static const char *in_dir(const char *name)
{
    static char paths[8][160];
    static int next;
    char *p = paths[next++ % 8];

    snprintf(p, sizeof(paths[0]), "%s/%s", dir, name);
    return p;
}

/* The certificates of a test: ca (signs server, expired and client),
 * other-ca (signs nothing we use), server (localhost and 127.0.0.1),
 * expired (the same, its validity over yesterday) and client. EC keys:
 * quick to make. */
static void make_certificates(void)
{
    char cmd[2048];

    snprintf(
        cmd, sizeof(cmd),
        "set -e; cd '%s'; exec 2> openssl.log; k='-newkey ec -pkeyopt "
        "ec_paramgen_curve:prime256v1 "
        "-nodes'\n"
        "openssl req -x509 $k -keyout ca.key -out ca.crt -days 2 "
        "-subj /CN=wharf-test-ca\n"
        "openssl req -x509 $k -keyout other-ca.key -out other-ca.crt -days 2 "
        "-subj /CN=other-ca\n"
        "printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' > server.ext\n"
        "openssl req $k -keyout server.key -out server.csr -subj "
        "/CN=localhost\n"
        "openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key "
        "-CAcreateserial -out server.crt -days 2 -extfile server.ext\n"
        "openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key "
        "-CAcreateserial -out expired.crt -days -1 -extfile server.ext\n"
        "openssl req $k -keyout client.key -out client.csr "
        "-subj /CN=wharf-client\n"
        "openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key "
        "-CAcreateserial -out client.crt -days 2\n"
        "chmod 600 *.key\n",
        dir);
    cr_assert_eq(system(cmd), 0,
                 "openssl could not make the certificates: see %s/openssl.log",
                 dir);
}

static void suite_up(void)
{
    test_need_tools((const char *const[]){"openssl", NULL});
    snprintf(dir, sizeof(dir), "/tmp/wharf-test-tls-XXXXXX");
    cr_assert(mkdtemp(dir) != NULL, "mkdtemp: %s", strerror(errno));
    make_certificates();
    snprintf(server_crt, sizeof(server_crt), "%s", in_dir("server.crt"));
    snprintf(server_key, sizeof(server_key), "%s", in_dir("server.key"));
    snprintf(ca_crt, sizeof(ca_crt), "%s", in_dir("ca.crt"));
    snprintf(expired_crt, sizeof(expired_crt), "%s", in_dir("expired.crt"));
}

static void suite_down(void)
{
    test_host_stop(&host);
    if (rc)
        redisFree(rc);
    rc = NULL;
    for (int i = 0; i < 3; i++)
        if (sentinel_pid[i] > 0) {
            kill(sentinel_pid[i], SIGKILL);
            waitpid(sentinel_pid[i], NULL, 0);
        }
    test_redis_stop(&replica);
    for (int i = 0; i < 3; i++)
        test_redis_stop(&shard[i]);
    test_redis_stop(&redis);
    test_redis_stop(&second);
}

TestSuite(tls, .init = suite_up, .fini = suite_down, .timeout = 240);

/* Starts r listening plain on its own port and TLS on a free one (into
 * *port and port_text) with certificate crt, clients' certificates
 * required when mutual. */
static void start_tls_redis(test_redis *r, int *port, char *port_text,
                            const char *crt, bool mutual, int appendonly)
{
    const char *args[16];
    int n = 0;

    *port = test_free_port();
    snprintf(port_text, 16, "%d", *port);
    args[n++] = "--tls-port";
    args[n++] = port_text;
    args[n++] = "--tls-cert-file";
    args[n++] = crt;
    args[n++] = "--tls-key-file";
    args[n++] = server_key;
    args[n++] = "--tls-ca-cert-file";
    args[n++] = ca_crt;
    args[n++] = "--tls-auth-clients";
    args[n++] = mutual ? "yes" : "no";
    /* Each refused handshake is a line of its log: what shows that a
     * client goes on trying (a handshake that fails is no connection in
     * INFO stats). */
    args[n++] = "--loglevel";
    args[n++] = "verbose";
    args[n] = NULL;
    r->appendonly = appendonly;
    test_redis_start_with(r, NULL, args);
}

static void start_redis(bool mutual, int appendonly)
{
    start_tls_redis(&redis, &tls_port, tls_port_text, server_crt, mutual,
                    appendonly);
    rc = test_redis_connect(&redis);
}

/* "rediss://HOST:PORT/0?QUERY" into a static buffer. */
static const char *tls_url(const char *host_name, int port, const char *query)
{
    static char urls[4][512];
    static int next;
    char *u = urls[next++ % 4];

    snprintf(u, sizeof(urls[0]), "rediss://%.64s:%d/0%s%.400s", host_name, port,
             query && query[0] ? "?" : "", query ? query : "");
    return u;
}

static const char *ca_query(void)
{
    static char q[200];

    snprintf(q, sizeof(q), "tls_ca=%s", ca_crt);
    return q;
}

static bool task_done(void *id)
{
    return test_host_done(&host, id) >= 1;
}

/* How many lines text holds. */
static int lines_of(const char *text)
{
    int n = 0;

    for (; *text; text++)
        n += *text == '\n';
    return n;
}

Test(tls, a_host_the_cli_and_the_client_run_tasks_over_tls)
{
    char keys[300], url[128];
    test_host_opts o = {.redis_url = url, .redis_keys = keys};
    const test_cli_run *cli;
    wharf_client *client = NULL;
    wharf_enqueue_reply reply;
    char err[512];
    void *data = NULL;
    size_t len = 0;

    start_redis(false, 0);
    /* The host by its manifest's tls_ca key; the CLI and the client by
     * the URL's query. */
    snprintf(url, sizeof(url), "rediss://127.0.0.1:%d/0", tls_port);
    snprintf(keys, sizeof(keys), "tls_ca = %s\n", ca_crt);
    test_host_up(&host, &redis, &o, rc);

    cli = test_cli(
        tls_url("localhost", tls_port, ca_query()), dir,
        (const char *const[]){"enqueue", "chaos", "ok", "--id", "cli-1", NULL});
    cr_assert_eq(cli->status, 0, "%s", cli->err);
    cr_assert(test_wait_until(task_done, "cli-1", TEST_EVENT_MS),
              "the task did not run (see %s)", host.log);
    cli = test_cli(tls_url("127.0.0.1", tls_port, ca_query()), dir,
                   (const char *const[]){"status", "chaos", "cli-1", NULL});
    cr_assert_eq(cli->status, 0, "%s", cli->err);
    cr_assert(strstr(cli->out, "done") != NULL, "%s", cli->out);
    cli = test_cli(tls_url("127.0.0.1", tls_port, ca_query()), dir,
                   (const char *const[]){"stats", NULL});
    cr_assert_eq(cli->status, 0, "%s", cli->err);
    cr_assert(strstr(cli->out, "chaos") != NULL, "%s", cli->out);

    cr_assert_eq(wharf_client_open(&client,
                                   tls_url("127.0.0.1", tls_port, ca_query()),
                                   NULL, NULL, err, sizeof(err)),
                 WHARF_CLIENT_OK, "%s", err);
    cr_assert_eq(wharf_enqueue(client,
                               &(wharf_enqueue_opts){.type = "chaos",
                                                     .payload = "ok",
                                                     .payload_len = 2,
                                                     .id = "client-1"},
                               &reply),
                 WHARF_CLIENT_OK, "%s", wharf_client_errstr(client));
    cr_assert_eq(wharf_result_wait(client, "chaos", "client-1", TEST_EVENT_MS,
                                   &data, &len),
                 WHARF_CLIENT_OK, "%s", wharf_client_errstr(client));
    wharf_free(data);
    wharf_client_close(client);
    cr_assert_eq(test_host_done(&host, "client-1"), 1);
    cr_assert_eq(test_host_stop(&host), 0);
    cr_assert_not(test_host_log_has(&host, "unreachable", NULL), "see %s",
                  host.log);
}

/* One refusal: the CLI's stats and the client's open against url. */
static void assert_refused(const char *url, const char *cause)
{
    const test_cli_run *cli =
        test_cli(url, dir, (const char *const[]){"stats", NULL});
    wharf_client *client = NULL;
    char err[512];

    cr_assert_eq(cli->status, 78, "%s gave %d: %s", url, cli->status, cli->err);
    cr_assert_eq(lines_of(cli->err), 1, "one line: %s", cli->err);
    cr_assert(strstr(cli->err, cause) != NULL, "%s: %s", url, cli->err);
    cr_assert_eq(wharf_client_open(&client, url, NULL, NULL, err, sizeof(err)),
                 WHARF_CLIENT_AUTH, "%s: %s", url, err);
    cr_assert(strstr(err, cause) != NULL, "%s: %s", url, err);
}

Test(tls, each_refusal_is_one_line_naming_its_cause_and_78)
{
    char query[300];
    int expired_port;

    start_redis(false, 0);
    snprintf(query, sizeof(query), "tls_ca=%s", in_dir("other-ca.crt"));
    assert_refused(tls_url("127.0.0.1", tls_port, query),
                   "TLS: certificate verify failed: self-signed certificate "
                   "in certificate chain");
    snprintf(query, sizeof(query), "tls_ca=%s&tls_sni=wrong.example", ca_crt);
    assert_refused(tls_url("127.0.0.1", tls_port, query),
                   "TLS: certificate verify failed: hostname mismatch");
    snprintf(query, sizeof(query), "tls_ca=%s&tls_sni=127.0.0.2", ca_crt);
    assert_refused(tls_url("127.0.0.1", tls_port, query),
                   "TLS: certificate verify failed: IP address mismatch");
    {
        char plain[128];

        snprintf(plain, sizeof(plain), "redis://127.0.0.1:%d/0", tls_port);
        assert_refused(plain, "(is this a TLS port? use rediss://)");
    }
    assert_refused(tls_url("127.0.0.1", redis.port, ca_query()),
                   "(is this port plain Redis? use redis://)");

    start_tls_redis(&second, &expired_port, second_port_text, expired_crt,
                    false, 0);
    assert_refused(tls_url("localhost", expired_port, ca_query()),
                   "TLS: certificate verify failed: certificate has expired");
}

Test(tls, mutual_tls_with_client_certificates)
{
    char query[512], keys[512], url[128];
    test_host_opts o = {.redis_url = url, .redis_keys = keys};
    const test_cli_run *cli;

    start_redis(true, 0);
    /* No certificate: the server's alert, after the handshake. */
    assert_refused(tls_url("127.0.0.1", tls_port, ca_query()),
                   "TLS: the server wants a client certificate and none was "
                   "given (tls_cert, tls_key)");
    snprintf(query, sizeof(query), "tls_ca=%s&tls_cert=%s&tls_key=%s", ca_crt,
             in_dir("client.crt"), in_dir("client.key"));
    cli = test_cli(
        tls_url("127.0.0.1", tls_port, query), dir,
        (const char *const[]){"enqueue", "chaos", "ok", "--id", "m-1", NULL});
    cr_assert_eq(cli->status, 0, "%s", cli->err);

    /* The same by the CLI's options. */
    cli = test_cli(tls_url("127.0.0.1", tls_port, NULL), dir,
                   (const char *const[]){"--tls-ca", ca_crt, "--tls-cert",
                                         in_dir("client.crt"), "--tls-key",
                                         in_dir("client.key"), "stats", NULL});
    cr_assert_eq(cli->status, 0, "%s", cli->err);
    cli = test_cli(tls_url("127.0.0.1", tls_port, NULL), dir,
                   (const char *const[]){"--tls-ca", ca_crt, "stats", NULL});
    cr_assert_eq(cli->status, 78, "%s", cli->err);
    cr_assert(strstr(cli->err, "wants a client certificate") != NULL, "%s",
              cli->err);

    snprintf(url, sizeof(url), "rediss://localhost:%d/0", tls_port);
    snprintf(keys, sizeof(keys),
             "tls_ca = ca.crt\ntls_cert = %s\ntls_key = %s\n",
             in_dir("client.crt"), in_dir("client.key"));
    test_host_manifest_opts(&host, &redis, &o);
    /* tls_ca relative to the manifest's folder. */
    {
        char cmd[512];

        snprintf(cmd, sizeof(cmd), "cp '%s' '%s/ca.crt'", ca_crt, host.dir);
        cr_assert_eq(system(cmd), 0);
    }
    test_host_launch(&host, rc);
    cr_assert(test_wait_until(task_done, "m-1", TEST_EVENT_MS),
              "the task did not run (see %s)", host.log);
}

/* The CA folder the host trusts: empty (with the other CA only) until
 * the test puts the right CA in it, under its hash name. */
static bool reached_again(void *unused)
{
    (void)unused;
    return test_host_log_has(&host, "supervisor: redis reachable again", NULL);
}

/* Lines of redis's log that say a TLS handshake failed. */
static int refused_handshakes(void)
{
    char path[300], line[1024];
    int n = 0;
    FILE *f;

    snprintf(path, sizeof(path), "%s/redis.log", redis.dir);
    f = fopen(path, "r");
    if (!f)
        return 0;
    while (fgets(line, sizeof(line), f))
        n += strstr(line, "Error accepting a client connection") != NULL;
    fclose(f);
    return n;
}

static bool retried(void *unused)
{
    (void)unused;
    return refused_handshakes() >= 5;
}

Test(tls, wharfd_retries_a_refused_certificate_and_logs_it_once)
{
    char keys[300], url[128], cmd[1024];
    test_host_opts o = {.redis_url = url, .redis_keys = keys};
    const char *trusted = in_dir("trusted");
    const char *const cause[] = {"supervisor: redis unreachable",
                                 "certificate verify failed", NULL};

    start_redis(false, 0);
    cr_assert_eq(mkdir(trusted, 0700), 0);
    snprintf(cmd, sizeof(cmd),
             "cd '%s' && cp other-ca.crt \"trusted/$(openssl x509 -hash "
             "-noout -in other-ca.crt).0\"",
             dir);
    cr_assert_eq(system(cmd), 0);
    snprintf(url, sizeof(url), "rediss://127.0.0.1:%d/0", tls_port);
    snprintf(keys, sizeof(keys), "tls_ca = %s\n", trusted);
    test_host_manifest_opts(&host, &redis, &o);
    test_host_start(&host);
    cr_assert(test_host_wait_log(&host, TEST_EVENT_MS, cause), "see %s",
              host.log);
    /* It goes on trying (each try a connection the server counts)... */
    cr_assert(test_wait_until(retried, NULL, TEST_EVENT_MS),
              "no retries: %d refused handshakes", refused_handshakes());
    /* ...and a CA put in the folder is found by the next one. */
    snprintf(cmd, sizeof(cmd),
             "cd '%s' && cp ca.crt \"trusted/$(openssl x509 -hash -noout "
             "-in ca.crt).0\"",
             dir);
    cr_assert_eq(system(cmd), 0);
    cr_assert(test_wait_until(reached_again, NULL, TEST_EVENT_MS), "see %s",
              host.log);
    cr_assert_eq(test_host_log_count(&host, cause), 1,
                 "the cause is logged once (see %s)", host.log);
    test_add_entry(rc, "chaos", "after-ca", "ok");
    cr_assert(test_wait_until(task_done, "after-ca", TEST_EVENT_MS),
              "the task did not run (see %s)", host.log);
}

Test(tls, tls_verify_no_connects_without_a_ca_and_warns_at_start)
{
    char url[128];
    test_host_opts o = {.redis_url = url, .redis_keys = "tls_verify = no\n"};

    start_redis(false, 0);
    snprintf(url, sizeof(url), "rediss://127.0.0.1:%d/0", tls_port);
    test_host_up(&host, &redis, &o, rc);
    cr_assert(test_host_log_has(&host, "tls_verify = no", "not checked", NULL),
              "see %s", host.log);
    test_add_entry(rc, "chaos", "nv-1", "ok");
    cr_assert(test_wait_until(task_done, "nv-1", TEST_EVENT_MS),
              "the task did not run (see %s)", host.log);
}

/* The Python and Node clients' drivers of the parity tests
 * (tests/clients): one call, its exit code the client error's. */
static int run_driver(const char *program, const char *url, const char *id,
                      char *err, size_t errlen)
{
    char err_path[200];
    int status;
    pid_t pid;

    snprintf(err_path, sizeof(err_path), "%s/driver.err", dir);
    pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        const char *interpreter =
            strcmp(program, "driver.py") == 0 ? "/usr/bin/python3" : "node";
        char script[300];
        FILE *e = freopen(err_path, "w", stderr);

        if (!e || !freopen("/dev/null", "w", stdout))
            _exit(126);
        snprintf(script, sizeof(script), "%s/tests/clients/%s",
                 WHARF_SOURCE_DIR, program);
        setenv("PYTHONPATH", WHARF_SOURCE_DIR "/clients/python", 1);
        setenv("PYTHONDONTWRITEBYTECODE", "1", 1);
        execlp(interpreter, interpreter, script, url, "enqueue", "chaos", "ok",
               "--id", id, (char *)NULL);
        _exit(127);
    }
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    {
        FILE *f = fopen(err_path, "r");
        size_t n = f ? fread(err, 1, errlen - 1, f) : 0;

        err[n] = '\0';
        if (f)
            fclose(f);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

Test(tls, the_python_and_node_clients_enqueue_over_mutual_tls)
{
    static const char *const programs[] = {"driver.py", "driver.js"};
    char keys[300], url[128], query[600], err[4096];
    test_host_opts o = {.redis_url = url, .redis_keys = keys};

    test_need_tools((const char *const[]){"node", NULL});
    start_redis(true, 0);
    snprintf(url, sizeof(url), "rediss://127.0.0.1:%d/0", tls_port);
    snprintf(keys, sizeof(keys), "tls_ca = %s\ntls_cert = %s\ntls_key = %s\n",
             ca_crt, in_dir("client.crt"), in_dir("client.key"));
    test_host_up(&host, &redis, &o, rc);
    for (size_t i = 0; i < 2; i++) {
        char id[32];
        int code;

        snprintf(id, sizeof(id), "client-%zu", i);
        snprintf(query, sizeof(query), "tls_ca=%s&tls_cert=%s&tls_key=%s",
                 ca_crt, in_dir("client.crt"), in_dir("client.key"));
        code = run_driver(programs[i], tls_url("localhost", tls_port, query),
                          id, err, sizeof(err));
        cr_assert_eq(code, 0, "%s: %d: %s", programs[i], code, err);
        cr_assert(test_wait_until(task_done, id, TEST_EVENT_MS),
                  "%s's task did not run (see %s)", programs[i], host.log);

        /* A CA that did not sign the server's certificate: 78, saying so. */
        snprintf(query, sizeof(query), "tls_ca=%s&tls_cert=%s&tls_key=%s",
                 in_dir("other-ca.crt"), in_dir("client.crt"),
                 in_dir("client.key"));
        code = run_driver(programs[i], tls_url("127.0.0.1", tls_port, query),
                          "never", err, sizeof(err));
        cr_assert_eq(code, 78, "%s: %d: %s", programs[i], code, err);
        cr_assert(strstr(err, "TLS: ") != NULL &&
                      strstr(err, "self-signed certificate in certificate "
                                  "chain") != NULL,
                  "%s: %s", programs[i], err);

        /* tls_verify=no: no CA needed. */
        snprintf(id, sizeof(id), "noverify-%zu", i);
        snprintf(query, sizeof(query), "tls_verify=no&tls_cert=%s&tls_key=%s",
                 in_dir("client.crt"), in_dir("client.key"));
        code = run_driver(programs[i], tls_url("127.0.0.1", tls_port, query),
                          id, err, sizeof(err));
        cr_assert_eq(code, 0, "%s: %d: %s", programs[i], code, err);
        cr_assert(test_wait_until(task_done, id, TEST_EVENT_MS),
                  "%s's task did not run (see %s)", programs[i], host.log);

        /* tls_sni: the name sent and checked, whatever the address. */
        snprintf(id, sizeof(id), "sni-%zu", i);
        snprintf(query, sizeof(query),
                 "tls_ca=%s&tls_cert=%s&tls_key=%s&tls_sni=localhost", ca_crt,
                 in_dir("client.crt"), in_dir("client.key"));
        code = run_driver(programs[i], tls_url("127.0.0.1", tls_port, query),
                          id, err, sizeof(err));
        cr_assert_eq(code, 0, "%s: %d: %s", programs[i], code, err);
        cr_assert(test_wait_until(task_done, id, TEST_EVENT_MS),
                  "%s's task did not run (see %s)", programs[i], host.log);
        snprintf(query, sizeof(query),
                 "tls_ca=%s&tls_cert=%s&tls_key=%s&tls_sni=wrong.example",
                 ca_crt, in_dir("client.crt"), in_dir("client.key"));
        code = run_driver(programs[i], tls_url("127.0.0.1", tls_port, query),
                          "never", err, sizeof(err));
        cr_assert_eq(code, 78, "%s: %d: %s", programs[i], code, err);
        cr_assert(strstr(err, "TLS: ") != NULL, "%s: %s", programs[i], err);

        /* TLS on one side only: 78, saying which, as the C client. */
        {
            char plain[128];

            snprintf(plain, sizeof(plain), "redis://127.0.0.1:%d/0", tls_port);
            code = run_driver(programs[i], plain, "never", err, sizeof(err));
            cr_assert_eq(code, 78, "%s: %d: %s", programs[i], code, err);
            cr_assert(strstr(err, "(is this a TLS port? use rediss://)"),
                      "%s: %s", programs[i], err);
        }
        code = run_driver(programs[i],
                          tls_url("127.0.0.1", redis.port, ca_query()), "never",
                          err, sizeof(err));
        cr_assert_eq(code, 78, "%s: %d: %s", programs[i], code, err);
        cr_assert(strstr(err, "(is this port plain Redis? use redis://)"),
                  "%s: %s", programs[i], err);
    }
    cr_assert_eq(test_host_done(&host, "never"), 0);
}

/* ---- a Sentinel set over TLS, its sentinels behind a password ---- */

#define SENTINEL_PASSWORD "Sent1nelPW"

/* A primary (TLS, replication over TLS) and its replica, each also
 * listening plain for the test's own connection. */
static void start_tls_pair(void)
{
    static char primary_tls[16], replica_tls[16];
    static const char *primary_args[16], *replica_args[16];
    int n = 0, m = 0;

    tls_port = test_free_port();
    snprintf(primary_tls, sizeof(primary_tls), "%d", tls_port);
    primary_args[n++] = "--tls-port";
    primary_args[n++] = primary_tls;
    replica_args[m++] = "--tls-port";
    replica_args[m++] = replica_tls;
    snprintf(replica_tls, sizeof(replica_tls), "%d", test_free_port());
    for (int k = 0; k < 2; k++) {
        const char **a = k ? replica_args : primary_args;
        int *i = k ? &m : &n;

        a[(*i)++] = "--tls-cert-file";
        a[(*i)++] = server_crt;
        a[(*i)++] = "--tls-key-file";
        a[(*i)++] = server_key;
        a[(*i)++] = "--tls-ca-cert-file";
        a[(*i)++] = ca_crt;
        a[(*i)++] = "--tls-replication";
        a[(*i)++] = "yes";
        a[(*i)++] = "--tls-auth-clients";
        a[(*i)++] = "no";
    }
    replica_args[m++] = "--replicaof";
    replica_args[m++] = "127.0.0.1";
    replica_args[m++] = primary_tls;
    primary_args[n] = NULL;
    replica_args[m] = NULL;
    test_redis_start_with(&redis, NULL, primary_args);
    rc = test_redis_connect(&redis);
    test_redis_start_with(&replica, NULL, replica_args);
}

/* A plain connection to sentinel i, authenticated. */
static redisContext *sentinel_connect(int i)
{
    redisContext *c = redisConnect("127.0.0.1", sentinel_port[i]);
    redisReply *r;

    if (!c || c->err) {
        redisFree(c);
        return NULL;
    }
    r = redisCommand(c, "AUTH %s", SENTINEL_PASSWORD);
    if (!r || r->type == REDIS_REPLY_ERROR) {
        freeReplyObject(r);
        redisFree(c);
        return NULL;
    }
    freeReplyObject(r);
    return c;
}

/* A field of SENTINEL MASTER wharf on sentinel i, as a number; -1. */
static long long sentinel_field(int i, const char *name)
{
    redisContext *c = sentinel_connect(i);
    redisReply *r = c ? redisCommand(c, "SENTINEL MASTER wharf") : NULL;
    long long v = -1;

    for (size_t k = 0; r && r->type == REDIS_REPLY_ARRAY && k + 1 < r->elements;
         k += 2)
        if (strcmp(r->element[k]->str, name) == 0)
            v = strtoll(r->element[k + 1]->str, NULL, 10);
    freeReplyObject(r);
    redisFree(c);
    return v;
}

static bool sentinels_see_the_set(void *unused)
{
    (void)unused;
    for (int i = 0; i < 3; i++)
        if (sentinel_field(i, "num-slaves") < 1 ||
            sentinel_field(i, "num-other-sentinels") != 2)
            return false;
    return true;
}

/* Three sentinels over TLS (and plain, for the test), with requirepass,
 * watching the primary's TLS port as "wharf"; waits until each knows the
 * replica and the other two. Writes their TLS URL into url. */
static void start_tls_sentinels(char *url, size_t len)
{
    size_t used;

    for (int i = 0; i < 3; i++) {
        char conf[200];
        FILE *f;

        sentinel_port[i] = test_free_port();
        sentinel_tls_port[i] = test_free_port();
        snprintf(conf, sizeof(conf), "%s/sentinel-%d.conf", dir, i);
        f = fopen(conf, "w");
        cr_assert(f != NULL);
        fprintf(f,
                "port %d\nbind 127.0.0.1\ndaemonize no\ndir %s\n"
                "logfile %s/sentinel-%d.log\n"
                "tls-port %d\ntls-cert-file %s\ntls-key-file %s\n"
                "tls-ca-cert-file %s\ntls-auth-clients no\n"
                "tls-replication yes\n"
                "requirepass " SENTINEL_PASSWORD "\n"
                "sentinel sentinel-pass " SENTINEL_PASSWORD "\n"
                "sentinel monitor wharf 127.0.0.1 %d 2\n"
                "sentinel down-after-milliseconds wharf 2000\n"
                "sentinel failover-timeout wharf 60000\n",
                sentinel_port[i], dir, dir, i, sentinel_tls_port[i], server_crt,
                server_key, ca_crt, tls_port);
        cr_assert_eq(fclose(f), 0);
        sentinel_pid[i] = fork();
        cr_assert(sentinel_pid[i] >= 0);
        if (sentinel_pid[i] == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            execlp("redis-sentinel", "redis-sentinel", conf, (char *)NULL);
            _exit(127);
        }
    }
    cr_assert(test_wait_until(sentinels_see_the_set, NULL, TEST_EVENT_MS),
              "the sentinels never saw the set (see %s)", dir);
    used = (size_t)snprintf(url, len, "rediss+sentinel://");
    for (int i = 0; i < 3; i++)
        used += (size_t)snprintf(url + used, len - used, "%s127.0.0.1:%d",
                                 i ? "," : "", sentinel_tls_port[i]);
    snprintf(url + used, len - used, "/wharf/0");
}

static int sentinel_master_port(void)
{
    redisContext *c = sentinel_connect(0);
    redisReply *r =
        c ? redisCommand(c, "SENTINEL get-master-addr-by-name wharf") : NULL;
    int port = -1;

    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2)
        port = atoi(r->element[1]->str);
    freeReplyObject(r);
    redisFree(c);
    return port;
}

static int old_master_port;

static bool promoted(void *unused)
{
    int port;

    (void)unused;
    port = sentinel_master_port();
    return port > 0 && port != old_master_port;
}

Test(tls, a_tls_sentinel_failover_with_sentinel_authentication)
{
    char url[512], keys[512], cli_url[1024];
    test_host_opts o = {.redis_url = url, .redis_keys = keys};
    const test_cli_run *cli;
    redisContext *after;

    start_tls_pair();
    start_tls_sentinels(url, sizeof(url));
    snprintf(keys, sizeof(keys),
             "tls_ca = %s\nsentinel_password = " SENTINEL_PASSWORD "\n",
             ca_crt);

    /* Without the sentinels' password: refused, one line, 78. */
    snprintf(cli_url, sizeof(cli_url), "%s?tls_ca=%s", url, ca_crt);
    cli = test_cli(cli_url, dir, (const char *const[]){"stats", NULL});
    cr_assert_eq(cli->status, 78, "%d: %s", cli->status, cli->err);
    cr_assert(strstr(cli->err, "the sentinel wants a password: set "
                               "sentinel_password") != NULL,
              "%s", cli->err);
    snprintf(cli_url, sizeof(cli_url), "%s?tls_ca=%s&sentinel_password=wrong",
             url, ca_crt);
    cli = test_cli(cli_url, dir, (const char *const[]){"stats", NULL});
    cr_assert_eq(cli->status, 78, "%d: %s", cli->status, cli->err);
    cr_assert(strstr(cli->err, "refused sentinel_user / sentinel_password") !=
                  NULL,
              "%s", cli->err);

    test_host_up(&host, &redis, &o, rc);
    snprintf(cli_url, sizeof(cli_url),
             "%s?tls_ca=%s&sentinel_password=" SENTINEL_PASSWORD, url, ca_crt);
    cli = test_cli(cli_url, dir,
                   (const char *const[]){"enqueue", "chaos", "ok", "--id",
                                         "before", NULL});
    cr_assert_eq(cli->status, 0, "%s", cli->err);
    cr_assert(test_wait_until(task_done, "before", TEST_EVENT_MS),
              "the task did not run (see %s)", host.log);

    /* The master dies; the sentinels promote the replica, over TLS. */
    old_master_port = sentinel_master_port();
    cr_assert_eq(old_master_port, tls_port);
    redisFree(rc);
    rc = NULL;
    test_redis_stop(&redis);
    cr_assert(test_wait_until(promoted, NULL, TEST_EVENT_MS),
              "no failover (see %s)", dir);
    after = test_redis_connect(&replica);
    test_add_entry(after, "chaos", "after", "ok");
    cr_assert(test_wait_until(task_done, "after", TEST_EVENT_MS),
              "the host did not follow the failover (see %s)", host.log);
    cr_assert_eq(test_host_done(&host, "before"), 1);
    /* The Python and Node clients find the new master through the same
     * sentinels, over TLS, with their password. */
    {
        static const char *const programs[] = {"driver.py", "driver.js"};
        char err[4096];

        for (size_t i = 0; i < 2; i++) {
            char id[32];
            int code;

            snprintf(id, sizeof(id), "sentinel-client-%zu", i);
            code = run_driver(programs[i], cli_url, id, err, sizeof(err));
            cr_assert_eq(code, 0, "%s: %d: %s", programs[i], code, err);
            cr_assert(test_wait_until(task_done, id, TEST_EVENT_MS),
                      "%s's task did not run (see %s)", programs[i], host.log);
        }
    }
    cli = test_cli(cli_url, dir, (const char *const[]){"stats", NULL});
    cr_assert_eq(cli->status, 0, "%s", cli->err);
    cr_assert(strstr(cli->err, SENTINEL_PASSWORD) == NULL, "%s", cli->err);
    redisFree(after);
    cr_assert_eq(test_host_stop(&host), 0);
    cr_assert_not(test_host_log_has(&host, SENTINEL_PASSWORD, NULL), "see %s",
                  host.log);
}

/* ---- a Redis Cluster over TLS ---- */

static bool cluster_ok(void *unused)
{
    (void)unused;
    for (int i = 0; i < 3; i++) {
        redisContext *c = test_redis_connect(&shard[i]);
        redisReply *r = redisCommand(c, "CLUSTER INFO");
        bool ok = r && r->type == REDIS_REPLY_STRING &&
                  strstr(r->str, "cluster_state:ok") != NULL;

        freeReplyObject(r);
        redisFree(c);
        if (!ok)
            return false;
    }
    return true;
}

static bool schedule_fired(void *unused)
{
    (void)unused;
    return test_host_log_has(&host, "schedule fired", "sched:beat:", NULL);
}

/* Tasks, and a schedule's ticks (its last tick in the type's slot), on a
 * cluster over TLS. */
Test(tls, a_cluster_over_tls_serves_tasks)
{
    static char ports[3][16];
    char url[512], keys[300], cmd[2048], cli_url[1024];
    test_host_opts o = {.redis_url = url,
                        .redis_keys = keys,
                        .log_level = "debug",
                        .extra = "[schedule.beat]\ntype = chaos\n"
                                 "every = 1s\npayload = ok\n"};
    const test_cli_run *cli;
    size_t used;

    for (int i = 0; i < 3; i++) {
        const char *args[16];
        int n = 0;

        int port;

        /* The cluster bus is 10000 above the TLS port (tls-cluster). */
        do
            port = test_free_port();
        while (port > 55535);
        snprintf(ports[i], sizeof(ports[i]), "%d", port);
        args[n++] = "--cluster-enabled";
        args[n++] = "yes";
        args[n++] = "--tls-port";
        args[n++] = ports[i];
        args[n++] = "--tls-cert-file";
        args[n++] = server_crt;
        args[n++] = "--tls-key-file";
        args[n++] = server_key;
        args[n++] = "--tls-ca-cert-file";
        args[n++] = ca_crt;
        args[n++] = "--tls-cluster";
        args[n++] = "yes";
        args[n++] = "--tls-auth-clients";
        args[n++] = "no";
        args[n] = NULL;
        test_redis_start_with(&shard[i], NULL, args);
    }
    snprintf(cmd, sizeof(cmd),
             "redis-cli --tls --cacert '%s' --cluster create 127.0.0.1:%s "
             "127.0.0.1:%s 127.0.0.1:%s --cluster-yes > '%s/create.log' 2>&1",
             ca_crt, ports[0], ports[1], ports[2], dir);
    cr_assert_eq(system(cmd), 0, "see %s/create.log", dir);
    cr_assert(test_wait_until(cluster_ok, NULL, TEST_EVENT_MS),
              "the cluster never came up");
    used = (size_t)snprintf(url, sizeof(url), "rediss+cluster://");
    for (int i = 0; i < 3; i++)
        used += (size_t)snprintf(url + used, sizeof(url) - used,
                                 "%s127.0.0.1:%s", i ? "," : "", ports[i]);
    snprintf(keys, sizeof(keys), "tls_ca = %s\n", ca_crt);
    test_host_manifest_opts(&host, &redis, &o);
    test_host_launch(&host, NULL);
    snprintf(cli_url, sizeof(cli_url), "%s?tls_ca=%s", url, ca_crt);
    for (int i = 0; i < 5; i++) {
        char id[16];

        snprintf(id, sizeof(id), "cl-%d", i);
        cli = test_cli(
            cli_url, dir,
            (const char *const[]){"enqueue", "chaos", "ok", "--id", id, NULL});
        cr_assert_eq(cli->status, 0, "%s", cli->err);
        cr_assert(test_wait_until(task_done, id, TEST_EVENT_MS),
                  "the task did not run (see %s)", host.log);
    }
    cli = test_cli(cli_url, dir, (const char *const[]){"stats", NULL});
    cr_assert_eq(cli->status, 0, "%s", cli->err);
    cr_assert(strstr(cli->out, "chaos") != NULL, "%s", cli->out);
    cr_assert(test_wait_until(schedule_fired, NULL, TEST_EVENT_MS),
              "no tick fired (see %s)", host.log);
    cli = test_cli(cli_url, dir,
                   (const char *const[]){"--config", host.manifest, "schedules",
                                         "--json", NULL});
    cr_assert_eq(cli->status, 0, "%s", cli->err);
    cr_assert(strstr(cli->out, "\"last_tick\": 0,") == NULL,
              "no last tick read from the cluster: %s", cli->out);
}

/* For a_redis_restart_over_tls_loses_and_repeats_nothing. */
#define RESTART_TASKS 2000

static bool quarter_done(void *unused)
{
    (void)unused;
    return test_redis_int(rc, "XLEN wharf:{chaos}:stream") <
           RESTART_TASKS * 3 / 4;
}

static bool outage_seen(void *unused)
{
    (void)unused;
    return test_host_log_has(&host, "redis connection lost", NULL) ||
           test_host_log_has(&host, "redis unreachable", NULL);
}

static long long results_now(void)
{
    return test_redis_keys(rc, "wharf:{chaos}:result:*");
}

static bool all_results(void *unused)
{
    (void)unused;
    return results_now() == RESTART_TASKS;
}

Test(tls, a_redis_restart_over_tls_loses_and_repeats_nothing)
{
    char keys[300], url[128], line[64];
    /* As in test_supervisor: the outage must end well within lock_ttl. */
    test_host_opts o = {.redis_url = url,
                        .redis_keys = keys,
                        .extra = "[defaults]\nlock_ttl = 10s\n"};
    static unsigned char seen[RESTART_TASKS];
    int lines = 0, twice = 0;
    FILE *f;

    start_redis(false, 1);
    snprintf(url, sizeof(url), "rediss://127.0.0.1:%d/0", tls_port);
    snprintf(keys, sizeof(keys), "tls_ca = %s\n", ca_crt);
    test_host_up(&host, &redis, &o, rc);
    for (int i = 0; i < RESTART_TASKS; i++)
        redisAppendCommand(rc,
                           "XADD wharf:{chaos}:stream * id r-%d type chaos "
                           "payload ok attempt 1 enqueued_at 1 trace "
                           "00-0af7651916cd43dd8448eb211c80319c-"
                           "b7ad6b7169203331-01",
                           i);
    for (int i = 0; i < RESTART_TASKS; i++) {
        redisReply *r;
        cr_assert_eq(redisGetReply(rc, (void **)&r), REDIS_OK);
        freeReplyObject(r);
    }
    cr_assert(test_wait_until(quarter_done, NULL, TEST_EVENT_MS),
              "no progress before the outage; see %s", host.log);
    redisFree(rc);
    rc = NULL;
    test_redis_stop(&redis);
    cr_assert(test_wait_until(outage_seen, NULL, TEST_EVENT_MS),
              "the outage was not seen; see %s", host.log);
    test_redis_restart(&redis);
    rc = test_redis_connect(&redis);
    cr_assert(test_wait_until(all_results, NULL, TEST_EVENT_MS),
              "only %lld of %d results", results_now(), RESTART_TASKS);
    f = fopen(host.done, "r");
    cr_assert(f != NULL);
    while (fgets(line, sizeof(line), f)) {
        int k = atoi(line + 2);
        lines++;
        if (k >= 0 && k < RESTART_TASKS && seen[k]++)
            twice++;
    }
    fclose(f);
    cr_assert_eq(twice, 0, "%d tasks ran twice", twice);
    cr_assert_eq(lines, RESTART_TASKS);
}

/* --check: the TLS keys of [redis]. */
Test(tls, the_manifest_tls_keys_are_checked)
{
    static const struct {
        const char *body, *want;
    } cases[] = {
        {"url = redis://127.0.0.1/0\ntls_ca = ca.crt\n",
         ":3: tls_ca needs a TLS url (rediss://"},
        {"url = rediss://127.0.0.1/0?tls_sni=a\ntls_sni = b\n",
         ":3: tls_sni is in url too: give it once"},
        {"url = rediss://127.0.0.1/0\ntls_ca = missing.crt\n",
         ":3: cannot read tls_ca '"},
        {"url = rediss://127.0.0.1/0\ntls_verify = perhaps\n",
         ":3: bad value 'perhaps' for tls_verify"},
        {"url = rediss://127.0.0.1/0\ntls_key = ca.crt\n",
         ":3: bad value for tls_key: tls_key needs tls_cert"},
        {"url = rediss://127.0.0.1/0\nsentinel_password = x\n",
         ":3: sentinel_password needs a Sentinel url (redis+sentinel:// or "
         "rediss+sentinel://)"},
        {"url = redis+sentinel://s/m?sentinel_password=a\n"
         "sentinel_password = b\n",
         ":3: sentinel_password is in url too: give it once"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char manifest[200], cmd[600], out[2048];
        size_t n;
        FILE *f;
        int status;

        snprintf(manifest, sizeof(manifest), "%s/m%zu.ini", dir, i);
        f = fopen(manifest, "w");
        cr_assert(f && fprintf(f, "[redis]\n%s", cases[i].body) > 0 &&
                  fclose(f) == 0);
        snprintf(cmd, sizeof(cmd), "'%s' --config '%s' --check 2>&1",
                 WHARFD_PATH, manifest);
        f = popen(cmd, "r");
        cr_assert(f != NULL);
        n = fread(out, 1, sizeof(out) - 1, f);
        out[n] = '\0';
        status = pclose(f);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 78, "%s: %s",
                  cases[i].body, out);
        cr_assert(strstr(out, cases[i].want) != NULL, "%s: %s", cases[i].body,
                  out);
    }
}
