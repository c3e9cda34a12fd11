/* The one statement of the wire protocol: each sdk/lua script's header,
 * read by the build into lua_scripts.h. Here, without Redis: every
 * header against its script's body (each KEYS[n] and ARGV[n] the body
 * reads is stated and each stated one is read; a body that reads past
 * them states what comes after; every reply word the body returns is
 * stated, and every stated one is in the body), the SHA1s the build
 * computed, the calls the typed functions build, and the Python and Node
 * clients' reading of the same headers against the build's. */
#include <criterion/criterion.h>

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/sha.h>

#include "command.h"
#include "lua_scripts.h"

/* ---- reading a Lua body ---- */

typedef enum { T_NAME, T_NUMBER, T_STRING, T_PUNCT } token_kind;

typedef struct token {
    token_kind kind;
    char text[96]; /* a string's contents; longer ones are cut */
    int line;
} token;

typedef struct body {
    token *t;
    size_t n;
} body;

static void add(body *b, token_kind kind, const char *text, size_t len,
                int line)
{
    token *t;

    b->t = realloc(b->t, (b->n + 1) * sizeof(*b->t));
    cr_assert(b->t != NULL);
    t = &b->t[b->n++];
    t->kind = kind;
    t->line = line;
    if (len >= sizeof(t->text))
        len = sizeof(t->text) - 1;
    memcpy(t->text, text, len);
    t->text[len] = '\0';
}

/* The tokens of a script's text after its header (comments dropped). */
static body tokens_of(const char *src)
{
    body b = {NULL, 0};
    const char *p = src;
    int line = 1;

    while (strncmp(p, "--", 2) == 0) { /* the header */
        p = strchr(p, '\n');
        cr_assert(p != NULL, "a script is more than its header");
        p++;
        line++;
    }
    while (*p) {
        if (*p == '\n') {
            line++;
            p++;
        } else if (isspace((unsigned char)*p)) {
            p++;
        } else if (strncmp(p, "--", 2) == 0) {
            while (*p && *p != '\n')
                p++;
        } else if (*p == '\'' || *p == '"') {
            char quote = *p++, text[96];
            size_t n = 0;
            while (*p && *p != quote) {
                if (*p == '\\' && p[1])
                    p++;
                if (n + 1 < sizeof(text))
                    text[n++] = *p;
                p++;
            }
            cr_assert(*p == quote, "line %d: an unclosed string", line);
            p++;
            add(&b, T_STRING, text, n, line);
        } else if (isalpha((unsigned char)*p) || *p == '_') {
            const char *s = p;
            while (isalnum((unsigned char)*p) || *p == '_')
                p++;
            add(&b, T_NAME, s, (size_t)(p - s), line);
        } else if (isdigit((unsigned char)*p)) {
            const char *s = p;
            while (isalnum((unsigned char)*p) || *p == '.')
                p++;
            add(&b, T_NUMBER, s, (size_t)(p - s), line);
        } else {
            add(&b, T_PUNCT, p, 1, line);
            p++;
        }
    }
    return b;
}

static bool is(const body *b, size_t i, token_kind kind, const char *text)
{
    return i < b->n && b->t[i].kind == kind &&
           (!text || strcmp(b->t[i].text, text) == 0);
}

/* What a body does with KEYS or ARGV: the literal indices it reads, and
 * whether it reaches past them (a computed index, #, unpack, ipairs). */
typedef struct table_use {
    bool literal[64];
    bool computed;
} table_use;

typedef struct findings {
    table_use keys, argv;
    char words[32][96]; /* the reply words it returns */
    size_t n_words;
    char strings[256][96]; /* every string it holds */
    size_t n_strings;
} findings;

/* Names local'd to KEYS or ARGV ("local keys, argv = KEYS, ARGV") and to
 * redis.call / redis.pcall; the tokens of those statements are marked
 * in skip. */
typedef struct names {
    char keys[4][96], argv[4][96], calls[4][96];
    size_t n_keys, n_argv, n_calls;
} names;

