/* Tests of the plugin loader: each fixture plugin under tests/plugins/ is
 * refused for its one reason with a "FILE:LINE: PATH: reason" line; good
 * ones load, route, init and fini; autoload picks up unnamed plugins; the
 * ownership check guards the files. Every test works on private copies of
 * the fixtures in a fresh folder, so the build tree's modes do not matter. */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "context.h"
#include "loader.h"
#include "log.h"

#define TEST_FILE "test.ini"
#define PLUGINS_DIR_LINE 3
#define MAX_SECTIONS 8
#define MAX_EXTRA 4

static char tmpdir[64]; /* short: paths built from it always fit */
static config cfg;
static plugin_section sections[MAX_SECTIONS];
static char section_paths[MAX_SECTIONS][PATH_MAX];
static config_kv extras[MAX_SECTIONS][MAX_EXTRA];
static type_section type_sections[2];
static char err[2048];

#define assert_contains(text, part)                                            \
    cr_assert(strstr((text), (part)) != NULL, "expected \"%s\" in \"%s\"",     \
              (part), (text))

/* Removes the flat test folder (and one level of sub-folders). */
static void remove_tree(const char *dir)
{
    char path[PATH_MAX];
    struct dirent *entry;
    struct stat st;
    DIR *d;

    chmod(dir, 0700);
    d = opendir(dir);
    if (d == NULL)
        return;
    while ((entry = readdir(d)) != NULL) {
        if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, entry->d_name);
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
            remove_tree(path);
        else
            unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

static void setup(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/wharf-test-loader-XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir));
    cr_assert_eq(chmod(tmpdir, 0755), 0);

    memset(&cfg, 0, sizeof cfg);
    memset(sections, 0, sizeof sections);
    cfg.file = TEST_FILE;
    cfg.dir = tmpdir;
    cfg.plugins_dir = tmpdir;
    cfg.plugins_dir_line = PLUGINS_DIR_LINE;
    cfg.autoload = false;
    cfg.insecure_plugins = false;
    cfg.defaults.max_attempts = 5;
    cfg.defaults.max_payload = 1024 * 1024;
    cfg.plugins = sections;
    cfg.n_plugins = 0;
    err[0] = '\0';
    /* Keep plugin log lines out of the test output unless they matter. */
    log_setup(WHARF_LOG_ERROR, LOG_FORMAT_JSON);
}

static void teardown(void)
{
    remove_tree(tmpdir);
}

TestSuite(loader, .init = setup, .fini = teardown);

/* Copies the file `from` to tmpdir/dest (mode 0755); its path goes to out. */
static void copy_file(const char *from, const char *dest, char *out,
                      size_t size)
{
    char buf[8192];
    ssize_t n;
    int in, fd;

    snprintf(out, size, "%s/%s", tmpdir, dest);
    in = open(from, O_RDONLY);
    cr_assert(in >= 0, "open %s: %s", from, strerror(errno));
    fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0755);
    cr_assert(fd >= 0, "create %s: %s", out, strerror(errno));
    while ((n = read(in, buf, sizeof buf)) > 0)
        cr_assert_eq(write(fd, buf, (size_t)n), n);
    close(in);
    close(fd);
    cr_assert_eq(chmod(out, 0755), 0);
}

/* Copies fixture NAME.so into tmpdir as DEST. */
static const char *fixture(const char *name, const char *dest)
{
    static char paths[MAX_SECTIONS * 2][PATH_MAX];
    static size_t next;
    char from[PATH_MAX];
    char *out = paths[next++ % (MAX_SECTIONS * 2)];

    snprintf(from, sizeof from, "%s/%s.so", WHARF_FIXTURE_DIR, name);
    copy_file(from, dest, out, PATH_MAX);
    return out;
}

static void write_file(const char *path, const char *text)
{
    FILE *file = fopen(path, "w");

    cr_assert_not_null(file, "fopen %s", path);
    fputs(text, file);
    fclose(file);
}

/* Adds a [plugin.NAME] section for the file `path`; its path is on `line`
 * and it names `types` (NULL: the descriptor's). */
static plugin_section *add_section(const char *name, const char *path,
                                   char **types, int line)
{
    plugin_section *section = &sections[cfg.n_plugins];

    cr_assert(cfg.n_plugins < MAX_SECTIONS);
    snprintf(section_paths[cfg.n_plugins], PATH_MAX, "%s", path);
    section->name = (char *)name;
    section->path = section_paths[cfg.n_plugins];
    section->types = types;
    section->extra = extras[cfg.n_plugins];
    section->n_extra = 0;
    section->line = line - 1;
    section->path_line = line;
    cfg.n_plugins++;
    return section;
}

static void add_extra(plugin_section *section, const char *key,
                      const char *value)
{
    cr_assert(section->n_extra < MAX_EXTRA);
    section->extra[section->n_extra].key = (char *)key;
    section->extra[section->n_extra].value = (char *)value;
    section->n_extra++;
}

/* Opens, expecting a refusal; returns the message. */
static const char *refusal(void)
{
    loader *ld = NULL;

    cr_assert_eq(loader_open(&cfg, &ld, err, sizeof err), -1,
                 "loader_open should fail");
    cr_assert_null(ld, "*out must stay untouched on failure");
    cr_assert(strchr(err, '\n') == NULL, "one line: %s", err);
    return err;
}

static loader *open_ok(void)
{
    loader *ld = NULL;

    cr_assert_eq(loader_open(&cfg, &ld, err, sizeof err), 0, "%s", err);
    cr_assert_not_null(ld);
    return ld;
}

/* Asserts that msg starts with "test.ini:LINE: PATH: " and has `reason`. */
static void assert_refused(const char *msg, int line, const char *path,
                           const char *reason)
{
    char prefix[PATH_MAX + 64];

    if (line > 0)
        snprintf(prefix, sizeof prefix, "%s:%d: %s: ", TEST_FILE, line, path);
    else
        snprintf(prefix, sizeof prefix, "%s: %s: ", TEST_FILE, path);
    cr_assert(strncmp(msg, prefix, strlen(prefix)) == 0,
              "expected prefix \"%s\" in \"%s\"", prefix, msg);
    assert_contains(msg, reason);
}

