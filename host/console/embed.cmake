# Writes OUT, a C file holding the console's page and assets (SRC_DIR/*)
# as byte arrays, so wharfd serves them with no file and no network:
#   cmake -DSRC_DIR=host/console -DOUT=console_assets.c -P embed.cmake
set(assets
  "index.html|text/html"
  "console.js|text/javascript"
  "groups.js|text/javascript"
  "console.css|text/css")
set(body "/* Generated from host/console/ by embed.cmake: do not edit. */\n")
string(APPEND body "#include <stddef.h>\n\n")
string(APPEND body "typedef struct console_asset {\n    const char *path;\n"
  "    const char *content_type;\n    const unsigned char *data;\n"
  "    size_t len;\n} console_asset;\n\n")
set(table "")
set(i 0)
foreach(entry ${assets})
  string(REPLACE "|" ";" parts "${entry}")
  list(GET parts 0 name)
  list(GET parts 1 type)
  file(READ "${SRC_DIR}/${name}" hex HEX)
  string(LENGTH "${hex}" hex_len)
  math(EXPR len "${hex_len} / 2")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  string(REGEX REPLACE "((0x..,){16})" "\\1\n" bytes "${bytes}")
  string(APPEND body "static const unsigned char asset_${i}[] = {\n${bytes}0};\n")
  string(APPEND table "    {\"/console/${name}\", \"${type}\" \"; charset=utf-8\", asset_${i}, ${len}},\n")
  math(EXPR i "${i} + 1")
endforeach()
string(APPEND body "\nextern const console_asset console_assets[];\n")
string(APPEND body "const console_asset console_assets[] = {\n${table}    {NULL, NULL, NULL, 0}};\n")
file(WRITE "${OUT}.tmp" "${body}")
file(RENAME "${OUT}.tmp" "${OUT}")
