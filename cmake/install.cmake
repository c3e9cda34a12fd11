# What `make install` (cmake --install) puts where, beyond the targets that
# install themselves (wharfd, wharf, libwharf-client, the headers and the
# example plugins). Every destination is relative to the install prefix,
# so `cmake --install build --prefix DIR` and DESTDIR both work; the two
# files that name other installed paths (the manifest and the systemd
# unit) are written at install time, from the prefix actually used.

# The Lua scripts the host and the client run, for operators who want to
# read or load them (sdk/lua/*.lua; whatever exists at configure time),
# beside the Prometheus rules and the Grafana dashboard built on them.
file(GLOB WHARF_LUA_SCRIPTS CONFIGURE_DEPENDS
     ${PROJECT_SOURCE_DIR}/sdk/lua/*.lua)
install(FILES ${WHARF_LUA_SCRIPTS} ${PROJECT_SOURCE_DIR}/etc/prometheus/wharf.rules.yml
              ${PROJECT_SOURCE_DIR}/etc/grafana/wharf.json
              ${PROJECT_SOURCE_DIR}/etc/wharf.acl
        DESTINATION ${CMAKE_INSTALL_DATADIR}/wharf)

# The Python client (package wharf, with wharf.handler), where Debian's
# python3 finds modules, when installing to /usr (make deb, or make
# install PREFIX=/usr): it runs the Lua scripts from share/wharf above.
# Under another prefix no one folder is read by every Python, so it is
# not installed there: pip installs it (clients/python/README.md).
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/clients/python/wharf
          DESTINATION lib/python3/dist-packages
          FILES_MATCHING PATTERN "*.py" PATTERN "py.typed"
          PATTERN "__pycache__" EXCLUDE)
endif()

# Man pages, gzipped as Debian installs them (man reads both).
set(WHARF_MAN_PAGES wharf.1 wharf-plugin.3 wharf.ini.5 wharfd.8)
set(WHARF_MAN_GZ)
foreach(page ${WHARF_MAN_PAGES})
  string(REGEX REPLACE ".*\\.([0-9])$" "\\1" section ${page})
  add_custom_command(OUTPUT ${PROJECT_BINARY_DIR}/man/${page}.gz
    COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/man
    COMMAND gzip -n -9 -c ${PROJECT_SOURCE_DIR}/man/${page}
            > ${PROJECT_BINARY_DIR}/man/${page}.gz
    DEPENDS ${PROJECT_SOURCE_DIR}/man/${page} VERBATIM)
  list(APPEND WHARF_MAN_GZ ${PROJECT_BINARY_DIR}/man/${page}.gz)
  install(FILES ${PROJECT_BINARY_DIR}/man/${page}.gz
          DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section})
endforeach()
add_custom_target(man_pages ALL DEPENDS ${WHARF_MAN_GZ})

# The docs, and what a Debian package needs beside them.
add_custom_command(OUTPUT ${PROJECT_BINARY_DIR}/changelog.gz
  COMMAND gzip -n -9 -c ${PROJECT_SOURCE_DIR}/etc/debian/changelog
          > ${PROJECT_BINARY_DIR}/changelog.gz
  DEPENDS ${PROJECT_SOURCE_DIR}/etc/debian/changelog VERBATIM)
add_custom_target(changelog ALL DEPENDS ${PROJECT_BINARY_DIR}/changelog.gz)
install(FILES README.md docs/manifest.md docs/tuning.md
              etc/debian/copyright ${PROJECT_BINARY_DIR}/changelog.gz
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
# The out-of-tree plugin template (hello.c, a Makefile on pkg-config, a
# CMakeLists.txt on find_package), for authors who have the package but
# not the source.
install(DIRECTORY sdk/template/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples/template)

set(WHARF_SYSTEMD_UNIT_DIR lib/systemd/system CACHE STRING
    "Where wharfd.service goes, relative to the install prefix")

# The manifest and the unit, made from the install-time prefix.
install(CODE "
  set(WHARF_SOURCE_DIR \"${PROJECT_SOURCE_DIR}\")
  set(WHARF_BINARY_DIR \"${PROJECT_BINARY_DIR}\")
  set(WHARF_SBINDIR \"${CMAKE_INSTALL_SBINDIR}\")
  set(WHARF_SYSCONFDIR \"${CMAKE_INSTALL_SYSCONFDIR}\")
  set(WHARF_SYSTEMD_UNIT_DIR \"${WHARF_SYSTEMD_UNIT_DIR}\")
  include(\"${PROJECT_SOURCE_DIR}/cmake/install_configured.cmake\")
")