static void find_aliases(const body *b, names *a, bool *skip)
{
    snprintf(a->keys[a->n_keys++], 96, "KEYS");
    snprintf(a->argv[a->n_argv++], 96, "ARGV");
    for (size_t i = 0; i < b->n; i++) {
        char lhs[8][96];
        size_t n_lhs = 0, j = i + 1, v = 0;
        if (!is(b, i, T_NAME, "local"))
            continue;
        while (is(b, j, T_NAME, NULL) && n_lhs < 8) {
            snprintf(lhs[n_lhs++], 96, "%s", b->t[j].text);
            skip[j] = true; /* a name declared, not a use */
            j++;
            if (!is(b, j, T_PUNCT, ","))
                break;
            j++;
        }
        if (!is(b, j, T_PUNCT, "="))
            continue;
        /* The values on the line of '=': split at top-level commas. */
        for (size_t k = j + 1, start = j + 1;
             k <= b->n && v < n_lhs; k++) {
            bool end = k == b->n || b->t[k].line != b->t[j].line ||
                       is(b, k, T_PUNCT, ",");
            if (!end)
                continue;
            if (k - start == 1 && is(b, start, T_NAME, "KEYS")) {
                snprintf(a->keys[a->n_keys++], 96, "%s", lhs[v]);
                skip[start] = true;
            } else if (k - start == 1 && is(b, start, T_NAME, "ARGV")) {
                snprintf(a->argv[a->n_argv++], 96, "%s", lhs[v]);
                skip[start] = true;
            } else if (k - start == 3 && is(b, start, T_NAME, "redis") &&
                       (is(b, start + 2, T_NAME, "call") ||
                        is(b, start + 2, T_NAME, "pcall"))) {
                snprintf(a->calls[a->n_calls++], 96, "%s", lhs[v]);
            }
            v++;
            start = k + 1;
            if (k == b->n || b->t[k].line != b->t[j].line)
                break;
        }
    }
}

static bool named(char (*list)[96], size_t n, const char *text)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i], text) == 0)
            return true;
    return false;
}

static void note_word(findings *f, const char *word)
{
    for (size_t i = 0; i < f->n_words; i++)
        if (strcmp(f->words[i], word) == 0)
            return;
    cr_assert(f->n_words < 32);
    snprintf(f->words[f->n_words++], 96, "%s", word);
}

/* A word as a header states one: [A-Za-z][A-Za-z_]*. */
static bool word_shaped(const char *s)
{
    if (!isalpha((unsigned char)*s))
        return false;
    for (; *s; s++)
        if (!isalpha((unsigned char)*s) && *s != '_')
            return false;
    return true;
}

static bool upper_word(const char *s)
{
    if (strlen(s) < 2 || !isupper((unsigned char)s[0]))
        return false;
    for (; *s; s++)
        if (!isupper((unsigned char)*s) && *s != '_')
            return false;
    return true;
}

/* Reads a script's body. A reply word is a string in capitals outside
 * the arguments of a Redis command, or a word-shaped string that leads a
 * table ({'word', ...}) or is put in element 1 of one (t[1] = 'word').
 * A name after a single '.' is a field (p.err), not a table. */
