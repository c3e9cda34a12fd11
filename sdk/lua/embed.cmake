# Turns the Lua scripts into C at build time: run as
#   cmake -DOUT_C=... -DOUT_H=... -DSOURCES="a.lua;b.lua" -P embed.cmake
# Each NAME.lua becomes `const char wharf_lua_NAME[]`, its bytes and a NUL,
# so the C client, the host and the CLI send exactly the file's text (the
# file is also what other-language clients load, and what its SHA1 is of).
# Bytes are written as hex so no Lua text needs escaping for C.
if(NOT OUT_C OR NOT OUT_H OR NOT SOURCES)
  message(FATAL_ERROR "embed.cmake: OUT_C, OUT_H and SOURCES are required")
endif()

set(banner "/* Generated from the .lua files of sdk/lua by sdk/lua/embed.cmake:\n * do not edit. */\n")
string(CONCAT header "${banner}"
       "#ifndef WHARF_LUA_SOURCES_H\n#define WHARF_LUA_SOURCES_H\n\n"
       "/* Each array is a script's text with a NUL at its end. */\n")
string(CONCAT body "${banner}" "#include \"lua_sources.h\"\n")
foreach(source IN LISTS SOURCES)
  get_filename_component(name ${source} NAME_WE)
  if(NOT name MATCHES "^[a-z_][a-z0-9_]*$")
    message(FATAL_ERROR "embed.cmake: ${source}: a script name must be a C identifier")
  endif()
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
  string(APPEND header "extern const char wharf_lua_${name}[];\n")
  string(APPEND body "\nconst char wharf_lua_${name}[] = {\n${lines}    0x00};\n")
endforeach()
string(APPEND header "\n#endif /* WHARF_LUA_SOURCES_H */\n")

file(WRITE ${OUT_H} "${header}")
file(WRITE ${OUT_C} "${body}")