/* Runs process_business of the plugin serving `type` on `payload`. */
static wharf_status run_task(const loader *ld, context *c, const char *type,
                             const char *payload)
{
    const route *r = loader_route(ld, type);
    wharf_task task = {
        .id = "t1",
        .type = type,
        .trace = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        .payload = (const unsigned char *)payload,
        .payload_len = strlen(payload),
        .attempt = 2,
        .max_attempts = 5,
        .fence = 7,
        .enqueued_at_ms = 1,
    };
    wharf_status status;

    cr_assert_not_null(r, "no route for %s", type);
    context_begin(c, &task);
    status = r->plugin->desc->process_business(&c->base, &task);
    context_end(c);
    return status;
}

static void assert_result(const context *c, const char *expected)
{
    cr_assert(c->has_result, "no result");
    cr_assert_eq(c->result_len, strlen(expected));
    cr_assert(memcmp(c->result, expected, c->result_len) == 0,
              "result \"%.*s\", expected \"%s\"", (int)c->result_len,
              (const char *)c->result, expected);
}

/* ---- refusals, one per fixture ---- */

Test(loader, refuses_a_file_that_is_not_elf)
{
    char path[PATH_MAX];

    snprintf(path, sizeof path, "%s/x.so", tmpdir);
    write_file(path, "this is not a shared object\n");
    chmod(path, 0644);
    add_section("x", path, NULL, 12);
    assert_refused(refusal(), 12, path, "not loadable: ");
    /* dlerror()'s own words follow. */
    cr_assert(strstr(err, "ELF") != NULL || strstr(err, "too short") != NULL,
              "no dlerror text in \"%s\"", err);
}

Test(loader, refuses_a_missing_file)
{
    char path[PATH_MAX];

    snprintf(path, sizeof path, "%s/absent.so", tmpdir);
    add_section("absent", path, NULL, 9);
    assert_refused(refusal(), 9, path, "No such file or directory");
}

Test(loader, refuses_an_object_without_the_symbol)
{
    const char *path = fixture("nosym", "nosym.so");

    add_section("nosym", path, NULL, 20);
    assert_refused(refusal(), 20, path,
                   "no wharf_plugin_v1 symbol: not a wharf plugin");
}

Test(loader, refuses_another_abi)
{
    const char *path = fixture("badabi", "badabi.so");

    add_section("badabi", path, NULL, 21);
    assert_refused(refusal(), 21, path, "ABI 999, not one of 2 to 3 this host loads");
}

Test(loader, loads_an_abi_2_plugin_as_not_thread_safe)
{
    const char *path = fixture("abi2", "abi2.so");
    loader *ld;

    add_section("abi2", path, NULL, 22);
    ld = open_ok();
    cr_assert_eq(ld->n_plugins, 1);
    cr_assert_eq(ld->plugins[0].desc->abi, 2);
    cr_assert(!ld->plugins[0].thread_safe);
    cr_assert_not_null(loader_route(ld, "abi2"));
    loader_close(ld);
}

Test(loader, refuses_a_null_process_business)
{
    const char *path = fixture("nullcb", "nullcb.so");

    add_section("nullcb", path, NULL, 22);
    assert_refused(refusal(), 22, path, "process_business is NULL");
}

Test(loader, refuses_a_plugin_without_a_name)
{
    const char *path = fixture("noname", "noname.so");

    add_section("noname", path, NULL, 23);
    assert_refused(refusal(), 23, path, "no name");
}

Test(loader, refuses_an_empty_name)
{
    const char *path = fixture("emptyname", "emptyname.so");

    add_section("emptyname", path, NULL, 24);
    assert_refused(refusal(), 24, path, "no name");
}

Test(loader, refuses_a_plugin_serving_no_type)
{
    const char *path = fixture("notypes", "notypes.so");

    add_section("notypes", path, NULL, 25);
    assert_refused(refusal(), 25, path, "serves no type");
}

Test(loader, manifest_types_serve_a_plugin_without_its_own)
{
    const char *path = fixture("notypes", "notypes.so");
    context c;
    loader *ld;

    add_section("notypes", path, (char *[]){"named-here", NULL}, 25);
    ld = open_ok();
    context_init(&c, loader_route(ld, "named-here")->plugin, 100);
    cr_assert_eq(run_task(ld, &c, "named-here", ""), WHARF_OK);
    assert_result(&c, "notypes");
    context_destroy(&c);
    loader_close(ld);
}

Test(loader, refuses_an_invalid_type_name)
{
    const char *path = fixture("badtype", "badtype.so");

    add_section("badtype", path, NULL, 26);
    assert_refused(refusal(), 26, path, "invalid type name \"bad type!\"");
}

Test(loader, refuses_an_invalid_type_name_in_the_manifest)
{
    const char *path = fixture("good", "good.so");

    add_section("good", path, (char *[]){"ok", "{slot}", NULL}, 26);
    assert_refused(refusal(), 26, path, "invalid type name \"{slot}\"");
}

/* A name is quoted by the one rule (quote.h): no byte outside printable
 * ASCII reaches the message, 0x80 and up included (a C1 control such as
 * 0x9b starts an escape sequence on some terminals). */
Test(loader, an_invalid_type_name_is_quoted_printable)
{
    const char *path = fixture("good", "good.so");

    add_section("good", path, (char *[]){"ok", "caf\xc3\xa9\x9b[2J", NULL}, 26);
    assert_refused(refusal(), 26, path, "invalid type name \"caf???[2J\"");
}

Test(loader, manifest_types_replace_the_descriptors)
{
    const char *path = fixture("badtype", "badtype.so");
    loader *ld;

    add_section("badtype", path, (char *[]){"fine", NULL}, 26);
    ld = open_ok();
    cr_assert_eq(ld->n_routes, 1);
    cr_assert_not_null(loader_route(ld, "fine"));
    loader_close(ld);
}

Test(loader, refuses_init_failure_and_finis_the_others)
{
    char fini_file[PATH_MAX];
    char text[128] = "";
    plugin_section *good;
    FILE *file;
    loader *ld;

    snprintf(fini_file, sizeof fini_file, "%s/fini.log", tmpdir);
    good = add_section("good", fixture("good", "good.so"), NULL, 30);
    add_extra(good, "fini_file", fini_file);
    add_section("initfail", fixture("initfail", "initfail.so"), NULL, 40);
    ld = open_ok();
    cr_assert_eq(loader_init(ld, err, sizeof err), -1);
    assert_refused(err, 40, sections[1].path,
                   "init returned 3: no database configured");
    cr_assert(!ld->plugins[0].initialized);
    cr_assert(!ld->plugins[1].initialized);
    file = fopen(fini_file, "r");
    cr_assert_not_null(file, "good's fini did not run");
    cr_assert_not_null(fgets(text, sizeof text, file));
    fclose(file);
    cr_assert_str_eq(text, "fini hello\n");
    loader_close(ld);
}

