# Runs at install time (see install.cmake): writes the installed manifest
# and the systemd unit with the paths of the prefix being installed to.
# In: WHARF_SOURCE_DIR, WHARF_BINARY_DIR, WHARF_SBINDIR, WHARF_SYSCONFDIR
# (relative or absolute), WHARF_SYSTEMD_UNIT_DIR (relative to the prefix,
# or empty).

set(prefix "${CMAKE_INSTALL_PREFIX}")
# GNU install dirs: with the prefix /usr the configuration lives in /etc.
if(IS_ABSOLUTE "${WHARF_SYSCONFDIR}")
  set(sysconfdir "${WHARF_SYSCONFDIR}")
elseif(prefix STREQUAL "/usr")
  set(sysconfdir "/etc")
else()
  set(sysconfdir "${prefix}/${WHARF_SYSCONFDIR}")
endif()
if(NOT WHARF_SYSTEMD_UNIT_DIR)
  set(WHARF_SYSTEMD_UNIT_DIR lib/systemd/system)
endif()
set(SBINDIR "${prefix}/${WHARF_SBINDIR}")
set(SYSCONFDIR "${sysconfdir}")
set(PLUGINDIR "${prefix}/lib/wharf/plugins")
set(STATEDIR "/var/lib/wharf") # the unit's StateDirectory=wharf

set(stage "${WHARF_BINARY_DIR}/wharf-install-stage")
file(MAKE_DIRECTORY "${stage}")

# The manifest: etc/wharf.ini with the installed folders, and autoload off
# (lib/wharf/plugins also holds chaos, a test plugin, and webhook, which
# needs its [plugin.webhook] section): production serves what it names.
file(READ "${WHARF_SOURCE_DIR}/etc/wharf.ini" ini)
string(REGEX REPLACE "\nplugins_dir = [^\n]*" "\nplugins_dir = ${PLUGINDIR}"
       ini "${ini}")
string(REGEX REPLACE "\nautoload = [^\n]*"
       "\nautoload = no                     ; serve only the plugins named below"
       ini "${ini}")
string(REGEX REPLACE "\ndata_dir = [^\n]*"
       "\ndata_dir = ${STATEDIR}         ; the unit's StateDirectory"
       ini "${ini}")
string(REGEX REPLACE "; wharf manifest: the example that `make demo` runs\\."
       "; wharf manifest of the installed wharfd (wharf.ini(5))." ini "${ini}")
string(REGEX REPLACE "\n; chaos\\.so \\(a test plugin\\)[^\n]*\n[^\n]*\n" "\n"
       ini "${ini}")
string(REGEX REPLACE "\n\\[type\\.chaos\\]\n[^\n]*\n[^\n]*\n?" "\n" ini "${ini}")
file(WRITE "${stage}/wharf.ini" "${ini}")

# Never overwrite an operator's manifest.
set(ini_dest "$ENV{DESTDIR}${sysconfdir}/wharf/wharf.ini")
if(EXISTS "${ini_dest}")
  message(STATUS "Keeping: ${ini_dest} (the new default is not installed)")
else()
  file(INSTALL DESTINATION "${sysconfdir}/wharf" TYPE FILE
       FILES "${stage}/wharf.ini")
endif()

configure_file("${WHARF_SOURCE_DIR}/etc/systemd/wharfd.service.in"
               "${stage}/wharfd.service" @ONLY)
# wharf.service, a link beside it: a link in the unit folder is an alias
# systemd always knows (no `systemctl enable` needed), so `systemctl start
# wharf`, the package's name, works as well as wharfd.
file(CREATE_LINK wharfd.service "${stage}/wharf.service" SYMBOLIC)
file(INSTALL DESTINATION "${prefix}/${WHARF_SYSTEMD_UNIT_DIR}" TYPE FILE
     FILES "${stage}/wharfd.service" "${stage}/wharf.service")
