# cmake/AmkInstall.cmake: `cmake --install` and the exported package. A host application does
#   find_package(amk 0.2 REQUIRED)
#   target_link_libraries(app PRIVATE amk::amk)
# amk::amk brings every library (amk::ir ... amk::vm) and their public dependencies. Headers are
# installed with the repo's layout under <prefix>/include/amk ("vm/session.h", "ir/program.h"), the
# directory on the interface include path, so public headers keep including each other as
# "ir/...". The CMake package goes to <prefix>/lib/cmake/amk; the tools to <prefix>/bin.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(AMK_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/amk)
set(AMK_INSTALL_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR}/amk)

# Exported as amk::<name>, matching the in-tree aliases (amk::ir, amk::vm, ...).
set(AMK_EXPORTED_LIBS ir targets abi instructions loader schedule vm)
# GPU VM libraries, when this build has them (amk_vm links them, so they must be exported too).
set(AMK_EXPORTED_GPU_LIBS)
foreach(t amk_vm_cuda amk_vm_cuda_kernel amk_vm_hip amk_vm_hip_kernel)
  if(TARGET ${t})
    list(APPEND AMK_EXPORTED_GPU_LIBS ${t})
  endif()
endforeach()

add_library(amk INTERFACE)
add_library(amk::amk ALIAS amk)
set(AMK_EXPORT_TARGETS amk ${AMK_EXPORTED_GPU_LIBS})
foreach(name ${AMK_EXPORTED_LIBS})
  target_include_directories(amk_${name} INTERFACE $<INSTALL_INTERFACE:${AMK_INSTALL_INCLUDEDIR}>)
  set_target_properties(amk_${name} PROPERTIES EXPORT_NAME ${name})
  target_link_libraries(amk INTERFACE amk_${name})
  list(APPEND AMK_EXPORT_TARGETS amk_${name})
endforeach()
foreach(t ${AMK_EXPORTED_GPU_LIBS})
  target_include_directories(${t} INTERFACE $<INSTALL_INTERFACE:${AMK_INSTALL_INCLUDEDIR}>)
endforeach()
# The libraries link amk_warnings PRIVATE; static libraries still name it ($<LINK_ONLY:...>, which
# carries no flags to consumers), so it has to be in the export set.
set_target_properties(amk_warnings PROPERTIES EXPORT_NAME internal_warnings)
list(APPEND AMK_EXPORT_TARGETS amk_warnings)

install(TARGETS ${AMK_EXPORT_TARGETS} EXPORT amkTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(EXPORT amkTargets NAMESPACE amk:: DESTINATION ${AMK_INSTALL_CMAKEDIR})

foreach(dir ir targets schedule loader instructions vm)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}/ DESTINATION ${AMK_INSTALL_INCLUDEDIR}/${dir}
          FILES_MATCHING PATTERN "*.h" PATTERN "*.def")
endforeach()

install(TARGETS amk-run amk-validate amk-compile amk-bench amk-bench-validate
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/amkConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/amkConfig.cmake
                              INSTALL_DESTINATION ${AMK_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/amkConfigVersion.cmake
                                 COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/amkConfig.cmake ${PROJECT_BINARY_DIR}/amkConfigVersion.cmake
        DESTINATION ${AMK_INSTALL_CMAKEDIR})