/* ---- the ownership and mode check ---- */

Test(loader, refuses_a_file_writable_by_group)
{
    const char *path = fixture("good", "good.so");

    chmod(path, 0664);
    add_section("good", path, NULL, 5);
    assert_refused(refusal(), 5, path,
                   "writable by group or others (mode 0664)");
}

Test(loader, refuses_a_file_writable_by_others)
{
    const char *path = fixture("good", "good.so");

    chmod(path, 0646);
    add_section("good", path, NULL, 5);
    assert_refused(refusal(), 5, path,
                   "writable by group or others (mode 0646)");
}

Test(loader, refuses_a_writable_folder)
{
    const char *path = fixture("good", "good.so");
    char expected[PATH_MAX + 160];
    char real[PATH_MAX];

    cr_assert_not_null(realpath(tmpdir, real));
    chmod(tmpdir, 0777);
    add_section("good", path, NULL, 5);
    snprintf(expected, sizeof expected,
             "folder %s is writable by group or others without the sticky "
             "bit (mode 0777)",
             real);
    assert_refused(refusal(), 5, path, expected);
}

/* Makes tmpdir/a/b/c (each 0755) and puts fixture good.so in c; the
 * folders' paths go to a and b, the plugin's to the result. */
static const char *deep_fixture(char *a, char *b, size_t size)
{
    static char path[PATH_MAX];
    char c[PATH_MAX];

    snprintf(a, size, "%s/a", tmpdir);
    snprintf(b, size, "%s/a/b", tmpdir);
    snprintf(c, sizeof c, "%s/a/b/c", tmpdir);
    cr_assert_eq(mkdir(a, 0755), 0);
    cr_assert_eq(mkdir(b, 0755), 0);
    cr_assert_eq(mkdir(c, 0755), 0);
    snprintf(path, sizeof path, "%s/a/b/c/good.so", tmpdir);
    copy_file(WHARF_FIXTURE_DIR "/good.so", "a/b/c/good.so", path,
              sizeof path);
    return path;
}

Test(loader, refuses_a_writable_grandparent_folder)
{
    char a[PATH_MAX], b[PATH_MAX], real[PATH_MAX], expected[PATH_MAX + 160];
    const char *path = deep_fixture(a, b, sizeof a);

    /* The plugin's own folder is private, the one above it is not: whoever
     * can write to b can rename c away and put a folder of their own in. */
    cr_assert_eq(chmod(b, 0777), 0);
    cr_assert_not_null(realpath(b, real));
    add_section("good", path, NULL, 5);
    snprintf(expected, sizeof expected,
             "folder %s is writable by group or others without the sticky "
             "bit (mode 0777)",
             real);
    assert_refused(refusal(), 5, path, expected);
}

Test(loader, refuses_a_group_writable_folder_three_levels_up)
{
    char a[PATH_MAX], b[PATH_MAX], real[PATH_MAX], expected[PATH_MAX + 160];
    const char *path = deep_fixture(a, b, sizeof a);

    cr_assert_eq(chmod(a, 0775), 0);
    cr_assert_not_null(realpath(a, real));
    add_section("good", path, NULL, 5);
    snprintf(expected, sizeof expected, "folder %s is writable by group",
             real);
    assert_refused(refusal(), 5, path, expected);
}

Test(loader, accepts_a_world_writable_grandparent_with_the_sticky_bit)
{
    char a[PATH_MAX], b[PATH_MAX];
    const char *path = deep_fixture(a, b, sizeof a);
    loader *ld;

    /* As /tmp: others may add their own files, not move ours. */
    cr_assert_eq(chmod(b, 01777), 0);
    add_section("good", path, NULL, 5);
    ld = open_ok();
    cr_assert_not_null(loader_route(ld, "good"));
    loader_close(ld);
}

Test(loader, refuses_a_sticky_folder_that_another_user_owns)
{
    char a[PATH_MAX], b[PATH_MAX], real[PATH_MAX], expected[PATH_MAX + 160];
    const char *path = deep_fixture(a, b, sizeof a);

    if (geteuid() != 0)
        cr_skip("chown needs root");
    cr_assert_eq(chmod(b, 01777), 0);
    cr_assert_eq(chown(b, 1234, (gid_t)-1), 0);
    cr_assert_not_null(realpath(b, real));
    add_section("good", path, NULL, 5);
    snprintf(expected, sizeof expected, "folder %s is owned by uid 1234", real);
    assert_refused(refusal(), 5, path, expected);
}

Test(loader, refuses_a_link_whose_folder_sits_under_a_writable_one)
{
    char a[PATH_MAX], b[PATH_MAX], links[PATH_MAX], inner[PATH_MAX];
    char link_path[PATH_MAX + 16], real[PATH_MAX], expected[PATH_MAX + 160];
    const char *path = deep_fixture(a, b, sizeof a);

    /* The target is safe; the link sits in links/inner (private) under
     * links (world-writable), so links/inner could be swapped. */
    snprintf(links, sizeof links, "%s/links", tmpdir);
    snprintf(inner, sizeof inner, "%s/links/inner", tmpdir);
    cr_assert_eq(mkdir(links, 0755), 0);
    cr_assert_eq(mkdir(inner, 0755), 0);
    cr_assert_eq(chmod(links, 0777), 0);
    snprintf(link_path, sizeof link_path, "%s/good.so", inner);
    cr_assert_eq(symlink(path, link_path), 0);
    cr_assert_not_null(realpath(links, real));
    add_section("good", link_path, NULL, 5);
    snprintf(expected, sizeof expected, "folder %s is writable", real);
    assert_refused(refusal(), 5, link_path, expected);
}

Test(loader, insecure_plugins_allows_a_writable_grandparent)
{
    char a[PATH_MAX], b[PATH_MAX];
    const char *path = deep_fixture(a, b, sizeof a);
    loader *ld;

    cr_assert_eq(chmod(a, 0777), 0);
    cfg.insecure_plugins = true;
    add_section("good", path, NULL, 5);
    ld = open_ok();
    cr_assert_not_null(loader_route(ld, "good"));
    loader_close(ld);
}

