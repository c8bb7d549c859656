# Install rules, the man page and the Debian package (CPack). ci/package.sh
# builds the package; ci/package-test.sh installs it into a minimal Debian 12.
include(GNUInstallDirs)

# The version has one source, project() above; a build from a checkout adds
# `git describe` to `perfgate --version` (refreshed on every configure, which
# ci/package.sh runs each time). A build without .git can pass it in:
# -DPERFGATE_GIT_DESCRIBE=v0.1.0-3-gabcdef0 (the Dockerfile does).
if(NOT DEFINED PERFGATE_GIT_DESCRIBE AND EXISTS "${PROJECT_SOURCE_DIR}/.git")
  find_package(Git QUIET)
  if(GIT_FOUND)
    execute_process(COMMAND "${GIT_EXECUTABLE}" describe --tags --always --dirty
                    WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}"
                    OUTPUT_VARIABLE perfgate_describe OUTPUT_STRIP_TRAILING_WHITESPACE
                    RESULT_VARIABLE perfgate_describe_status ERROR_QUIET)
    if(perfgate_describe_status EQUAL 0)
      set(perfgate_git_describe "${perfgate_describe}")
    endif()
  endif()
elseif(DEFINED PERFGATE_GIT_DESCRIBE)
  set(perfgate_git_describe "${PERFGATE_GIT_DESCRIBE}")
endif()
# Only the file that prints it: a new commit recompiles one file, not a stage.
set_property(SOURCE src/cli/cli.cc APPEND PROPERTY COMPILE_DEFINITIONS
             PERFGATE_GIT_DESCRIBE="${perfgate_git_describe}")

install(TARGETS perfgate RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY schemas/ DESTINATION ${CMAKE_INSTALL_DATADIR}/perfgate/schemas
        FILES_MATCHING PATTERN "*.json")
install(FILES README.md docs/ci.md docs/profile.md docs/result.md docs/statistics.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES ci/profiles/hello.json ci/profiles/hello-paired.json ci/profiles/hello-sharded.json
              docs/profile-example.json
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)

# The man page is written from the built binary's own --help, so it cannot
# drift from the flags (cmake/manpage.sh). Compressed, as Debian wants it.
set(perfgate_man "${PROJECT_BINARY_DIR}/perfgate.1.gz")
add_custom_command(
  OUTPUT "${perfgate_man}"
  COMMAND sh "${PROJECT_SOURCE_DIR}/cmake/manpage.sh" "$<TARGET_FILE:perfgate>" "${PROJECT_VERSION}"
          "${PROJECT_BINARY_DIR}/perfgate.1"
  COMMAND gzip -9nf "${PROJECT_BINARY_DIR}/perfgate.1"
  DEPENDS perfgate "${PROJECT_SOURCE_DIR}/cmake/manpage.sh"
  COMMENT "Writing perfgate.1 from perfgate --help")
add_custom_target(perfgate_man ALL DEPENDS "${perfgate_man}")
install(FILES "${perfgate_man}" DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)

# Debian wants a copyright file and a changelog in the package's doc folder.
set(perfgate_changelog "${PROJECT_BINARY_DIR}/changelog.gz")
# string(TIMESTAMP) honours SOURCE_DATE_EPOCH, for a reproducible package.
string(TIMESTAMP perfgate_changelog_date "%a, %d %b %Y %H:%M:%S +0000" UTC)
if(perfgate_git_describe)
  set(perfgate_changelog_describe " (git ${perfgate_git_describe})")
endif()
configure_file(cmake/debian/changelog.in "${PROJECT_BINARY_DIR}/changelog" @ONLY)
add_custom_command(
  OUTPUT "${perfgate_changelog}"
  COMMAND gzip -9nc "${PROJECT_BINARY_DIR}/changelog" > "${perfgate_changelog}"
  DEPENDS "${PROJECT_BINARY_DIR}/changelog")
add_custom_target(perfgate_changelog ALL DEPENDS "${perfgate_changelog}")
install(FILES "${perfgate_changelog}" cmake/debian/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR})

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME perfgate)
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_CONTACT "perfgate maintainers <maintainers@users.noreply.a-seed-8c0d7fb0.example>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "performance gate for CI pipelines")
# The synopsis is the summary above; CPack indents these lines as Debian's
# extended description.
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "perfgate runs a pinned HTTP benchmark profile against a service, records the
results with the load machine's facts in a SQLite baseline store, compares
them with earlier builds and answers with an exit code (0 pass, 1 fail,
2 warn, 3 error) and JUnit, JSON and Markdown reports.")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Depends: exactly the shared libraries the binary links, as dpkg-shlibdeps
# finds them (ci/package-test.sh checks the list holds no -dev package).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# The cost phase's instrument (docs/cost.md): without it that phase is skipped.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "valgrind")
set(CPACK_STRIP_FILES ON)
set(CPACK_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS
    OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
include(CPack)
