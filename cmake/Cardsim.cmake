# Helpers shared by every folder's CMakeLists.txt.

# cardsim_unity(TARGET): TARGET compiles as unity translation units when CARDSIM_UNITY is on. Every
# source then shares its batch's scope: a name in an anonymous namespace must be unique in its folder.
function(cardsim_unity target)
  if(CARDSIM_UNITY)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 16)
  endif()
endfunction()

# Project warnings: zero with -Wall -Wextra, enforced by -Werror on project code only.
function(cardsim_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Werror)
endfunction()

# cardsim_library(NAME DEPS...): the library of one folder, every .cpp under it (recursively),
# but those matching the regex CARDSIM_EXCLUDE_<NAME> when it is set (a subfolder with its own library).
function(cardsim_library name)
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  if(DEFINED CARDSIM_EXCLUDE_${name})
    list(FILTER sources EXCLUDE REGEX "${CARDSIM_EXCLUDE_${name}}")
  endif()
  if(sources)
    add_library(cardsim_${name} STATIC ${sources})
    target_include_directories(cardsim_${name} PUBLIC ${PROJECT_SOURCE_DIR})
    target_link_libraries(cardsim_${name} PUBLIC ${ARGN})
    cardsim_warnings(cardsim_${name})
    cardsim_unity(cardsim_${name})
  else() # a folder whose first sources have not landed yet
    add_library(cardsim_${name} INTERFACE)
    target_include_directories(cardsim_${name} INTERFACE ${PROJECT_SOURCE_DIR})
    target_link_libraries(cardsim_${name} INTERFACE ${ARGN})
  endif()
endfunction()

# cardsim_embed(TARGET SYMBOL FILE): compiles FILE's text into TARGET as
# `extern const std::string_view SYMBOL` (namespace cardsim::embedded), regenerated when FILE changes.
function(cardsim_embed target symbol file)
  set(out ${CMAKE_CURRENT_BINARY_DIR}/embedded_${symbol}.cpp)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DIN=${file} -DOUT=${out} -DSYMBOL=${symbol}
            -P ${PROJECT_SOURCE_DIR}/cmake/Embed.cmake
    DEPENDS ${file} ${PROJECT_SOURCE_DIR}/cmake/Embed.cmake
    COMMENT "Embedding ${file}")
  target_sources(${target} PRIVATE ${out})
endfunction()