Test(loader, refuses_a_link_from_a_writable_folder)
{
    char links[128], link_path[PATH_MAX], expected[PATH_MAX + 64];
    const char *path = fixture("good", "good.so");

    snprintf(links, sizeof links, "%s/links", tmpdir);
    cr_assert_eq(mkdir(links, 0755), 0);
    cr_assert_eq(chmod(links, 0777), 0);
    snprintf(link_path, sizeof link_path, "%s/good.so", links);
    cr_assert_eq(symlink(path, link_path), 0);
    add_section("good", link_path, NULL, 5);
    snprintf(expected, sizeof expected, "folder %s is writable", links);
    assert_refused(refusal(), 5, link_path, expected);
}

Test(loader, refuses_a_file_of_another_user)
{
    const char *path = fixture("good", "good.so");
    char expected[64];

    if (geteuid() != 0)
        cr_skip("chown needs root");
    cr_assert_eq(chown(path, 1234, (gid_t)-1), 0);
    add_section("good", path, NULL, 5);
    snprintf(expected, sizeof expected, "owned by uid 1234, not root or %lu",
             (unsigned long)geteuid());
    assert_refused(refusal(), 5, path, expected);
}

Test(loader, refuses_a_folder_of_another_user)
{
    const char *path = fixture("good", "good.so");

    if (geteuid() != 0)
        cr_skip("chown needs root");
    cr_assert_eq(chown(tmpdir, 1234, (gid_t)-1), 0);
    add_section("good", path, NULL, 5);
    assert_refused(refusal(), 5, path, "is owned by uid 1234");
}

Test(loader, insecure_plugins_allows_writable_and_foreign_files)
{
    const char *path = fixture("good", "good.so");
    loader *ld;

    chmod(path, 0666);
    chmod(tmpdir, 0777);
    if (geteuid() == 0)
        cr_assert_eq(chown(path, 1234, (gid_t)-1), 0);
    cfg.insecure_plugins = true;
    add_section("good", path, NULL, 5);
    ld = open_ok();
    cr_assert_not_null(loader_route(ld, "good"));
    loader_close(ld);
}

Test(loader, check_owner_accepts_a_private_file)
{
    const char *path = fixture("good", "good.so");

    cr_assert_eq(loader_check_owner(path, err, sizeof err), 0, "%s", err);
    cr_assert_eq(loader_check_owner(tmpdir, err, sizeof err), 0, "%s", err);
    chmod(path, 0620);
    cr_assert_eq(loader_check_owner(path, err, sizeof err), -1);
    cr_assert_str_eq(err, "writable by group or others (mode 0620)");
    /* The sticky bit makes a shared folder safe, never a file. */
    cr_assert_eq(loader_check_owner("/tmp", err, sizeof err), 0, "%s", err);
    chmod(path, 01666);
    cr_assert_eq(loader_check_owner(path, err, sizeof err), -1);
}

/* ---- loading and routing ---- */

Test(loader, loads_and_routes_a_good_plugin)
{
    const char *path = fixture("good", "good.so");
    char real[PATH_MAX];
    const route *r;
    loader *ld;

    add_section("good", path, NULL, 7);
    ld = open_ok();
    cr_assert_eq(ld->n_plugins, 1);
    cr_assert_eq(ld->n_routes, 1);
    cr_assert_str_eq(ld->plugins[0].name, "good");
    cr_assert_not_null(realpath(path, real));
    cr_assert_str_eq(ld->plugins[0].path, real);
    cr_assert_eq(ld->plugins[0].section, &sections[0]);
    cr_assert(!ld->plugins[0].initialized, "loader_open runs no init");
    cr_assert(!ld->plugins[0].thread_safe, "good does not opt in");
    r = loader_route(ld, "good");
    cr_assert_not_null(r);
    cr_assert_str_eq(r->type, "good");
    cr_assert_eq(r->plugin, &ld->plugins[0]);
    cr_assert_eq(r->policy, &cfg.defaults);
    cr_assert_null(loader_route(ld, "bad"));
    cr_assert_null(loader_route(ld, ""));
    loader_close(ld);
}

Test(loader, routes_are_sorted_with_their_policies)
{
    static const char *const expected[] = {"alpha", "beta", "gamma", "good"};
    loader *ld;
    size_t i;

    memset(type_sections, 0, sizeof type_sections);
    type_sections[0].name = "beta";
    type_sections[0].policy = cfg.defaults;
    type_sections[0].policy.max_attempts = 2;
    cfg.types = type_sections;
    cfg.n_types = 1;
    add_section("good", fixture("good", "good.so"), NULL, 7);
    add_section("multi", fixture("multi", "multi.so"), NULL, 8);
    add_section("clash", fixture("clash", "clash.so"),
                (char *[]){"gamma", NULL}, 9);
    ld = open_ok();
    cr_assert_eq(ld->n_plugins, 3);
    cr_assert_eq(ld->n_routes, 4);
    for (i = 0; i < 4; i++) {
        const route *r = loader_route(ld, expected[i]);

        cr_assert_str_eq(ld->routes[i].type, expected[i]);
        cr_assert_eq(r, &ld->routes[i]);
    }
    cr_assert_str_eq(loader_route(ld, "gamma")->plugin->name, "clash");
    cr_assert_eq(loader_route(ld, "beta")->policy, &type_sections[0].policy);
    cr_assert_eq(loader_route(ld, "beta")->policy->max_attempts, 2);
    cr_assert_eq(loader_route(ld, "alpha")->policy, &cfg.defaults);
    cr_assert_null(loader_route(ld, "clash"));
    loader_close(ld);
}

Test(loader, refuses_a_type_served_twice)
{
    const char *good = fixture("good", "good.so");
    const char *clash = fixture("clash", "clash.so");

    add_section("good", good, NULL, 7);
    add_section("clash", clash, NULL, 11);
    assert_refused(refusal(), 11, clash, "type \"good\"");
    assert_contains(err, "\"clash\"");
    assert_contains(err, "already served by plugin \"good\"");
    assert_contains(err, "good.so");
}

