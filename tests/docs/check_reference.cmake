# Runs `CARDSIM config --reference` into OUT and fails unless it succeeds (every key documented) and
# OUT equals the committed WANT (docs/config.md) byte for byte.
execute_process(COMMAND ${CARDSIM} config --reference OUTPUT_FILE ${OUT} ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cardsim config --reference failed (${rc}): ${err}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${OUT} ${WANT} RESULT_VARIABLE diff)
if(NOT diff EQUAL 0)
  message(FATAL_ERROR "${WANT} is stale: it differs from what `cardsim config --reference` prints (${OUT}); "
                      "regenerate it: build/cardsim config --reference > docs/config.md")
endif()
