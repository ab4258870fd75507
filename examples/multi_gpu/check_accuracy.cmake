# Runs multi_gpu on two Vulkan devices and fails unless it ends with a test accuracy of at
# least MIN_ACCURACY. Arguments: EXE, DATA, MIN_ACCURACY.
execute_process(
  COMMAND ${EXE} --backend vulkan --devices 2 --data ${DATA}
  OUTPUT_VARIABLE output ERROR_VARIABLE errors RESULT_VARIABLE status)
message("${output}${errors}")
if(NOT status EQUAL 0)
  message(FATAL_ERROR "multi_gpu exited with ${status}")
endif()
if(NOT output MATCHES "test accuracy: ([0-9.]+)\n$")
  message(FATAL_ERROR "multi_gpu printed no final test accuracy")
endif()
if(CMAKE_MATCH_1 LESS MIN_ACCURACY)
  message(FATAL_ERROR "test accuracy ${CMAKE_MATCH_1} is below ${MIN_ACCURACY}")
endif()
