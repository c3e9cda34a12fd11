/* The command builder against a private redis-server: arguments of any
 * number and size, borrowed and copied, encoded by hand and understood by
 * Redis; buffers reused from command to command; the Redis Cluster slot of
 * a key as the server computes it, and the debug-build check that a
 * script call's keys share one slot. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "command.h"
#include "redis_server.h"
#include "script.h"
#include "node_scripts.h"

static test_redis redis;
static redisContext *rc;

static void start(void)
{
    node_scripts_check();
    test_redis_up(&redis, 0, &rc);
}

static void stop(void)
{
    test_redis_down(&redis, &rc);
}

TestSuite(command, .init = start, .fini = stop, .timeout = 60);

Test(command, plain_commands_with_binary_and_copied_arguments)
{
    command cmd;
    redisReply *r;
    const char binary[] = {'a', '\0', '\r', '\n', 'b'};

    command_init(&cmd);
    command_reset(&cmd);
    command_push_str(&cmd, "SET");
    command_push_copy(&cmd, "k", 1);
    command_push(&cmd, binary, sizeof(binary));
    r = command_run(&cmd, rc);
    cr_assert(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    r = test_redis_command(rc, "GET k");
    cr_assert_eq(r->len, sizeof(binary));
    cr_assert(memcmp(r->str, binary, sizeof(binary)) == 0);
    freeReplyObject(r);

    /* The buffers are kept: a second command reuses them. */
    command_reset(&cmd);
    command_push_str(&cmd, "INCRBY");
    command_push_str(&cmd, "n");
    command_push_int(&cmd, -42);
    r = command_run(&cmd, rc);
    cr_assert(r && r->type == REDIS_REPLY_INTEGER);
    cr_assert_eq(r->integer, -42);
    freeReplyObject(r);
    command_free(&cmd);
    command_free(&cmd); /* freeing twice is fine */
}

/* A call of 300 tasks of the begin script: 904 keys, beyond every old
 * fixed limit, with copied keys that move as the text buffer grows. */
Test(command, a_script_call_of_three_hundred_tasks)
{
    command cmd;
    redisReply *r;
    char key[64];

    command_init(&cmd);
    command_evalsha(&cmd, script_begin.sha);
    command_push_key(&cmd, "w:{t}:fence", strlen("w:{t}:fence"));
    command_push_key(&cmd, "w:{t}:entries", strlen("w:{t}:entries"));
    command_push_key(&cmd, "w:{t}:paused", strlen("w:{t}:paused"));
    command_push_key(&cmd, "w:{t}:running", strlen("w:{t}:running"));
    for (const char *what = "result"; what;
         what = strcmp(what, "result") == 0   ? "cancel"
                : strcmp(what, "cancel") == 0 ? "lock"
                                              : NULL)
        for (int i = 0; i < 300; i++) {
            int n = snprintf(key, sizeof(key), "w:{t}:%s:%d", what, i);
            command_push_key_copy(&cmd, key, (size_t)n);
        }
    command_push_int(&cmd, 60000);
    command_push_str(&cmd, "0123456789abcdef");
    command_push_int(&cmd, (long long)strlen("w:{t}:result:"));
    command_push_int(&cmd, 0); /* no concurrency_limit */
    command_push_int(&cmd, 0); /* no rate_limit: period, burst unused */
    command_push_int(&cmd, 0);
    command_push_int(&cmd, 1);
    command_push_int(&cmd, 0); /* no limit_key */
    for (int i = 0; i < 300; i++) {
        int n = snprintf(key, sizeof(key), "1-%d", i);
        command_push_copy(&cmd, key, (size_t)n);
    }
    cr_assert_eq(cmd.err, 0);
    cr_assert_eq(cmd.keys, 904);
    r = script_run_command(rc, &script_begin, &cmd);
    cr_assert(r != NULL, "%s", rc->errstr);
    cr_assert_eq(r->type, REDIS_REPLY_ARRAY, "%s",
                 r->type == REDIS_REPLY_ERROR ? r->str : "");
    cr_assert_eq(r->elements, 300);
    cr_assert_str_eq(r->element[299]->str, "300-0123456789abcdef");
    freeReplyObject(r);
    r = test_redis_command(rc, "GET w:{t}:lock:299");
    cr_assert_str_eq(r->str, "300-0123456789abcdef");
    freeReplyObject(r);
    command_free(&cmd);
}