static findings read_body(const char *src)
{
    body b = tokens_of(src);
    findings f;
    names a = {.n_keys = 0};
    bool *skip = calloc(b.n + 1, sizeof(bool));
    int depth = 0, call_depth = -1; /* depth inside a Redis call's () */

    memset(&f, 0, sizeof(f));
    cr_assert(skip != NULL);
    find_aliases(&b, &a, skip);
    for (size_t i = 0; i < b.n; i++) {
        const token *t = &b.t[i];
        if (is(&b, i, T_PUNCT, "(")) {
            bool redis_call =
                ((is(&b, i - 1, T_NAME, "call") ||
                  is(&b, i - 1, T_NAME, "pcall")) &&
                 is(&b, i - 2, T_PUNCT, ".") &&
                 is(&b, i - 3, T_NAME, "redis")) ||
                (is(&b, i - 1, T_NAME, NULL) &&
                 named(a.calls, a.n_calls, b.t[i - 1].text));
            if (redis_call && call_depth < 0)
                call_depth = depth;
            depth++;
        } else if (is(&b, i, T_PUNCT, ")")) {
            depth--;
            if (depth == call_depth)
                call_depth = -1;
        } else if (t->kind == T_STRING) {
            if (f.n_strings < 256)
                snprintf(f.strings[f.n_strings++], 96, "%s", t->text);
            if ((upper_word(t->text) && call_depth < 0) ||
                (word_shaped(t->text) &&
                 (is(&b, i - 1, T_PUNCT, "{") ||
                  (is(&b, i - 1, T_PUNCT, "=") && is(&b, i - 2, T_PUNCT, "]") &&
                   is(&b, i - 3, T_NUMBER, "1") &&
                   is(&b, i - 4, T_PUNCT, "[")))))
                note_word(&f, t->text);
        } else if (t->kind == T_NAME && !skip[i] &&
                   !(is(&b, i - 1, T_PUNCT, ".") &&
                     !is(&b, i - 2, T_PUNCT, "."))) {
            table_use *u = named(a.keys, a.n_keys, t->text)   ? &f.keys
                           : named(a.argv, a.n_argv, t->text) ? &f.argv
                                                               : NULL;
            if (!u)
                continue;
            if (is(&b, i + 1, T_PUNCT, "[") && is(&b, i + 2, T_NUMBER, NULL) &&
                is(&b, i + 3, T_PUNCT, "]")) {
                int n = atoi(b.t[i + 2].text);
                cr_assert(n > 0 && n < 64, "line %d: index %d", t->line, n);
                u->literal[n] = true;
            } else {
                /* t[expr], #t, unpack(t, ...), ipairs(t) */
                u->computed = true;
            }
        }
    }
    free(skip);
    free(b.t);
    return f;
}

/* Empty when the spec states what the body reads and answers; else what
 * it does not. */
static void check(const char *name, const findings *f, size_t n_keys,
                  bool more_keys, size_t n_args, bool more_args,
                  const char *const *words, size_t n_words, char *out,
                  size_t len)
{
    const struct {
        const char *what;
        const table_use *use;
        size_t n;
        bool more;
    } tables[] = {{"KEYS", &f->keys, n_keys, more_keys},
                  {"ARGV", &f->argv, n_args, more_args}};
    size_t used = 0;

    out[0] = '\0';
#define SAY(...)                                                               \
    do {                                                                       \
        if (used < len)                                                        \
            used += (size_t)snprintf(out + used, len - used, __VA_ARGS__);     \
    } while (0)
    for (size_t k = 0; k < 2; k++) {
        for (size_t i = 1; i < 64; i++) {
            if (tables[k].use->literal[i] && i > tables[k].n)
                SAY("%s.lua reads %s[%zu], not in its header; ", name,
                    tables[k].what, i);
            if (!tables[k].use->literal[i] && i <= tables[k].n)
                SAY("%s.lua states %s %zu but never reads %s[%zu]; ", name,
                    tables[k].what, i, tables[k].what, i);
        }
        if (tables[k].use->computed && !tables[k].more)
            SAY("%s.lua reads %s past its numbered ones, but its header "
                "states none (then or each); ",
                name, tables[k].what);
        if (!tables[k].use->computed && tables[k].more)
            SAY("%s.lua's header states %s after the numbered ones, but "
                "the script never reads them; ",
                name, tables[k].what);
    }
    for (size_t i = 0; i < f->n_words; i++) {
        bool stated = false;
        for (size_t w = 0; w < n_words; w++)
            stated = stated || strcmp(f->words[i], words[w]) == 0;
        if (!stated)
            SAY("%s.lua answers '%s', not a word of its header; ", name,
                f->words[i]);
    }
    for (size_t w = 0; w < n_words; w++) {
        bool there = false;
        for (size_t i = 0; i < f->n_strings; i++)
            there = there || strcmp(f->strings[i], words[w]) == 0;
        if (!there)
            SAY("%s.lua's header states the word %s, which it never "
                "answers; ",
                name, words[w]);
    }
#undef SAY
}

