# What `make install` (cmake --install) puts where, beyond the targets that
# install themselves (wharfd, wharf, libwharf-client, the headers and the
# example plugins). Every destination is relative to the install prefix,
# so `cmake --install build --prefix DIR` and DESTDIR both work; the two
# files that name other installed paths (the manifest and the systemd
# unit) are written at install time, from the prefix actually used.

# The Lua scripts the host and the client run, for operators who want to
# read or load them (sdk/lua/*.lua; whatever exists at configure time).
file(GLOB WHARF_LUA_SCRIPTS CONFIGURE_DEPENDS
     ${PROJECT_SOURCE_DIR}/sdk/lua/*.lua)
install(FILES ${WHARF_LUA_SCRIPTS} ${PROJECT_SOURCE_DIR}/etc/prometheus/wharf.rules.yml
        DESTINATION ${CMAKE_INSTALL_DATADIR}/wharf)

install(FILES man/wharf.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES man/wharf-plugin.3 DESTINATION ${CMAKE_INSTALL_MANDIR}/man3)
install(FILES man/wharf.ini.5 DESTINATION ${CMAKE_INSTALL_MANDIR}/man5)
install(FILES man/wharfd.8 DESTINATION ${CMAKE_INSTALL_MANDIR}/man8)

install(FILES README.md docs/manifest.md docs/tuning.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})

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
