# Included by the CMake consumer projects: builds consumer.cpp against rope::rope with strict
# warnings (no -march flags: the library must work with whatever flags the consumer uses) and
# checks that the target imposes no compile flags or definitions of its own.
set(CMAKE_CXX_EXTENSIONS OFF)

function(rope_check_target)
  if(NOT TARGET rope::rope)
    message(FATAL_ERROR "rope::rope is not a target")
  endif()
  foreach(prop INTERFACE_COMPILE_OPTIONS INTERFACE_COMPILE_DEFINITIONS)
    get_target_property(value rope::rope ${prop})
    if(value)
      message(FATAL_ERROR "rope::rope sets ${prop} = '${value}'; the library must add no flags")
    endif()
  endforeach()
endfunction()

function(rope_consumer name)
  rope_check_target()
  add_executable(${name} ${CMAKE_CURRENT_LIST_DIR}/../consumer.cpp)
  target_link_libraries(${name} PRIVATE rope::rope)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(${name} PRIVATE -Wall -Wextra -Wpedantic -Wconversion -Wshadow -Werror)
  endif()
endfunction()
