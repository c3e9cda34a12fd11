# Turns the Lua scripts into C at build time: run as
#   cmake -DOUT_DIR=... -DSOURCES="a.lua;b.lua" -P embed.cmake
# It writes two pairs of files into OUT_DIR:
# - lua_sources.c/.h: each NAME.lua as `const char wharf_lua_NAME[]`, its
#   bytes and a NUL, so the C client, the host and the CLI send exactly the
#   file's text (the file is also what other-language clients load, and
#   what its SHA1 is of). Bytes are written as hex so no Lua text needs
#   escaping for C.
# - lua_scripts.c/.h: the protocol each header states (sdk/lua/README.md
#   says how a header is written): `const script script_NAME` (the text
#   and its SHA1), the table script_specs (keys in order, argv, reply
#   words), and per script the counts, a reply-word enum with its decoder
#   and the typed functions that build the call (script_NAME_keys,
#   script_NAME_args and, for a script whose keys are all numbered,
#   script_NAME_call).
# A header that does not follow the form stops the build, naming the file
# and the line.
cmake_minimum_required(VERSION 3.20)
if(NOT OUT_DIR OR NOT SOURCES)
  message(FATAL_ERROR "embed.cmake: OUT_DIR and SOURCES are required")
endif()

set(banner "/* Generated from the .lua files of sdk/lua by sdk/lua/embed.cmake:\n * do not edit. */\n")

# ---- reading a header ----

# Stops the build: file:line: what is wrong.
macro(header_error what)
  message(FATAL_ERROR "${source}:${line_no}: ${what} (see sdk/lua/README.md)")
endmacro()

# Reads one key token of a numbered, then or each item into
# key_what / key_form (TYPE, TASK, WHOLE or NONE) / key_placeholder ("-"
# for none: a CMake list keeps no empty item).
macro(read_key token numbered)
  if("${token}" MATCHES "^([a-z_]+)$")
    set(key_what "${CMAKE_MATCH_1}")
    set(key_form TYPE)
    set(key_placeholder "-")
  elseif("${token}" MATCHES "^([a-z_]+):<([a-z0-9_]+)>$")
    set(key_what "${CMAKE_MATCH_1}")
    set(key_form TASK)
    set(key_placeholder "${CMAKE_MATCH_2}")
    if(${numbered} AND NOT key_placeholder STREQUAL "id")
      header_error("a numbered key of a task is <what>:<id>")
    endif()
  elseif("${token}" MATCHES "^<([a-z_]+)>$")
    set(key_what "${CMAKE_MATCH_1}")
    set(key_placeholder "-")
    if(${numbered})
      set(key_form WHOLE)
    else()
      set(key_form NONE)
    endif()
  else()
    header_error("'${token}' is not a key: what, what:<id> or <name>")
  endif()
endmacro()