Test(loader, a_clash_between_two_sections_of_one_file_names_the_sections)
{
    const char *good = fixture("good", "good.so");

    add_section("orders", good, (char *[]){"a", NULL}, 7);
    add_section("billing", good, (char *[]){"b", "a", NULL}, 11);
    assert_refused(refusal(), 11, good, "type \"a\"");
    assert_contains(err, "of plugin \"billing\" is already served by "
                         "plugin \"orders\"");
}

Test(loader, refuses_a_type_listed_twice)
{
    const char *good = fixture("good", "good.so");

    add_section("good", good, (char *[]){"a", "b", "a", NULL}, 7);
    assert_refused(refusal(), 7, good, "type \"a\" is listed twice");
}

Test(loader, the_same_file_may_serve_two_sections)
{
    const char *path = fixture("notypes", "notypes.so");
    loader *ld;

    add_section("one", path, (char *[]){"one", NULL}, 7);
    add_section("two", path, (char *[]){"two", NULL}, 9);
    ld = open_ok();
    cr_assert_eq(ld->n_plugins, 2);
    cr_assert_eq(loader_route(ld, "one")->plugin->section, &sections[0]);
    cr_assert_eq(loader_route(ld, "two")->plugin->section, &sections[1]);
    loader_close(ld);
}

/* ---- threads ---- */

/* The refusal of loader.c for `threads` above 1 in the section of a
 * plugin that has not opted in, as a whole line. */
static void assert_threads_refused(int line, const char *path,
                                   const char *section, unsigned threads)
{
    char want[PATH_MAX + 512];

    snprintf(want, sizeof want,
             "%s:%d: %s: [plugin.%s] threads = %u, but the plugin has not "
             "opted in to threads (.thread_safe = 1 in its WHARF_PLUGIN); set "
             "threads = 1 or leave it out",
             TEST_FILE, line, path, section, threads);
    cr_assert_str_eq(refusal(), want);
}

Test(loader, refuses_threads_for_a_plugin_that_has_not_opted_in)
{
    const char *path = fixture("good", "good.so");
    plugin_section *section = add_section("good", path, NULL, 10);

    section->threads = 8;
    section->threads_line = 12;
    assert_threads_refused(12, path, "good", 8);
}

Test(loader, refuses_threads_for_an_abi_2_plugin)
{
    /* ABI 2 predates .thread_safe: such a plugin cannot have opted in. */
    const char *path = fixture("abi2", "abi2.so");
    plugin_section *section = add_section("old", path, NULL, 4);

    section->threads = 2;
    section->threads_line = 5;
    assert_threads_refused(5, path, "old", 2);
}

Test(loader, the_first_plugin_refused_for_threads_is_named)
{
    const char *meet = fixture("meet", "meet.so");
    const char *good = fixture("good", "good.so");

    add_section("meet", meet, NULL, 3)->threads = 64;
    add_section("good", good, NULL, 7)->threads = 1;
    add_section("other", good, (char *[]){"other", NULL}, 11)->threads = 3;
    sections[2].threads_line = 13;
    assert_threads_refused(13, good, "other", 3);
}

Test(loader, effective_threads_of_each_plugin)
{
    const char *meet = fixture("meet", "meet.so");
    const char *good = fixture("good", "good.so");
    loader *ld;

    /* [host] threads: for the plugin that opted in only, unless a
     * section says otherwise. */
    cfg.threads = 16;
    add_section("meet", meet, NULL, 3);
    add_section("good", good, NULL, 5);
    add_section("pinned", good, (char *[]){"pinned", NULL}, 7)->threads = 1;
    add_section("few", meet, (char *[]){"few", NULL}, 9)->threads = 4;
    add_section("one", meet, (char *[]){"one", NULL}, 11)->threads = 1;
    ld = open_ok();
    cr_assert_eq(ld->n_plugins, 5);
    cr_assert(ld->plugins[0].thread_safe);
    cr_assert_eq(ld->plugins[0].threads, 16, "[host] threads");
    cr_assert(!ld->plugins[1].thread_safe);
    cr_assert_eq(ld->plugins[1].threads, 1, "has not opted in");
    cr_assert_eq(ld->plugins[2].threads, 1, "threads = 1 is allowed");
    cr_assert_eq(ld->plugins[3].threads, 4, "the section's threads wins");
    cr_assert_eq(ld->plugins[4].threads, 1, "even below [host] threads");

    /* Only the plugin held to 1 by not opting in is noted by --check. */
    cr_assert(!loader_single_threaded(ld, &ld->plugins[0]));
    cr_assert(loader_single_threaded(ld, &ld->plugins[1]));
    cr_assert(!loader_single_threaded(ld, &ld->plugins[2]), "asked for 1");
    cr_assert(!loader_single_threaded(ld, &ld->plugins[4]));
    cr_assert_eq(loader_threads(ld), 16);
    loader_close(ld);
}

Test(loader, one_thread_by_default)
{
    const char *meet = fixture("meet", "meet.so");
    loader *ld;

    /* cfg.threads is 0 here, as in a config not made by config_load: one
     * thread all the same. */
    add_section("meet", meet, NULL, 3);
    ld = open_ok();
    cr_assert_eq(ld->plugins[0].threads, 1);
    cr_assert(!loader_single_threaded(ld, &ld->plugins[0]));
    cr_assert_eq(loader_threads(ld), 1);
    cr_assert_eq(loader_route_cap(loader_route(ld, "meet")), 1);
    loader_close(ld);

    cfg.threads = 1;
    cfg.n_plugins = 0;
    add_section("good", fixture("good", "good.so"), NULL, 3);
    ld = open_ok();
    cr_assert_eq(ld->plugins[0].threads, 1);
    cr_assert(!loader_single_threaded(ld, &ld->plugins[0]),
              "[host] threads = 1 asks for no more");
    loader_close(ld);
    cr_assert_eq(loader_threads(NULL), 1);
}

Test(loader, autoloaded_plugins_take_host_threads_if_thread_safe)
{
    loader *ld;

    cfg.autoload = true;
    cfg.threads = 32;
    fixture("meet", "meet.so");
    fixture("good", "good.so");
    ld = open_ok();
    cr_assert_eq(ld->n_plugins, 2);
    cr_assert_eq(loader_route(ld, "meet")->plugin->threads, 32);
    cr_assert_eq(loader_route(ld, "good")->plugin->threads, 1);
    cr_assert(loader_single_threaded(ld, loader_route(ld, "good")->plugin));
    cr_assert_eq(loader_threads(ld), 32);
    loader_close(ld);
}

