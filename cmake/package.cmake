# make deb: a Debian package of the install (CPack's DEB generator, with
# dpkg-shlibdeps for the library dependencies). Installs to /usr, the
# manifest to /etc/wharf (a conffile), creates the "wharf" system user
# and leaves enabling the service to the administrator.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME wharf)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "wharf")
set(WHARF_DEB_MAINTAINER "wharf maintainers <wharf@example.org>" CACHE STRING
    "Maintainer field of the Debian package")
set(CPACK_PACKAGE_CONTACT "${WHARF_DEB_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "plugin-based worker host for tasks queued in Redis")
set(CPACK_PACKAGE_DESCRIPTION
"wharfd pulls tasks from Redis streams and runs them through handler
plugins (shared objects), enforcing idempotency, locks, result caching,
retries, dead-lettering, backpressure and metrics itself. The package
holds wharfd, its systemd unit, the wharf CLI, the plugin SDK
(headers, pkg-config and CMake files), libwharf-client, and the echo,
chaos and webhook plugins, and the Python client (module wharf, on
python3-redis).")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION misc)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# A shlibs file for libwharf-client.so.0, so producers' packages can
# depend on it.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
# dpkg-shlibdeps must find libwharf-client.so.0 in the package itself.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS
    ${PROJECT_BINARY_DIR}/sdk)
# adduser for the system user; the embedded Redis needs redis-server.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser, redis-server (>= 5:7.0)")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "systemd")
# The Python client is for producers, not for wharfd.
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "python3, python3-redis (>= 4.3)")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/etc/debian/postinst
    ${PROJECT_SOURCE_DIR}/etc/debian/postrm
    ${PROJECT_SOURCE_DIR}/etc/debian/conffiles
    ${PROJECT_SOURCE_DIR}/etc/debian/triggers)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# The package's lintian overrides, each with its reason (the Debian
# package alone carries them: make install does not).
set(CPACK_INSTALLED_DIRECTORIES
    "${PROJECT_SOURCE_DIR}/etc/debian/lintian;usr/share/lintian/overrides")
include(CPack)
