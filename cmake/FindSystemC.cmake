# Finds Debian's SystemC 2.3.4 and TLM-2.0 through pkg-config and defines SystemC::SystemC.
# Debian builds SystemC as C++17, so C++20 users must see SC_CPLUSPLUS=201703L or the link fails
# on sc_api_version_2_3_4_cxx202002L; the imported target carries that definition.
find_package(PkgConfig REQUIRED)
pkg_check_modules(SYSTEMC REQUIRED IMPORTED_TARGET systemc)
pkg_check_modules(TLM REQUIRED IMPORTED_TARGET tlm)
if(NOT TARGET SystemC::SystemC)
  add_library(SystemC::SystemC INTERFACE IMPORTED)
  target_link_libraries(SystemC::SystemC INTERFACE PkgConfig::SYSTEMC PkgConfig::TLM)
  target_compile_definitions(SystemC::SystemC INTERFACE SC_CPLUSPLUS=201703L SC_INCLUDE_DYNAMIC_PROCESSES)
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(SystemC REQUIRED_VARS SYSTEMC_FOUND VERSION_VAR SYSTEMC_VERSION)