Test(loader, route_cap_is_threads_lowered_to_concurrency)
{
    const char *meet = fixture("meet", "meet.so");
    const char *good = fixture("good", "good.so");
    loader *ld;

    memset(type_sections, 0, sizeof type_sections);
    type_sections[0].name = "capped";
    type_sections[0].policy = cfg.defaults;
    type_sections[0].policy.concurrency = 3;
    type_sections[1].name = "good";
    type_sections[1].policy = cfg.defaults;
    type_sections[1].policy.concurrency = 5;
    cfg.types = type_sections;
    cfg.n_types = 2;
    cfg.defaults.concurrency = 100; /* above every plugin's threads */
    cfg.threads = 8;
    add_section("meet", meet, (char *[]){"meet", "capped", NULL}, 3);
    add_section("good", good, NULL, 5);
    ld = open_ok();
    cr_assert_eq(loader_route_cap(loader_route(ld, "meet")), 8,
                 "a cap above the threads changes nothing");
    cr_assert_eq(loader_route_cap(loader_route(ld, "capped")), 3);
    cr_assert_eq(loader_route_cap(loader_route(ld, "good")), 1,
                 "concurrency gives no threads");
    cr_assert_eq(loader_threads(ld), 8);
    loader_close(ld);

    cfg.defaults.concurrency = 0; /* no cap */
    cfg.n_types = 0;
    ld = open_ok();
    cr_assert_eq(loader_route_cap(loader_route(ld, "capped")), 8);
    loader_close(ld);
}

/* ---- autoload ---- */

Test(loader, autoload_adds_unnamed_plugins)
{
    loader *ld;
    const route *r;
    context c;

    cfg.autoload = true;
    add_section("good", fixture("good", "good.so"), NULL, 7);
    fixture("multi", "multi.so");
    ld = open_ok();
    cr_assert_eq(ld->n_plugins, 2, "good.so must not load twice");
    r = loader_route(ld, "alpha");
    cr_assert_not_null(r);
    cr_assert_str_eq(r->plugin->name, "multi");
    cr_assert_null(r->plugin->section);
    cr_assert_eq(r->policy, &cfg.defaults);
    cr_assert_eq(loader_route(ld, "beta")->plugin, r->plugin);
    cr_assert_str_eq(loader_route(ld, "good")->plugin->name, "good");

    /* No section: wharf_config answers NULL and there is no state. */
    cr_assert_eq(loader_init(ld, err, sizeof err), 0, "%s", err);
    context_init(&c, r->plugin, 100);
    cr_assert_eq(run_task(ld, &c, "alpha", ""), WHARF_OK, "%s", c.error);
    assert_result(&c, "alpha");
    context_destroy(&c);
    loader_close(ld);
}

Test(loader, autoload_is_off_unless_asked)
{
    loader *ld;

    add_section("good", fixture("good", "good.so"), NULL, 7);
    fixture("nosym", "nosym.so");
    fixture("multi", "multi.so");
    ld = open_ok();
    cr_assert_eq(ld->n_plugins, 1);
    cr_assert_null(loader_route(ld, "alpha"));
    loader_close(ld);
}

Test(loader, autoload_refuses_a_non_plugin)
{
    const char *path;

    cfg.autoload = true;
    fixture("multi", "multi.so");
    path = fixture("nosym", "nosym.so");
    assert_refused(refusal(), PLUGINS_DIR_LINE, path,
                   "no wharf_plugin_v1 symbol: not a wharf plugin");
}

Test(loader, autoload_refuses_a_text_file)
{
    char path[PATH_MAX];

    cfg.autoload = true;
    snprintf(path, sizeof path, "%s/x.so", tmpdir);
    write_file(path, "not ELF\n");
    chmod(path, 0644);
    assert_refused(refusal(), PLUGINS_DIR_LINE, path, "not loadable: ");
}

Test(loader, autoload_without_a_line_omits_it)
{
    const char *path;

    cfg.autoload = true;
    cfg.plugins_dir_line = 0;
    path = fixture("notypes", "notypes.so");
    assert_refused(refusal(), 0, path, "serves no type");
}

Test(loader, autoload_clash_names_both)
{
    const char *good = fixture("good", "good.so");
    const char *clash;

    cfg.autoload = true;
    add_section("good", good, NULL, 7);
    clash = fixture("clash", "clash.so");
    assert_refused(refusal(), PLUGINS_DIR_LINE, clash,
                   "already served by plugin \"good\"");
    assert_contains(err, "good.so");
}

Test(loader, autoload_skips_hidden_and_other_files)
{
    char path[PATH_MAX];
    loader *ld;

    cfg.autoload = true;
    fixture("multi", "multi.so");
    fixture("nosym", ".hidden.so");
    fixture("nosym", "nosym.so.1");
    snprintf(path, sizeof path, "%s/README", tmpdir);
    write_file(path, "not a plugin\n");
    ld = open_ok();
    cr_assert_eq(ld->n_plugins, 1);
    cr_assert_str_eq(ld->plugins[0].name, "multi");
    loader_close(ld);
}

Test(loader, autoload_loads_in_name_order)
{
    loader *ld;

    cfg.autoload = true;
    fixture("multi", "z.so");
    fixture("good", "a.so");
    fixture("notypes", "m.so.disabled");
    ld = open_ok();
    cr_assert_eq(ld->n_plugins, 2);
    cr_assert_str_eq(ld->plugins[0].name, "good");
    cr_assert_str_eq(ld->plugins[1].name, "multi");
    loader_close(ld);
}

Test(loader, autoload_refuses_a_missing_plugins_dir)
{
    char missing[PATH_MAX];

    snprintf(missing, sizeof missing, "%s/nowhere", tmpdir);
    cfg.autoload = true;
    cfg.plugins_dir = missing;
    assert_refused(refusal(), PLUGINS_DIR_LINE, missing,
                   "No such file or directory");
}

Test(loader, autoload_skips_a_missing_default_plugins_dir)
{
    char missing[PATH_MAX];
    loader *ld;

    snprintf(missing, sizeof missing, "%s/plugins", tmpdir);
    cfg.autoload = true;
    cfg.plugins_dir = missing;
    cfg.plugins_dir_line = 0; /* not in the manifest: the default */
    add_section("good", fixture("good", "good.so"), NULL, 7);
    ld = open_ok();
    cr_assert_eq(ld->n_plugins, 1);
    loader_close(ld);
}