# Parses the header of ${source} (a script called ${name}) into
# keys, key_forms, key_placeholders (the numbered keys), then_keys,
# then_forms, each_keys, each_placeholders, args, then_args and words.
function(parse_header)
  file(READ ${source} text)
  string(REGEX MATCH "^(--[^\n]*\n)+" header "${text}")
  # Only the tokens matter here: characters a CMake list would take for
  # its own go before the header is split into lines.
  string(REGEX REPLACE "[][;\\\\]" " " header "${header}")
  string(REPLACE "\n" ";" lines "${header}")
  foreach(list keys key_forms key_placeholders then_keys then_forms
          each_keys each_placeholders args then_args words)
    set(${list} "")
  endforeach()
  set(section "")
  set(done OFF)
  set(line_no 0)
  foreach(l IN LISTS lines)
    math(EXPR line_no "${line_no} + 1")
    if(line_no EQUAL 1)
      if(NOT l MATCHES "^-- ${name}: ")
        header_error("the first line is \"-- ${name}: what it does\"")
      endif()
      continue()
    endif()
    if(done)
      break()
    endif()
    if(l MATCHES "^-- (KEYS|ARGV|Reply):")
      set(want_KEYS "")
      set(want_ARGV "KEYS")
      set(want_Reply "ARGV")
      if(NOT section STREQUAL "${want_${CMAKE_MATCH_1}}")
        header_error("sections are KEYS:, ARGV:, Reply:, once each, in that order")
      endif()
      set(section "${CMAKE_MATCH_1}")
      set(number 0)
      set(tail OFF)
    elseif(l MATCHES "^--    ")
      # continues an item or a section's first line
    elseif(section STREQUAL "")
      # the title's prose, before KEYS:
    elseif(l MATCHES "^--   ([^ ]+) *([^ ]*)")
      set(tag "${CMAKE_MATCH_1}")
      set(token "${CMAKE_MATCH_2}")
      if(section STREQUAL "Reply")
        if(NOT tag MATCHES "^[A-Za-z][A-Za-z_]*$")
          header_error("a reply item starts with its word")
        endif()
        list(APPEND words "${tag}")
      elseif(tag MATCHES "^[0-9]+$")
        math(EXPR number "${number} + 1")
        if(NOT tag EQUAL number OR tail)
          header_error("numbered items count 1, 2, ... before any then or each")
        endif()
        if(section STREQUAL "KEYS")
          read_key("${token}" ON)
          list(APPEND keys "${key_what}")
          list(APPEND key_forms "${key_form}")
          list(APPEND key_placeholders "${key_placeholder}")
        else()
          if(NOT token MATCHES "^[a-z][a-z0-9_]*$" OR
             token MATCHES "^(cmd|prefix)$")
            header_error("an argument is named by a C identifier (not cmd or prefix)")
          endif()
          if(token IN_LIST args)
            header_error("argument '${token}' is named twice")
          endif()
          list(APPEND args "${token}")
        endif()
      elseif(tag STREQUAL "then" OR tag STREQUAL "each")
        set(tail ON)
        if(token STREQUAL "")
          header_error("'${tag}' is followed by a key or a name")
        endif()
        if(section STREQUAL "ARGV")
          if(tag STREQUAL "each" OR NOT token MATCHES "^(<[a-z_]+>|[a-z][a-z0-9_]*)$")
            header_error("an argument after the numbered ones is \"then name\" or \"then <name>\"")
          endif()
          list(APPEND then_args "${token}")
        else()
          read_key("${token}" OFF)
          if(tag STREQUAL "then")
            list(APPEND then_keys "${key_what}")
            list(APPEND then_forms "${key_form}")
          elseif(NOT key_form STREQUAL "TASK")
            header_error("an each key is what:<name>")
          else()
            list(APPEND each_keys "${key_what}")
            list(APPEND each_placeholders "${key_placeholder}")
          endif()
        endif()
      else()
        header_error("an item starts with its number, then or each")
      endif()
    elseif(section STREQUAL "Reply")
      set(done ON) # the free prose after the sections
    else()
      header_error("inside KEYS: and ARGV: a line is an item (\"--   \") or continues one (\"--    ...\")")
    endif()
  endforeach()
  if(NOT section STREQUAL "Reply")
    header_error("no KEYS:, ARGV: and Reply: sections")
  endif()
  foreach(list keys key_forms key_placeholders then_keys then_forms
          each_keys each_placeholders args then_args words)
    set(${list} "${${list}}" PARENT_SCOPE)
  endforeach()
endfunction()

# ---- writing C ----

# "a", "b" for the list a;b (or NULL when empty, with n = 0).
function(c_strings out)
  set(s "")
  foreach(item IN LISTS ARGN)
    string(APPEND s "\"${item}\", ")
  endforeach()
  string(REGEX REPLACE ", $" "" s "${s}")
  set(${out} "${s}" PARENT_SCOPE)
endfunction()

