# Finds the libraries stoke's core needs and says what was found.
find_package(Threads REQUIRED)
find_package(Eigen3 3.4 REQUIRED NO_MODULE)
find_package(ZLIB REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
message(STATUS "stoke: Eigen ${Eigen3_VERSION} (for stoke::learner and <stoke/cpu/eigen.hpp>)")
