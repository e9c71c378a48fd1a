# cmake -DCOMMAND=... -DARGS="a;b" -DPATTERN=/tmp/x-*.y -P fuzz/leaves_nothing.cmake: runs COMMAND
# with ARGS and fails when it fails or when a file matching PATTERN that was not there before it is
# left behind (a fuzz target's temporary file must be removed when its process ends).
file(GLOB before ${PATTERN})
execute_process(COMMAND ${COMMAND} ${ARGS} RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${COMMAND} failed: ${status}")
endif()
file(GLOB after ${PATTERN})
if(before)
  list(REMOVE_ITEM after ${before})
endif()
if(after)
  message(FATAL_ERROR "${COMMAND} left behind: ${after}")
endif()