string(CONCAT sources_h "${banner}"
       "#ifndef WHARF_LUA_SOURCES_H\n#define WHARF_LUA_SOURCES_H\n\n"
       "/* Each array is a script's text with a NUL at its end. */\n")
string(CONCAT sources_c "${banner}" "#include \"lua_sources.h\"\n")

string(CONCAT scripts_h "${banner}" [=[
/* The protocol of every sdk/lua script, as its header states it
 * (sdk/lua/README.md): its text and SHA1, its keys in order, its
 * arguments and its reply words, and typed functions that build a call.
 * A change of a header changes these names and signatures, so a caller
 * left behind fails to build rather than send a call the script reads
 * otherwise. */
#ifndef WHARF_LUA_SCRIPTS_H
#define WHARF_LUA_SCRIPTS_H

#include <stddef.h>

#include "command.h"
#include "script.h"

/* How a key is made (keys.h). */
typedef enum script_key_form {
    SCRIPT_KEY_OF_TYPE, /* "<prefix>:{<type>}:<what>" */
    SCRIPT_KEY_OF_TASK, /* "<prefix>:{<type>}:<what>:<placeholder>" */
    SCRIPT_KEY_WHOLE,   /* a key the caller gives whole; what names it */
    SCRIPT_KEY_PROSE    /* a "then <name>" key: its header says which */
} script_key_form;

typedef struct script_key {
    const char *what;
    script_key_form form;
    const char *placeholder; /* of a task key: "id", "id1", ...; else "" */
} script_key;

/* One script's header. The numbered keys come first; then, per call,
 * each "then" key as a run of one key per task, or the "each" keys
 * repeated per task in their order. The numbered arguments come first,
 * then the "then" ones (names, or "<name>" for what the header says). */
typedef struct script_spec {
    const script *script;
    const script_key *keys;
    size_t n_keys;
    const script_key *then_keys;
    size_t n_then_keys;
    const script_key *each_keys;
    size_t n_each_keys;
    const char *const *args;
    size_t n_args;
    const char *const *then_args;
    size_t n_then_args;
    const char *const *words; /* reply words, as the script spells them */
    size_t n_words;
} script_spec;

/* The index of word among spec's reply words, or -1. */
int script_spec_word(const script_spec *spec, const char *word);

/* The spec of the script called name, or NULL. */
const script_spec *script_spec_named(const char *name);

/* Starts the call of spec's script in cmd (EVALSHA) and pushes its
 * numbered keys of the type and of task id, as script_NAME_keys does,
 * for a caller that holds a spec rather than a name. 0, or -1 when a key
 * does not fit or is one the caller gives whole. */
int script_spec_keys(command *cmd, const script_spec *spec, const char *prefix,
                     const char *type, const char *id);

/* The typed functions below are one per script:
 * - script_NAME_keys starts the call in cmd (EVALSHA, command.h) and
 *   pushes its numbered keys, made from prefix, type and id (or given
 *   whole). Push any further keys after it.
 * - script_NAME_args pushes its numbered arguments, copied; a NULL one
 *   ends them (an optional last argument is left out). Push any further
 *   arguments after it.
 * - script_NAME_call, for a script whose keys are all numbered: both
 *   (an argument named id or type is the key's).
 * Each returns 0, or -1 when a key does not fit KEY_MAX or cmd->err is
 * set (command.h: the error is sticky, so checking the last is enough). */
]=])
string(CONCAT scripts_c "${banner}" [=[
#include "lua_scripts.h"

#include <string.h>

#include "keys.h"
#include "lua_sources.h"

/* Pushes the key what (of the type, or of task id when id is not NULL). */
static int push_key(command *cmd, const char *prefix, const char *type,
                    const char *what, const char *id)
{
    char key[KEY_MAX];
    int len = id ? key_of_task(key, sizeof(key), prefix, type, what, id)
                 : key_of_type(key, sizeof(key), prefix, type, what);

    if (len < 0)
        return -1;
    return command_push_key_copy(cmd, key, (size_t)len);
}

static int push_whole_key(command *cmd, const char *key)
{
    return command_push_key_copy(cmd, key, strlen(key));
}

static int push_args(command *cmd, const char *const *argv, size_t n)
{
    for (size_t i = 0; i < n && argv[i]; i++)
        command_push_copy(cmd, argv[i], strlen(argv[i]));
    return cmd->err ? -1 : 0;
}

int script_spec_keys(command *cmd, const script_spec *spec, const char *prefix,
                     const char *type, const char *id)
{
    command_evalsha(cmd, spec->script->sha);
    for (size_t i = 0; i < spec->n_keys; i++) {
        const script_key *k = &spec->keys[i];
        if (k->form == SCRIPT_KEY_WHOLE ||
            push_key(cmd, prefix, type, k->what,
                     k->form == SCRIPT_KEY_OF_TASK ? id : NULL) != 0)
            return -1;
    }
    return cmd->err ? -1 : 0;
}

int script_spec_word(const script_spec *spec, const char *word)
{
    for (size_t i = 0; i < spec->n_words; i++)
        if (strcmp(spec->words[i], word) == 0)
            return (int)i;
    return -1;
}
]=])

