# Runs the table generator GEN into OUT and fails unless OUT equals the committed WANT.
execute_process(COMMAND ${GEN} ${OUT} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${GEN} failed (${rc})")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${OUT} ${WANT} RESULT_VARIABLE diff)
if(NOT diff EQUAL 0)
  message(FATAL_ERROR "${WANT} differs from what ${GEN} writes: regenerate it (rtl/gen/gelu_table.cpp)")
endif()
