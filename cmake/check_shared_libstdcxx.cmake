# Fails the build when the module MODULE does not load the shared libstdc++
# (CMakeLists.txt says why). A module linked against it names
# "libstdc++.so.6" among the libraries it needs.
file(STRINGS "${MODULE}" needed REGEX "^libstdc\\+\\+\\.so" LIMIT_COUNT 1)
if(NOT needed)
  message(FATAL_ERROR
    "${MODULE} has its own static copy of libstdc++, which crashes next to "
    "torch's shared one. Build with a compiler that links libstdc++ "
    "dynamically (for example CXX=/usr/bin/g++).")
endif()