/* ---- init, services, fini ---- */

Test(loader, init_reads_config_and_fini_runs_once)
{
    char fini_file[PATH_MAX];
    char text[128] = "";
    plugin_section *section;
    context c;
    FILE *file;
    loader *ld;

    snprintf(fini_file, sizeof fini_file, "%s/fini.log", tmpdir);
    section = add_section("good", fixture("good", "good.so"), NULL, 7);
    add_extra(section, "greeting", "hi");
    add_extra(section, "fini_file", fini_file);
    ld = open_ok();
    cr_assert_eq(loader_init(ld, err, sizeof err), 0, "%s", err);
    cr_assert(ld->plugins[0].initialized);
    cr_assert_not_null(ld->plugins[0].state);

    context_init(&c, &ld->plugins[0], 1024);
    cr_assert_eq(run_task(ld, &c, "good", "probe"), WHARF_OK, "%s", c.error);
    assert_result(&c, "greeting=hi missing=1 outside=-1");
    cr_assert_eq(wharf_state(&c.base), ld->plugins[0].state);
    cr_assert_str_eq(wharf_config(&c.base, "greeting"), "hi");
    cr_assert_null(wharf_config(&c.base, "path"));
    context_destroy(&c);

    loader_fini(ld);
    cr_assert(!ld->plugins[0].initialized);
    loader_close(ld);
    file = fopen(fini_file, "r");
    cr_assert_not_null(file, "fini did not run");
    cr_assert_not_null(fgets(text, sizeof text, file));
    cr_assert_str_eq(text, "fini hi\n");
    cr_assert_null(fgets(text, sizeof text, file), "fini ran twice");
    fclose(file);
}

Test(loader, process_business_through_the_context)
{
    context c;
    loader *ld;

    add_section("good", fixture("good", "good.so"), NULL, 7);
    ld = open_ok();
    cr_assert_eq(loader_init(ld, err, sizeof err), 0, "%s", err);
    context_init(&c, &ld->plugins[0], 64);

    cr_assert_eq(run_task(ld, &c, "good", "world"), WHARF_OK);
    assert_result(&c, "hello, world");
    cr_assert_str_eq(c.error, "");

    cr_assert_eq(run_task(ld, &c, "good", "fail"), WHARF_FAIL);
    cr_assert_not(c.has_result, "context_begin clears the result");
    cr_assert_str_eq(c.error, "failed on purpose: task t1 attempt 2");

    cr_assert_eq(run_task(ld, &c, "good", "retry"), WHARF_RETRY);
    cr_assert_str_eq(c.error, "", "context_begin clears the error");
    cr_assert_not(c.has_result);

    cr_assert_eq(run_task(ld, &c, "good", "empty"), WHARF_OK);
    cr_assert(c.has_result, "an empty result is a result");
    cr_assert_eq(c.result_len, 0);

    /* Over max_result (64): refused, and the plugin says so. */
    cr_assert_eq(run_task(ld, &c, "good",
                          "a payload long enough that the greeting plus it "
                          "exceeds sixty-four bytes"),
                 WHARF_RETRY);
    cr_assert_str_eq(c.error, "result refused");
    cr_assert_not(c.has_result);

    /* After the call the task is gone: no result can be set. */
    cr_assert_eq(wharf_result(&c.base, "late", 4), -1);
    context_destroy(&c);
    loader_close(ld);
}

/* Runs the plugin's "log" task with stderr sent to a file; returns it. */
static char *captured_log(const loader *ld, context *c)
{
    static char text[8192];
    char path[PATH_MAX];
    ssize_t n;
    int fd, saved;

    snprintf(path, sizeof path, "%s/stderr.log", tmpdir);
    fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    cr_assert(fd >= 0);
    fflush(stderr);
    saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    cr_assert_eq(run_task(ld, c, "good", "log"), WHARF_OK);
    dup2(saved, STDERR_FILENO);
    close(saved);
    n = pread(fd, text, sizeof text - 1, 0);
    close(fd);
    text[n > 0 ? n : 0] = '\0';
    return text;
}

Test(loader, wharf_log_names_plugin_and_task)
{
    char *text, *second;
    context c;
    loader *ld;

    add_section("good", fixture("good", "good.so"), NULL, 7);
    ld = open_ok();
    cr_assert_eq(loader_init(ld, err, sizeof err), 0, "%s", err);
    context_init(&c, &ld->plugins[0], 64);
    log_setup(WHARF_LOG_DEBUG, LOG_FORMAT_JSON);
    text = captured_log(ld, &c);
    assert_contains(text, "\"level\":\"warn\"");
    assert_contains(text, "\"msg\":\"logging for task t1\"");
    assert_contains(text, "\"plugin\":\"good\"");
    assert_contains(text, "\"task\":\"t1\"");
    assert_contains(text, "\"type\":\"good\"");
    assert_contains(text, "\"trace_id\":\"0af7651916cd43dd8448eb211c80319c\"");
    second = strchr(text, '\n');
    cr_assert_not_null(second);
    assert_contains(second, "\"level\":\"error\""); /* 99 clamped */
    assert_contains(second, "a bad level is clamped");

    /* Below the logger's level nothing is written. */
    log_setup(WHARF_LOG_ERROR, LOG_FORMAT_JSON);
    text = captured_log(ld, &c);
    cr_assert(strstr(text, "logging for task") == NULL, "%s", text);
    assert_contains(text, "a bad level is clamped");
    context_destroy(&c);
    loader_close(ld);
}