static void check_spec(const script_spec *s, char *out, size_t len)
{
    findings f = read_body(s->script->source);

    check(s->script->name, &f, s->n_keys,
          s->n_then_keys > 0 || s->n_each_keys > 0, s->n_args,
          s->n_then_args > 0, s->words, s->n_words, out, len);
}

Test(protocol, every_header_states_what_its_body_reads_and_answers)
{
    char why[2048];

    cr_assert_eq(SCRIPT_SPEC_COUNT, 25, "a script was added or removed: "
                                        "it is checked here like the rest");
    for (size_t i = 0; i < SCRIPT_SPEC_COUNT; i++) {
        check_spec(script_specs[i], why, sizeof(why));
        cr_expect(why[0] == '\0', "%s", why);
    }
}

/* The checks above catch each kind of drift (a body checked against a
 * header that says otherwise). */
Test(protocol, the_body_check_catches_a_header_that_drifted)
{
    static const char src[] =
        "-- t: a test.\n"
        "local call, keys = redis.call, KEYS\n"
        "if call('EXISTS', keys[1], 'NX') == 1 then return {'GONE'} end\n"
        "for i = 2, #ARGV do call('DEL', KEYS[2], ARGV[i]) end\n"
        "return 'LEFT'\n";
    static const char *const words[] = {"GONE", "LEFT", "STALE"};
    findings f = read_body(src);
    char why[2048];

    cr_assert(f.keys.literal[1] && f.keys.literal[2] && !f.keys.computed);
    cr_assert(!f.argv.literal[1] && f.argv.computed);
    cr_assert_eq(f.n_words, 2, "EXISTS and NX are Redis's words, not ours");
    check("t", &f, 2, false, 0, true, words, 2, why, sizeof(why));
    cr_assert_str_empty(why);
    check("t", &f, 1, false, 0, true, words, 2, why, sizeof(why));
    cr_assert(strstr(why, "reads KEYS[2], not in its header"), "%s", why);
    check("t", &f, 3, false, 0, true, words, 2, why, sizeof(why));
    cr_assert(strstr(why, "never reads KEYS[3]"), "%s", why);
    check("t", &f, 2, true, 0, false, words, 2, why, sizeof(why));
    cr_assert(strstr(why, "states KEYS after"), "%s", why);
    cr_assert(strstr(why, "reads ARGV past"), "%s", why);
    check("t", &f, 2, false, 0, true, words, 1, why, sizeof(why));
    cr_assert(strstr(why, "answers 'LEFT'"), "%s", why);
    check("t", &f, 2, false, 0, true, words, 3, why, sizeof(why));
    cr_assert(strstr(why, "the word STALE"), "%s", why);
}

Test(protocol, each_sha1_is_the_one_of_its_text)
{
    for (size_t i = 0; i < SCRIPT_SPEC_COUNT; i++) {
        const script *s = script_specs[i]->script;
        unsigned char digest[SHA_DIGEST_LENGTH];
        char hex[41];
        SHA1((const unsigned char *)s->source, strlen(s->source), digest);
        for (int k = 0; k < SHA_DIGEST_LENGTH; k++)
            snprintf(hex + 2 * k, 3, "%02x", digest[k]);
        cr_expect_str_eq(s->sha, hex, "%s", s->name);
        cr_expect_eq(script_spec_named(s->name), script_specs[i]);
    }
    cr_assert_null(script_spec_named("nothing"));
}

/* ---- the typed functions ---- */

/* The arguments of the RESP array cmd encodes. */
typedef struct wire_args {
    char v[32][128];
    size_t n;
} wire_args;

static wire_args decode(command *cmd)
{
    wire_args w = {.n = 0};
    const char *p;
    long count;

    cr_assert_eq(command_encode(cmd), 0);
    p = cmd->wire;
    cr_assert(*p == '*');
    count = strtol(p + 1, (char **)&p, 10);
    p += 2;
    cr_assert(count > 0 && count <= 32);
    for (long i = 0; i < count; i++) {
        long len;
        cr_assert(*p == '$');
        len = strtol(p + 1, (char **)&p, 10);
        p += 2;
        cr_assert(len >= 0 && len < 128);
        memcpy(w.v[w.n], p, (size_t)len);
        w.v[w.n++][len] = '\0';
        p += len + 2;
    }
    return w;
}