set(form_TYPE SCRIPT_KEY_OF_TYPE)
set(form_TASK SCRIPT_KEY_OF_TASK)
set(form_WHOLE SCRIPT_KEY_WHOLE)
set(form_NONE SCRIPT_KEY_PROSE)
set(reserved init load build append run run_command is_noscript spec_word
    spec_named spec_keys)

set(names "")
foreach(source IN LISTS SOURCES)
  get_filename_component(name ${source} NAME_WE)
  set(line_no 1)
  if(NOT name MATCHES "^[a-z_][a-z0-9_]*$")
    header_error("a script name must be a C identifier")
  endif()
  if(name IN_LIST reserved)
    header_error("'${name}' would name a function of script.h")
  endif()
  list(APPEND names ${name})

  # lua_sources
  file(READ ${source} hex HEX)
  string(LENGTH "${hex}" length)
  set(lines "")
  # 12 bytes (24 hex digits) a line.
  foreach(at RANGE 0 ${length} 24)
    string(SUBSTRING "${hex}" ${at} 24 chunk)
    if(NOT chunk STREQUAL "")
      string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1, " chunk "${chunk}")
      string(APPEND lines "    ${chunk}\n")
    endif()
  endforeach()
  string(APPEND sources_h "extern const char wharf_lua_${name}[];\n")
  string(APPEND sources_c "\nconst char wharf_lua_${name}[] = {\n${lines}    0x00};\n")

  # lua_scripts
  file(SHA1 ${source} sha)
  parse_header()
  string(TOUPPER "${name}" NAME)
  list(LENGTH keys n_keys)
  list(LENGTH then_keys n_then_keys)
  list(LENGTH each_keys n_each_keys)
  list(LENGTH args n_args)
  list(LENGTH then_args n_then_args)
  list(LENGTH words n_words)

  # The parameters the keys are made of.
  set(key_params "")
  set(key_names "")
  if(key_forms MATCHES "TYPE|TASK")
    set(key_params "const char *prefix, const char *type")
    set(key_names prefix type)
  endif()
  if(key_forms MATCHES "TASK")
    string(APPEND key_params ", const char *id")
    list(APPEND key_names id)
  endif()
  set(body_keys "")
  set(indices "")
  if(n_keys GREATER 0)
    math(EXPR last "${n_keys} - 1")
    foreach(i RANGE ${last})
      list(APPEND indices ${i})
    endforeach()
  endif()
  foreach(i IN LISTS indices)
    list(GET keys ${i} what)
    list(GET key_forms ${i} form)
    if(form STREQUAL "WHOLE")
      if(what IN_LIST key_names)
        set(line_no ${i})
        header_error("key <${what}> has the name of a parameter")
      endif()
      if(key_params STREQUAL "")
        set(key_params "const char *${what}")
      else()
        string(APPEND key_params ", const char *${what}")
      endif()
      list(APPEND key_names ${what})
      string(APPEND body_keys "    push_whole_key(cmd, ${what});\n")
    elseif(form STREQUAL "TASK")
      string(APPEND body_keys "    if (push_key(cmd, prefix, type, \"${what}\", id) != 0)\n        return -1;\n")
    else()
      string(APPEND body_keys "    if (push_key(cmd, prefix, type, \"${what}\", NULL) != 0)\n        return -1;\n")
    endif()
  endforeach()
  set(arg_params "")
  foreach(arg IN LISTS args)
    string(APPEND arg_params ", const char *${arg}")
  endforeach()
  string(REGEX REPLACE "^, " "" arg_params "${arg_params}")
  # script_NAME_call: the args not already among the key parameters.
  set(call_params "${key_params}")
  set(call_names "${key_names}")
  foreach(arg IN LISTS args)
    if(NOT arg IN_LIST call_names)
      if(call_params STREQUAL "")
        set(call_params "const char *${arg}")
      else()
        string(APPEND call_params ", const char *${arg}")
      endif()
    endif()
  endforeach()
  string(REPLACE ";" ", " arg_list "${args}")

  # The spec's tables.
  set(tables "")
  foreach(part keys then_keys each_keys)
    if(part STREQUAL "keys")
      set(forms "${key_forms}")
      set(places "${key_placeholders}")
    elseif(part STREQUAL "then_keys")
      set(forms "${then_forms}")
      set(places "")
    else()
      set(places "${each_placeholders}")
      set(forms "")
    endif()
    list(LENGTH ${part} n)
    if(n EQUAL 0)
      set(${part}_ref "NULL")
      continue()
    endif()
    set(items "")
    math(EXPR last "${n} - 1")
    foreach(i RANGE ${last})
      list(GET ${part} ${i} what)
      if(part STREQUAL "each_keys")
        set(form TASK)
      else()
        list(GET forms ${i} form)
      endif()
      set(place "")
      if(form STREQUAL "TASK")
        if(part STREQUAL "then_keys")
          set(place "id")
        else()
          list(GET places ${i} place)
        endif()
      endif()
      string(APPEND items "    {\"${what}\", ${form_${form}}, \"${place}\"},\n")
    endforeach()
    string(APPEND tables "static const script_key ${name}_${part}[] = {\n${items}};\n")
    set(${part}_ref "${name}_${part}")
  endforeach()
  foreach(part args then_args words)
    list(LENGTH ${part} n)
    if(n EQUAL 0)
      set(${part}_ref "NULL")
    else()
      c_strings(s ${${part}})
      string(APPEND tables "static const char *const ${name}_${part}[] = {${s}};\n")
      set(${part}_ref "${name}_${part}")
    endif()
  endforeach()

  # The header's part for this script.
  string(APPEND scripts_h "
/* ---- sdk/lua/${name}.lua ---- */
extern const script script_${name};
extern const script_spec script_${name}_spec;
enum { SCRIPT_${NAME}_KEYS = ${n_keys}, SCRIPT_${NAME}_ARGS = ${n_args} };
")
  if(n_each_keys GREATER 0)
    string(APPEND scripts_h "enum { SCRIPT_${NAME}_EACH_KEYS = ${n_each_keys} };\n")
  endif()
  if(n_words GREATER 0)
    set(enum "    SCRIPT_${NAME}_NO_WORD = -1,\n")
    foreach(word IN LISTS words)
      string(TOUPPER "${word}" WORD)
      string(APPEND enum "    SCRIPT_${NAME}_${WORD},\n")
    endforeach()
    string(APPEND scripts_h "typedef enum script_${name}_word {\n${enum}} script_${name}_word;
/* The reply word's enum, or SCRIPT_${NAME}_NO_WORD. */
script_${name}_word script_${name}_word_of(const char *word);
")
    string(APPEND scripts_c "
script_${name}_word script_${name}_word_of(const char *word)
{
    return (script_${name}_word)script_spec_word(&script_${name}_spec, word);
}
")
  endif()
  if(key_params STREQUAL "")
    set(keys_sig "command *cmd")
  else()
    set(keys_sig "command *cmd, ${key_params}")
  endif()
  string(APPEND scripts_h "int script_${name}_keys(${keys_sig});\n")
  string(APPEND scripts_c "
const script script_${name} = {
    .name = \"${name}\", .source = wharf_lua_${name}, .sha = \"${sha}\"};
${tables}
const script_spec script_${name}_spec = {
    .script = &script_${name},
    .keys = ${keys_ref}, .n_keys = ${n_keys},
    .then_keys = ${then_keys_ref}, .n_then_keys = ${n_then_keys},
    .each_keys = ${each_keys_ref}, .n_each_keys = ${n_each_keys},
    .args = ${args_ref}, .n_args = ${n_args},
    .then_args = ${then_args_ref}, .n_then_args = ${n_then_args},
    .words = ${words_ref}, .n_words = ${n_words}};

int script_${name}_keys(${keys_sig})
{
    command_evalsha(cmd, script_${name}.sha);
${body_keys}    return cmd->err ? -1 : 0;
}
")
  if(n_args GREATER 0)
    string(APPEND scripts_h "int script_${name}_args(command *cmd, ${arg_params});\n")
    string(APPEND scripts_c "
int script_${name}_args(command *cmd, ${arg_params})
{
    const char *const argv[] = {${arg_list}};

    return push_args(cmd, argv, ${n_args});
}
")
  endif()
  if(n_then_keys EQUAL 0 AND n_each_keys EQUAL 0)
    set(call_args "")
    if(n_args GREATER 0)
      set(call_args " ||\n           script_${name}_args(cmd, ${arg_list}) != 0")
    endif()
    string(REPLACE ";" ", " key_list "${key_names}")
    if(key_list STREQUAL "")
      set(key_list "cmd")
    else()
      set(key_list "cmd, ${key_list}")
    endif()
    string(APPEND scripts_h "int script_${name}_call(command *cmd, ${call_params});\n")
    string(APPEND scripts_c "
int script_${name}_call(command *cmd, ${call_params})
{
    return script_${name}_keys(${key_list}) != 0${call_args}
               ? -1
               : 0;
}
")
  endif()
endforeach()

list(LENGTH names n_scripts)
set(all "")
set(named "")
foreach(name IN LISTS names)
  string(APPEND all "    &script_${name}_spec,\n")
endforeach()
string(APPEND scripts_h "
/* Every script, in the order of their names. */
enum { SCRIPT_SPEC_COUNT = ${n_scripts} };
extern const script_spec *const script_specs[SCRIPT_SPEC_COUNT];

#endif /* WHARF_LUA_SCRIPTS_H */
")
string(APPEND scripts_c "
const script_spec *const script_specs[SCRIPT_SPEC_COUNT] = {
${all}};

const script_spec *script_spec_named(const char *name)
{
    for (size_t i = 0; i < SCRIPT_SPEC_COUNT; i++)
        if (strcmp(script_specs[i]->script->name, name) == 0)
            return script_specs[i];
    return NULL;
}
")
string(APPEND sources_h "\n#endif /* WHARF_LUA_SOURCES_H */\n")

file(WRITE ${OUT_DIR}/lua_sources.h "${sources_h}")
file(WRITE ${OUT_DIR}/lua_sources.c "${sources_c}")
file(WRITE ${OUT_DIR}/lua_scripts.h "${scripts_h}")
file(WRITE ${OUT_DIR}/lua_scripts.c "${scripts_c}")