Test(command, a_key_after_a_plain_script_argument_is_refused)
{
    command cmd;

    command_init(&cmd);
    command_evalsha(&cmd, script_begin.sha);
    command_push_key(&cmd, "w:{t}:fence", 11);
    command_push_str(&cmd, "60000");
    cr_assert_eq(command_push_key(&cmd, "w:{t}:x", 7), -1);
    cr_assert_eq(command_encode(&cmd), -1);
    /* Reset clears the error. */
    command_evalsha(&cmd, script_begin.sha);
    cr_assert_eq(cmd.err, 0);
    command_free(&cmd);
}

/* A redis-server in cluster mode (CLUSTER KEYSLOT answers only there;
 * no slot needs to be served for it), on a unix socket in dir so no other
 * test's server can be on its address: its pid, with *c connected. It
 * dies with the test process. */
static pid_t start_cluster_node(char *dir, redisContext **c)
{
    char socket_path[300];
    pid_t pid;

    cr_assert(mkdtemp(dir) != NULL);
    snprintf(socket_path, sizeof(socket_path), "%s/redis.sock", dir);
    pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        execlp("redis-server", "redis-server", "--port", "0", "--unixsocket",
               socket_path, "--save", "", "--appendonly", "no",
               "--cluster-enabled", "yes", "--dir", dir, "--logfile",
               "redis.log", (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 500; i++) {
        *c = redisConnectUnix(socket_path);
        if (*c && !(*c)->err)
            return pid;
        redisFree(*c);
        *c = NULL;
        usleep(10 * 1000);
    }
    cr_assert_fail("redis-server --cluster-enabled yes did not start");
    return -1;
}

/* The slot of each key as CLUSTER KEYSLOT (the server's own CRC16) says,
 * with and without hash tags, and the spec's own test vector. */
Test(command, key_slots_match_the_server)
{
    static const char *const keys[] = {"foo",
                                       "123456789",
                                       "wharf:{orders}:stream",
                                       "{orders}",
                                       "a{}b",
                                       "{}{x}",
                                       "x{y}z{w}",
                                       "{{a}}",
                                       "wharf:{t}:lock:some id",
                                       "no-tag-at-all",
                                       "{",
                                       "}{x}",
                                       "",
                                       NULL};
    char dir[] = "/tmp/wharf-cluster-XXXXXX";
    redisContext *node = NULL;
    pid_t pid;

    /* CRC16("123456789") is 0x31C3 in the spec. */
    cr_assert_eq(command_key_slot("123456789", 9), 0x31C3 % 16384);
    pid = start_cluster_node(dir, &node);
    for (size_t i = 0; keys[i]; i++) {
        redisReply *r = test_redis_command(node, "CLUSTER KEYSLOT %b", keys[i],
                                           strlen(keys[i]));
        cr_assert_eq(r->type, REDIS_REPLY_INTEGER, "%s: %s", keys[i],
                     r->type == REDIS_REPLY_ERROR ? r->str : "");
        cr_assert_eq((long long)command_key_slot(keys[i], strlen(keys[i])),
                     r->integer, "%s", keys[i]);
        freeReplyObject(r);
    }
    redisFree(node);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    for (const char *const *f = (const char *const[]){"nodes.conf", "redis.log",
                                                      "redis.sock", NULL};
         *f; f++) {
        char path[300];
        snprintf(path, sizeof(path), "%s/%s", dir, *f);
        unlink(path);
    }
    rmdir(dir);
}

Test(command, mixed_slots_are_found)
{
    command cmd;

    command_init(&cmd);
    command_evalsha(&cmd, script_release.sha);
    command_push_key(&cmd, "w:{a}:lock:1", 12);
    command_push_key(&cmd, "w:{a}:lock:2", 12);
    cr_assert_eq(command_mixed_slot(&cmd), -1);
    command_push_key(&cmd, "w:{b}:lock:3", 12);
    cr_assert_eq(command_mixed_slot(&cmd), 2);
    command_free(&cmd);
}

#ifndef NDEBUG
/* In a debug build a call with keys in two slots never leaves the
 * builder. */
Test(command, a_mixed_slot_call_aborts_in_a_debug_build, .signal = SIGABRT)
{
    command cmd;

    command_init(&cmd);
    command_evalsha(&cmd, script_release.sha);
    command_push_key(&cmd, "w:{a}:lock:1", 12);
    command_push_key(&cmd, "w:{b}:lock:1", 12);
    command_push_str(&cmd, "1");
    command_encode(&cmd);
}
#endif
