# wharf_add_plugin(NAME SOURCE... [OUTPUT_DIR dir] [INSTALL])
#
# One plugin: NAME.so (a MODULE, no "lib" prefix) built from the sources
# against the plugin headers alone (the wharf::plugin target), linked with
# -z defs so a plugin that needs a symbol of the host fails at build time
# rather than at load. OUTPUT_DIR is where the .so goes (default: the
# current binary folder). INSTALL installs it into WHARF_PLUGIN_INSTALL_DIR
# (lib/wharf/plugins under the install prefix unless set: the
# folder the installed wharfd's manifest reads).
#
# The wharf source tree uses this very file, and installs it beside
# wharfConfig.cmake, so find_package(wharf) provides the same function.
function(wharf_add_plugin name)
  cmake_parse_arguments(P "INSTALL" "OUTPUT_DIR" "" ${ARGN})
  if(NOT P_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "wharf_add_plugin(${name}): no source file")
  endif()
  if(NOT P_OUTPUT_DIR)
    if(DEFINED WHARF_PLUGIN_DIR)
      set(P_OUTPUT_DIR ${WHARF_PLUGIN_DIR})
    else()
      set(P_OUTPUT_DIR ${CMAKE_CURRENT_BINARY_DIR})
    endif()
  endif()
  add_library(${name} MODULE ${P_UNPARSED_ARGUMENTS})
  target_link_libraries(${name} PRIVATE wharf::plugin)
  set_target_properties(${name} PROPERTIES PREFIX ""
                        LIBRARY_OUTPUT_DIRECTORY ${P_OUTPUT_DIR}
                        C_VISIBILITY_PRESET hidden)
  target_link_options(${name} PRIVATE -Wl,-z,defs)
  if(P_INSTALL)
    if(NOT WHARF_PLUGIN_INSTALL_DIR)
      set(WHARF_PLUGIN_INSTALL_DIR lib/wharf/plugins)
    endif()
    install(TARGETS ${name} LIBRARY DESTINATION ${WHARF_PLUGIN_INSTALL_DIR})
  endif()
endfunction()