Test(loader, echo_returns_the_payload)
{
    char from[PATH_MAX], path[PATH_MAX];
    context c;
    loader *ld;

    snprintf(from, sizeof from, "%s/echo.so", WHARF_PLUGIN_DIR);
    copy_file(from, "echo.so", path, sizeof path);
    add_section("echo", path, NULL, 7);
    ld = open_ok();
    cr_assert_eq(loader_init(ld, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(ld->plugins[0].name, "echo");
    context_init(&c, &ld->plugins[0], 1024);
    cr_assert_eq(run_task(ld, &c, "echo", "hello, wharf"), WHARF_OK);
    assert_result(&c, "hello, wharf");
    cr_assert_eq(run_task(ld, &c, "echo", ""), WHARF_FAIL);
    cr_assert_str_eq(c.error, "empty payload");
    context_destroy(&c);
    loader_close(ld);
}

Test(loader, close_accepts_null)
{
    loader_close(NULL);
    loader_fini(NULL);
    cr_assert_null(loader_route(NULL, "good"));
}

/* ---- through a manifest parsed by config_load ---- */

/* Writes the manifest `text` to tmpdir/wharf.ini and loads it. */
static config *load_manifest(const char *text, char *path, size_t size)
{
    char config_err[CONFIG_ERR_LEN];
    config *loaded = NULL;

    snprintf(path, size, "%s/wharf.ini", tmpdir);
    write_file(path, text);
    cr_assert_eq(config_load(path, &loaded, config_err, sizeof config_err), 0,
                 "%s", config_err);
    return loaded;
}

Test(loader, works_from_a_parsed_manifest)
{
    char manifest[PATH_MAX], text[2048], probe[128];
    const route *r;
    config *loaded;
    context c;
    loader *ld = NULL;

    fixture("good", "good.so");
    fixture("multi", "multi.so");
    snprintf(text, sizeof text,
             "[host]\n"
             "plugins_dir = %s\n"
             "autoload = yes\n"
             "[plugin.good]\n"
             "path = good.so\n"
             "greeting = from-ini\n"
             "[type.good]\n"
             "max_attempts = 3\n",
             tmpdir);
    loaded = load_manifest(text, manifest, sizeof manifest);
    cr_assert_eq(loader_open(loaded, &ld, err, sizeof err), 0, "%s", err);
    cr_assert_eq(ld->n_plugins, 2);
    r = loader_route(ld, "good");
    cr_assert_not_null(r);
    cr_assert_eq(r->policy->max_attempts, 3);
    cr_assert_eq(loader_route(ld, "alpha")->policy, &loaded->defaults);
    cr_assert_null(loader_route(ld, "alpha")->plugin->section);

    cr_assert_eq(loader_init(ld, err, sizeof err), 0, "%s", err);
    context_init(&c, r->plugin, 1024);
    cr_assert_eq(run_task(ld, &c, "good", "probe"), WHARF_OK);
    snprintf(probe, sizeof probe, "greeting=from-ini missing=1 outside=-1");
    assert_result(&c, probe);
    context_destroy(&c);
    loader_close(ld);
    config_free(loaded);
}

Test(loader, names_the_manifest_line)
{
    char manifest[PATH_MAX], text[1024], prefix[PATH_MAX + 16];
    config *loaded;
    loader *ld = NULL;

    fixture("nosym", "nosym.so");
    snprintf(text, sizeof text,
             "[host]\n"
             "plugins_dir = %s\n"
             "autoload = no\n"
             "\n"
             "[plugin.nosym]\n"
             "types = nosym\n"
             "path = nosym.so\n",
             tmpdir);
    loaded = load_manifest(text, manifest, sizeof manifest);
    cr_assert_eq(loader_open(loaded, &ld, err, sizeof err), -1);
    cr_assert_null(ld);
    snprintf(prefix, sizeof prefix, "%s:7: ", manifest);
    cr_assert(strncmp(err, prefix, strlen(prefix)) == 0, "%s", err);
    assert_contains(err, "nosym.so: no wharf_plugin_v1 symbol");
    config_free(loaded);
}

Test(loader, refuses_threads_at_the_line_of_a_parsed_manifest)
{
    char manifest[PATH_MAX], text[1024], want[PATH_MAX * 3];
    char real[PATH_MAX];
    config *loaded;
    loader *ld = NULL;

    fixture("good", "good.so");
    fixture("meet", "meet.so");
    snprintf(text, sizeof text,
             "[host]\n"
             "plugins_dir = %s\n"
             "autoload = no\n"
             "threads = 8\n"
             "[plugin.meet]\n"
             "[plugin.good]\n"
             "path = good.so\n"
             "threads = 8\n",
             tmpdir);
    loaded = load_manifest(text, manifest, sizeof manifest);
    cr_assert_eq(loader_open(loaded, &ld, err, sizeof err), -1);
    cr_assert_null(ld);
    snprintf(real, sizeof real, "%s/good.so", tmpdir);
    snprintf(want, sizeof want,
             "%s:8: %s: [plugin.good] threads = 8, but the plugin has not "
             "opted in to threads (.thread_safe = 1 in its WHARF_PLUGIN); set "
             "threads = 1 or leave it out",
             manifest, real);
    cr_assert_str_eq(err, want);
    config_free(loaded);

    /* Without its own threads it loads, held to one. */
    snprintf(text, sizeof text,
             "[host]\n"
             "plugins_dir = %s\n"
             "autoload = no\n"
             "threads = 8\n"
             "[plugin.meet]\n"
             "[plugin.good]\n"
             "path = good.so\n"
             "[type.meet]\n"
             "concurrency = 2\n",
             tmpdir);
    loaded = load_manifest(text, manifest, sizeof manifest);
    cr_assert_eq(loader_open(loaded, &ld, err, sizeof err), 0, "%s", err);
    cr_assert_eq(loader_route(ld, "meet")->plugin->threads, 8);
    cr_assert_eq(loader_route(ld, "good")->plugin->threads, 1);
    cr_assert_eq(loader_threads(ld), 8);
    cr_assert_eq(loader_route_cap(loader_route(ld, "meet")), 2);
    cr_assert_eq(loader_route_cap(loader_route(ld, "good")), 1);
    loader_close(ld);
    config_free(loaded);
}

Test(loader, names_the_plugins_dir_line_for_autoload)
{
    char manifest[PATH_MAX], text[1024], prefix[PATH_MAX + 16];
    config *loaded;
    loader *ld = NULL;

    fixture("badabi", "badabi.so");
    snprintf(text, sizeof text,
             "[host]\n"
             "autoload = yes\n"
             "plugins_dir = %s\n",
             tmpdir);
    loaded = load_manifest(text, manifest, sizeof manifest);
    cr_assert_eq(loader_open(loaded, &ld, err, sizeof err), -1);
    snprintf(prefix, sizeof prefix, "%s:3: ", manifest);
    cr_assert(strncmp(err, prefix, strlen(prefix)) == 0, "%s", err);
    assert_contains(err, "badabi.so: ABI 999, not one of 2 to 3 this host loads");
    config_free(loaded);
}