Test(protocol, a_typed_call_is_the_header_in_order)
{
    command cmd;
    wire_args w;

    command_init(&cmd);
    cr_assert_eq(script_cancel_call(&cmd, "w", "t", "a", "wharf", "1"), 0);
    w = decode(&cmd);
    /* The order of the header: the keys of held tasks (workflows) after
     * the others, and not result:a, which the script reads unnamed (a
     * producer may only read results). */
    static const char *const want[] = {
        "EVALSHA",        "(sha)",          "13",
        "w:{t}:policy",   "w:{t}:entries",  "w:{t}:stream",
        "w:{t}:delayed",  "w:{t}:task:a",   "w:{t}:seen:a",
        "w:{t}:cancel:a", "w:{t}:dead",     "w:{t}:held",
        "w:{t}:wait:a",   "w:{t}:parents:a", "w:{t}:children:a",
        "w:{t}:outbox",   "a",              "wharf",
        "1"};
    cr_assert_eq(w.n, sizeof(want) / sizeof(want[0]));
    cr_assert_str_eq(w.v[1], script_cancel.sha);
    for (size_t i = 0; i < w.n; i++)
        if (i != 1)
            cr_expect_str_eq(w.v[i], want[i], "argument %zu", i);

    /* A NULL argument ends them: release's mode is optional. */
    cr_assert_eq(script_release_call(&cmd, "w:{t}:lock:a", "12", NULL), 0);
    w = decode(&cmd);
    cr_assert_eq(w.n, 5);
    cr_assert_str_eq(w.v[2], "1");
    cr_assert_str_eq(w.v[3], "w:{t}:lock:a");
    cr_assert_str_eq(w.v[4], "12");

    /* Every script's numbered keys, made as its spec says. */
    for (size_t i = 0; i < SCRIPT_SPEC_COUNT; i++) {
        const script_spec *s = script_specs[i];
        bool whole = false;
        for (size_t k = 0; k < s->n_keys; k++)
            whole = whole || s->keys[k].form == SCRIPT_KEY_WHOLE;
        if (whole) {
            cr_expect_eq(script_spec_keys(&cmd, s, "w", "t", "a"), -1);
            continue;
        }
        cr_assert_eq(script_spec_keys(&cmd, s, "w", "t", "a"), 0);
        w = decode(&cmd);
        cr_assert_eq(w.n, 3 + s->n_keys, "%s", s->script->name);
        for (size_t k = 0; k < s->n_keys; k++) {
            char key[128];
            snprintf(key, sizeof(key), "w:{t}:%s%s", s->keys[k].what,
                     s->keys[k].form == SCRIPT_KEY_OF_TASK ? ":a" : "");
            cr_expect_str_eq(w.v[3 + k], key, "%s key %zu", s->script->name,
                             k + 1);
        }
    }
    /* A key too long for KEY_MAX fails the call rather than leave it out. */
    char id[600];
    memset(id, 'x', sizeof(id) - 1);
    id[sizeof(id) - 1] = '\0';
    cr_assert_eq(script_status_keys(&cmd, "w", "t", id), -1);
    command_free(&cmd);

    cr_assert_eq(script_cancel_word_of("CANCELLING"), SCRIPT_CANCEL_CANCELLING);
    cr_assert_eq(script_cancel_word_of("cancelling"), SCRIPT_CANCEL_NO_WORD);
    cr_assert_eq(script_status_word_of("running"), SCRIPT_STATUS_RUNNING);
}

/* ---- the other clients ---- */

/* One line per script, as the build's table reads: the same text the
 * Python and Node programs below print for their own reading. */
