# Run by `cmake --install` (loader/CMakeLists.txt, "Run paths"): the installed tools and libraries
# were linked with the SDK's folder as their run path; in an install tree that holds the SDK they
# find it beside libfatpte instead, so the tree runs after the build tree and its SDK are gone.
# file(RPATH_CHANGE) writes in place: the new run path must be no longer than the SDK's folder.
function(fatpte_set_rpath relative rpath)
  set(file "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}/${relative}")
  file(READ_ELF "${file}" RUNPATH current)
  if(current STREQUAL rpath)  # installed before, and up to date
    return()
  endif()
  string(LENGTH "${rpath}" new_length)
  string(LENGTH "${FATPTE_BUILD_RPATH}" old_length)
  if(new_length GREATER old_length)
    message(FATAL_ERROR "fatpte: the run path ${rpath} of ${file} is longer than the SDK folder it "
      "replaces (${FATPTE_BUILD_RPATH}); configure with -DFATPTE_INSTALL_EXECUTORCH_SDK=OFF to keep that one")
  endif()
  file(RPATH_CHANGE FILE "${file}" OLD_RPATH "${FATPTE_BUILD_RPATH}" NEW_RPATH "${rpath}")
endfunction()

foreach(relative ${FATPTE_INSTALLED_TOOLS})
  fatpte_set_rpath("${relative}" "$ORIGIN/../${FATPTE_INSTALL_LIBDIR}")
endforeach()
foreach(relative ${FATPTE_INSTALLED_LIBRARIES})
  fatpte_set_rpath("${relative}" "$ORIGIN")
endforeach()