static void describe(char *out, size_t len)
{
    static const char *const forms[] = {"type", "task", "whole", "prose"};
    size_t used = 0;

#define PUT(...)                                                               \
    do {                                                                       \
        if (used < len)                                                        \
            used += (size_t)snprintf(out + used, len - used, __VA_ARGS__);     \
    } while (0)
    for (size_t i = 0; i < SCRIPT_SPEC_COUNT; i++) {
        const script_spec *s = script_specs[i];
        const struct {
            const script_key *k;
            size_t n;
        } keys[] = {{s->keys, s->n_keys},
                    {s->then_keys, s->n_then_keys},
                    {s->each_keys, s->n_each_keys}};
        const struct {
            const char *const *v;
            size_t n;
        } lists[] = {{s->args, s->n_args},
                     {s->then_args, s->n_then_args},
                     {s->words, s->n_words}};
        PUT("%s", s->script->name);
        for (size_t l = 0; l < 3; l++) {
            PUT("|");
            for (size_t k = 0; k < keys[l].n; k++)
                PUT("%s%s/%s/%s", k ? "," : "", keys[l].k[k].what,
                    forms[keys[l].k[k].form], keys[l].k[k].placeholder);
        }
        for (size_t l = 0; l < 3; l++) {
            PUT("|");
            for (size_t k = 0; k < lists[l].n; k++)
                PUT("%s%s", k ? "," : "", lists[l].v[k]);
        }
        PUT("\n");
    }
#undef PUT
}

/* What program prints (its whole stdout). */
static void run(const char *program, char *out, size_t len)
{
    FILE *f = popen(program, "r");
    size_t n;

    cr_assert(f != NULL, "%s", program);
    n = fread(out, 1, len - 1, f);
    out[n] = '\0';
    cr_assert_eq(pclose(f), 0, "%s failed:\n%s", program, out);
}

#define LUA_DIR WHARF_SOURCE_DIR "/sdk/lua"
#define NAMES_OF_SPECS                                                         \
    "begin cancel dead_find dead_purge dead_replay due enqueue figures "     \
    "finish "                                                                 \
    "heartbeat limit_wake lock_release pause promote queue_drop release "    \
    "renew status "                                                           \
    "task_detail trim_dead "                                                  \
    "wf_enqueue wf_group_count wf_group_create wf_notify wf_register"

Test(protocol, python_and_node_read_the_headers_as_the_build_does)
{
    static char want[16384], got[16384];
    static const char python[] =
        "/usr/bin/python3 -c '"
        "import importlib.util, sys\n"
        "u = importlib.util.spec_from_file_location(\"s\", \"" WHARF_SOURCE_DIR
        "/clients/python/wharf/scripts.py\")\n"
        "m = importlib.util.module_from_spec(u); u.loader.exec_module(m)\n"
        "for n in \"" NAMES_OF_SPECS "\".split():\n"
        "    s = m.parse(n, open(\"" LUA_DIR "/\" + n + \".lua\", \"rb\").read())\n"
        "    k = lambda ks: \",\".join(\"%s/%s/%s\" % x for x in ks)\n"
        "    print(\"|\".join([n, k(s.keys), k(s.then_keys), k(s.each_keys),\n"
        "                    \",\".join(s.args), \",\".join(s.then_args),\n"
        "                    \",\".join(s.words)]))\n"
        "'";
    static const char node[] =
        "node -e '"
        "const m = require(\"" WHARF_SOURCE_DIR "/clients/node/scripts.js\");\n"
        "const fs = require(\"fs\");\n"
        "const k = (ks) => ks.map((x) => `${x.what}/${x.form}/${x.placeholder}`).join();\n"
        "for (const n of \"" NAMES_OF_SPECS "\".split(\" \")) {\n"
        "  const s = m.parse(n, fs.readFileSync(`" LUA_DIR "/${n}.lua`));\n"
        "  console.log([n, k(s.keys), k(s.thenKeys), k(s.eachKeys),\n"
        "    s.args.join(), s.thenArgs.join(), s.words.join()].join(\"|\"));\n"
        "}'";

    describe(want, sizeof(want));
    run(python, got, sizeof(got));
    cr_expect_str_eq(got, want, "Python reads the headers otherwise");
    run(node, got, sizeof(got));
    cr_expect_str_eq(got, want, "Node reads the headers otherwise");
}
